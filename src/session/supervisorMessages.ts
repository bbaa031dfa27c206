/**
 * The text a supervisor receives from `contact_supervisor` (C-SUP-5): a
 * heading per reason, the child's run metadata, a blank line, then the body —
 * the child's message, or for an interview its rendering (C-INT-4). The
 * wording is Atomic's `formatChildOrchestratorMessage`.
 */
import type { ContactSupervisorReason, ContactSupervisorRequest } from "./contactSupervisor.ts"
import { renderInterview } from "./interview.ts"
import type { ChildIdentity } from "./supervisorBridge.ts"

/**
 * The first line of the supervisor's message, per reason (C-SUP-5).
 *
 * @category supervisor
 * @since 0.1.0
 */
export const SUPERVISOR_MESSAGE_HEADINGS: { readonly [Reason in ContactSupervisorReason]: string } = {
  need_decision: "Subagent needs a supervisor decision.",
  interview_request: "Subagent requests a structured supervisor interview.",
  progress_update: "Subagent progress update."
}

/**
 * Who is writing: the child's identity and, when it has one, its own intercom name.
 *
 * @category models
 * @since 0.1.0
 */
export interface SupervisorMessageSender extends ChildIdentity {
  /** Shown as `Child intercom target: <name>` when set. */
  readonly sessionName?: string | undefined
}

/**
 * `<heading>`, `Run: <runId>`, `Agent: <agent>`, `Child index: <index>`
 * (0-based), optionally `Child intercom target: <name>`, a blank line, then
 * `body` as given (C-SUP-5).
 *
 * @example
 * ```ts
 * import { formatSupervisorMessage } from "effect-intercom/session"
 *
 * formatSupervisorMessage("need_decision", { runId: "78f659a3", agent: "worker", index: 0 }, "Which API should I use?")
 * // "Subagent needs a supervisor decision.\nRun: 78f659a3\nAgent: worker\nChild index: 0\n\nWhich API should I use?"
 * ```
 *
 * @category supervisor
 * @since 0.1.0
 */
export const formatSupervisorMessage = (
  reason: ContactSupervisorReason,
  sender: SupervisorMessageSender,
  body: string
): string =>
  [
    SUPERVISOR_MESSAGE_HEADINGS[reason],
    `Run: ${sender.runId}`,
    `Agent: ${sender.agent}`,
    `Child index: ${sender.index}`,
    ...(sender.sessionName === undefined ? [] : [`Child intercom target: ${sender.sessionName}`]),
    "",
    body
  ].join("\n")

/**
 * The supervisor's message for a validated call: the `message` as the body
 * of a decision or an update, or the rendered interview with the child's
 * note (C-SUP-5, C-INT-4).
 *
 * @category supervisor
 * @since 0.1.0
 */
export const supervisorMessage = (request: ContactSupervisorRequest, sender: SupervisorMessageSender): string =>
  formatSupervisorMessage(
    request.reason,
    sender,
    request.reason === "interview_request" ? renderInterview(request.interview, request.note) : request.message
  )
