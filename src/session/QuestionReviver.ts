/**
 * `QuestionReviver`: the port through which an answer to a question whose
 * child has exited reaches the launcher (C-DQ-10, C-DQ-12). The broker claims
 * the revival `answer-<questionId>` once; only the caller whose answer
 * claimed it calls `revive`, so repeated identical answers never launch
 * twice. The host that can launch children supplies the service; without
 * one the answer's result prints the exact call to recover by hand.
 */
import { Context, Data, type Effect } from "effect"
import { causeText } from "../protocol/causeText.ts"

/**
 * What a launcher needs to revive a child with its saved answer.
 *
 * @category models
 * @since 0.1.0
 */
export interface Revival {
  /** `answer-<questionId>`: the new run's id. */
  readonly runId: string
  readonly questionId: string
  readonly childId: string
  readonly childName: string
  /** The saved answer the revived child resumes with. */
  readonly answer: string
}

/**
 * The launcher could not start the revival; the claim stays, and the
 * receipt's recovery call starts it by hand (never retried silently, C-DQ-12).
 *
 * @category errors
 * @since 0.1.0
 */
export class RevivalFailed extends Data.TaggedError("RevivalFailed")<{ readonly runId: string; readonly detail: string }> {
  override get message(): string {
    return `Revival ${this.runId} did not start: ${causeText(this.detail)}`
  }
}

/**
 * The revival port, supplied by a host that launches delegated children.
 *
 * @category services
 * @since 0.1.0
 */
export class QuestionReviver extends Context.Service<QuestionReviver, {
  /** Starts the child again with its saved session and the answer, as run `revival.runId`. */
  readonly revive: (revival: Revival) => Effect.Effect<void, RevivalFailed>
}>()("effect-intercom/session/QuestionReviver") {}
