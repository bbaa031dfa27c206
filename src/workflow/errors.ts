/**
 * Typed errors of the stage side of the workflow layer (stage admission,
 * the closed-stage router, the engine services). Where the contract gives a
 * text, `message` is that text exactly (C-ORD-4, C-ORD-5, C-ORD-8); the
 * correlated `replyError` an asker receives is built from these messages.
 *
 * @since 0.1.0
 */
import { Data } from "effect"

/**
 * The contract's text for a stage that retired while an entry waited on the
 * foreground owner (C-ORD-4).
 *
 * @category errors
 * @since 0.1.0
 */
export const STAGE_RETIRED_TEXT = "Workflow stage retired during foreground-owner admission"

/**
 * The stage retired (its generation ended, or the foreground handoff was
 * `abandoned`) while an entry waited to be admitted (C-ORD-4). A non-ask
 * that fails this way is released for retry; an ask gets a correlated
 * `replyError` (C-ORD-5).
 *
 * @category errors
 * @since 0.1.0
 */
export class StageRetired extends Data.TaggedError("StageRetired")<{}> {
  override get message(): string {
    return STAGE_RETIRED_TEXT
  }
}

/**
 * The stage session refused an entry (its `insert` port failed): the entry
 * is not in the stage; a non-ask is released for retry (C-ORD-5).
 *
 * @category errors
 * @since 0.1.0
 */
export class StageInsertFailed extends Data.TaggedError("StageInsertFailed")<{
  /** What the stage session said, as text. */
  readonly reason: string
}> {
  override get message(): string {
    return `Workflow stage could not take the message: ${this.reason}`
  }
}

/**
 * Why a running stage could not admit an entry.
 *
 * @category errors
 * @since 0.1.0
 */
export type StageAdmissionError = StageRetired | StageInsertFailed

/**
 * The `replyError` text a blocking ask gets when a running stage could not
 * admit it (C-ORD-5).
 *
 * @category errors
 * @since 0.1.0
 */
export const runningStageAskError = (reason: string): string =>
  `Running workflow stage could not admit intercom ask: ${reason}`

/**
 * The `replyError` text a late ask gets when its completed stage cannot run
 * the post-mortem turn (C-ORD-8).
 *
 * @category errors
 * @since 0.1.0
 */
export const completedStageAskError = (reason: string): string =>
  `Completed workflow stage could not process intercom ask: ${reason}`

/**
 * A completed stage cannot run a post-mortem turn: it was deleted, has no
 * valid retained conversation, or cannot be reopened (C-ORD-8). An engine's
 * `RetainedConversation` fails with it; `reason` ends up in the asker's
 * correlated `replyError`.
 *
 * @category errors
 * @since 0.1.0
 */
export class PostMortemUnavailable extends Data.TaggedError("PostMortemUnavailable")<{
  readonly reason: string
}> {
  override get message(): string {
    return completedStageAskError(this.reason)
  }
}

/**
 * One attempt at a closed stage's port (its parent chat, or an asker's
 * `replyError`) did not return within the router's `attemptTimeout`: it
 * counts as a failed attempt, so the closed-stage router's retry (and, once
 * the run has ended, its give-up) applies, and the stage session's hand-off
 * queue is not held by it.
 *
 * @category errors
 * @since 0.1.0
 */
export class ClosedStageAttemptTimedOut extends Data.TaggedError("ClosedStageAttemptTimedOut")<{
  /** Which port: `parent chat` or `replyError`. */
  readonly port: string
  readonly timeoutMs: number
}> {
  override get message(): string {
    return `the ${this.port} did not answer within ${this.timeoutMs} ms`
  }
}

/**
 * The reason a late entry for a forgotten stage is given up with, and the
 * reason its asker's `replyError` gives (C-ORD-8).
 *
 * @category errors
 * @since 0.1.0
 */
export const FORGOTTEN_STAGE_REASON = "the stage's run ended too long ago for the stage to be remembered"

/**
 * An entry for a stage whose run ended so long ago that the service no
 * longer keeps the stage (the newest 1000 ended stages are kept): nothing
 * can handle it, and retrying cannot change that. `stageHostDeliver` gives
 * the entry up with a warning (an ask's asker gets the correlated
 * `replyError` when the host was given that port) instead of failing for a
 * retry.
 *
 * @category errors
 * @since 0.1.0
 */
export class StageForgotten extends Data.TaggedError("StageForgotten")<{
  readonly stageId: string
}> {
  override get message(): string {
    return `Workflow stage '${this.stageId}' cannot take the message: ${FORGOTTEN_STAGE_REASON}`
  }
}

/**
 * No stage (or run) with this id is known to the service.
 *
 * @category errors
 * @since 0.1.0
 */
export class UnknownWorkflowItem extends Data.TaggedError("UnknownWorkflowItem")<{
  readonly kind: "run" | "stage"
  readonly id: string
}> {
  override get message(): string {
    return `Unknown workflow ${this.kind} '${this.id}': open it first (Runs.start / Stages.open)`
  }
}

/**
 * A run or stage id that is already in use, or blank.
 *
 * @category errors
 * @since 0.1.0
 */
export class InvalidWorkflowId extends Data.TaggedError("InvalidWorkflowId")<{
  readonly kind: "run" | "stage"
  readonly id: string
  readonly reason: string
}> {
  override get message(): string {
    return `Invalid workflow ${this.kind} id '${this.id}': ${this.reason}`
  }
}

/**
 * The text of an unknown failure from an engine port: a string as is, an
 * error's `message`, else `String(failure)`.
 *
 * @category errors
 * @since 0.1.0
 */
export const describeFailure = (failure: unknown): string => {
  if (typeof failure === "string") return failure
  if (failure instanceof Error && failure.message !== "") return failure.message
  if (typeof failure === "object" && failure !== null && "message" in failure && typeof failure.message === "string") {
    return failure.message
  }
  return String(failure)
}
