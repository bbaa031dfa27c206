/**
 * One connection's question requests (`questions-v1`): each waits for the
 * broker's `question_result` or `question_failed` by `requestId`, and every
 * one still waiting fails with `ConnectionLost` when the connection closes.
 * Owned by one `ClientConnection`; touched only synchronously.
 */
import { Deferred, Effect, Exit } from "effect"
import { randomUUID } from "node:crypto"
import type { QuestionFailedFrame, QuestionResultFrame } from "../protocol/questions.ts"
import { ConnectionLost, QuestionRefused, type RequestTimeout } from "./errors.ts"
import { awaitAnswer } from "./requests.ts"

/**
 * A question request as it goes on the wire, without its `requestId`.
 *
 * @category models
 * @since 0.1.0
 */
export type QuestionRequestFrame =
  | { readonly type: "question_ask"; readonly questionId: string; readonly reason: string; readonly text: string }
  | { readonly type: "question_answer"; readonly questionId: string; readonly text: string; readonly owner?: string }
  | { readonly type: "question_stop"; readonly questionId: string; readonly owner?: string }
  | { readonly type: "question_get"; readonly questionId: string; readonly owner?: string }
  | { readonly type: "question_list"; readonly offset?: number; readonly limit?: number; readonly owner?: string }

/**
 * Why a question request on a connection failed.
 *
 * @category errors
 * @since 0.1.0
 */
export type QuestionRequestError = QuestionRefused | RequestTimeout | ConnectionLost

/** Pending question requests of one connection; see the module header. */
export class QuestionRequests {
  private readonly waiting = new Map<string, Deferred.Deferred<QuestionResultFrame, QuestionRefused | ConnectionLost>>()

  /** Writes the request with a fresh `requestId` and waits for its answer. */
  request(
    frame: QuestionRequestFrame,
    write: (text: string) => Effect.Effect<void, ConnectionLost>,
    timeoutMs: number
  ): Effect.Effect<QuestionResultFrame, QuestionRequestError> {
    return Effect.suspend(() => {
      const requestId = randomUUID()
      const answer = Deferred.makeUnsafe<QuestionResultFrame, QuestionRefused | ConnectionLost>()
      this.waiting.set(requestId, answer)
      return write(JSON.stringify({ ...frame, requestId })).pipe(
        Effect.andThen(awaitAnswer(answer, timeoutMs, "question", () => this.waiting.delete(requestId))),
        Effect.onExit(() => Effect.sync(() => this.waiting.delete(requestId)))
      )
    })
  }

  /** An answer arrived: settles the request waiting for it (late or unknown answers are dropped). */
  settle(frame: QuestionResultFrame | QuestionFailedFrame): void {
    const answer = this.waiting.get(frame.requestId)
    if (answer === undefined) return
    this.waiting.delete(frame.requestId)
    Deferred.doneUnsafe(
      answer,
      frame.type === "question_failed"
        ? Exit.fail(new QuestionRefused({ error: frame.error, reason: frame.reason }))
        : Exit.succeed(frame)
    )
  }

  /** The connection closed: every request still waiting fails. */
  failAll(): void {
    for (const answer of this.waiting.values()) Deferred.doneUnsafe(answer, Exit.fail(new ConnectionLost({ operation: "question" })))
    this.waiting.clear()
  }
}
