/**
 * The parameters of `contact_supervisor` (C-SUP-2): which reasons exist, what
 * each one needs, and the texts of the refusals. A bad call is a returned
 * typed error whose `message` is the tool result's text; nothing is sent. The
 * interview itself is checked by `interview.ts`, whose `InvalidInterview`
 * (`Invalid interview request: <detail>`) is the third refusal.
 */
import { Data, Result } from "effect"
import { type Interview, type InvalidInterview, validateInterview } from "./interview.ts"

/**
 * The reasons a child may contact its supervisor (C-SUP-2): two blocking, one
 * fire-and-forget (C-SUP-3).
 *
 * @category supervisor
 * @since 0.1.0
 */
export const CONTACT_SUPERVISOR_REASONS = ["need_decision", "interview_request", "progress_update"] as const

/**
 * One of `CONTACT_SUPERVISOR_REASONS`.
 *
 * @category models
 * @since 0.1.0
 */
export type ContactSupervisorReason = (typeof CONTACT_SUPERVISOR_REASONS)[number]

/**
 * The tool's raw parameters, as a host passes them on.
 *
 * @category models
 * @since 0.1.0
 */
export interface ContactSupervisorParams {
  readonly reason?: unknown
  readonly message?: unknown
  readonly interview?: unknown
}

/**
 * A valid `contact_supervisor` call. `message` is kept as written; the
 * interview note is the optional `message` of an `interview_request`.
 *
 * @category models
 * @since 0.1.0
 */
export type ContactSupervisorRequest =
  | { readonly reason: "need_decision" | "progress_update"; readonly message: string }
  | { readonly reason: "interview_request"; readonly interview: Interview; readonly note?: string | undefined }

/**
 * `Invalid reason. Use 'need_decision', 'interview_request', or 'progress_update'.` (C-SUP-2).
 *
 * @category errors
 * @since 0.1.0
 */
export class InvalidContactReason extends Data.TaggedError("InvalidContactReason")<{
  /** The `reason` parameter as given. */
  readonly given: unknown
}> {
  override get message(): string {
    return "Invalid reason. Use 'need_decision', 'interview_request', or 'progress_update'."
  }
}

/**
 * `Missing 'message' parameter for reason '<reason>'.`: `need_decision` and
 * `progress_update` need a message that is not blank (C-SUP-2; the wording
 * is Atomic's `contact-supervisor-tool.ts`).
 *
 * @category errors
 * @since 0.1.0
 */
export class MissingContactMessage extends Data.TaggedError("MissingContactMessage")<{
  readonly contactReason: "need_decision" | "progress_update"
}> {
  override get message(): string {
    return `Missing 'message' parameter for reason '${this.contactReason}'.`
  }
}

/**
 * Why a `contact_supervisor` call is refused before anything is sent.
 *
 * @category errors
 * @since 0.1.0
 */
export type ContactSupervisorError = InvalidContactReason | MissingContactMessage | InvalidInterview

const isContactReason = (value: unknown): value is ContactSupervisorReason =>
  CONTACT_SUPERVISOR_REASONS.some((reason) => reason === value)

/**
 * Checks a `contact_supervisor` call (C-SUP-2): a known `reason`; a
 * non-blank string `message` for `need_decision` and `progress_update`; a
 * valid `interview` (C-INT-1…3) for `interview_request`, whose string
 * `message`, if any, is the child's note (a non-string one is ignored, as in
 * Atomic).
 *
 * @example
 * ```ts
 * import { validateContactSupervisor } from "effect-intercom/session"
 *
 * validateContactSupervisor({ reason: "progress_update", message: "Found the bug." })
 * // Success: { reason: "progress_update", message: "Found the bug." }
 * validateContactSupervisor({ reason: "need_decision" })
 * // Failure: Missing 'message' parameter for reason 'need_decision'.
 * ```
 *
 * @category supervisor
 * @since 0.1.0
 */
export const validateContactSupervisor = (
  params: ContactSupervisorParams
): Result.Result<ContactSupervisorRequest, ContactSupervisorError> => {
  const { reason, message } = params
  if (!isContactReason(reason)) return Result.fail(new InvalidContactReason({ given: reason }))
  if (reason === "interview_request") {
    const interview = validateInterview(params.interview)
    if (Result.isFailure(interview)) return Result.fail(interview.failure)
    return Result.succeed({ reason, interview: interview.success, note: typeof message === "string" ? message : undefined })
  }
  if (typeof message !== "string" || message.trim() === "") {
    return Result.fail(new MissingContactMessage({ contactReason: reason }))
  }
  return Result.succeed({ reason, message })
}
