/**
 * One connection's result archive requests (`results-v1`): each waits for
 * the broker's answer by `requestId`, and every one still waiting fails with
 * `ConnectionLost` when the connection closes — a store never vanishes
 * silently (it may or may not have been stored then; the error says so).
 * Owned by one `ClientConnection`; touched only synchronously.
 */
import { Deferred, Effect, Exit } from "effect"
import { randomUUID } from "node:crypto"
import type { ResultFailedFrame, ResultListedFrame, ResultPageFrame, ResultStoredFrame } from "../protocol/results.ts"
import { ConnectionLost, type RequestTimeout, ResultRefused } from "./errors.ts"
import { awaitAnswer } from "./requests.ts"

/** A broker answer to a result request. */
export type ResultAnswer = ResultStoredFrame | ResultListedFrame | ResultPageFrame

/** A result request as it goes on the wire, without its `requestId`. */
export type ResultRequestFrame =
  | {
    readonly type: "result_store"
    readonly body: string
    readonly originalLength?: number
    readonly title?: string
    readonly run?: string
    readonly child?: string
  }
  | { readonly type: "result_list"; readonly offset?: number; readonly limit?: number }
  | { readonly type: "result_read"; readonly ref: string; readonly offset?: number; readonly limit?: number }

/** Why a result request on a connection failed. */
export type ResultRequestError = ResultRefused | RequestTimeout | ConnectionLost

/** Pending result requests of one connection; see the module header. */
export class ResultRequests {
  private readonly waiting = new Map<string, Deferred.Deferred<ResultAnswer, ResultRefused | ConnectionLost>>()

  /** Writes the request with a fresh `requestId` and waits for its answer. */
  request(
    frame: ResultRequestFrame,
    write: (text: string) => Effect.Effect<void, ConnectionLost>,
    timeoutMs: number
  ): Effect.Effect<ResultAnswer, ResultRequestError> {
    return Effect.suspend(() => {
      const requestId = randomUUID()
      const answer = Deferred.makeUnsafe<ResultAnswer, ResultRefused | ConnectionLost>()
      this.waiting.set(requestId, answer)
      return write(JSON.stringify({ ...frame, requestId })).pipe(
        Effect.andThen(awaitAnswer(answer, timeoutMs, "result", () => this.waiting.delete(requestId))),
        Effect.onExit(() => Effect.sync(() => this.waiting.delete(requestId)))
      )
    })
  }

  /** An answer arrived: settles the request waiting for it (late or unknown answers are dropped). */
  settle(frame: ResultAnswer | ResultFailedFrame): void {
    const answer = this.waiting.get(frame.requestId)
    if (answer === undefined) return
    this.waiting.delete(frame.requestId)
    Deferred.doneUnsafe(
      answer,
      frame.type === "result_failed" ? Exit.fail(new ResultRefused({ reason: frame.reason })) : Exit.succeed(frame)
    )
  }

  /** The connection closed: every request still waiting fails. */
  failAll(): void {
    for (const answer of this.waiting.values()) Deferred.doneUnsafe(answer, Exit.fail(new ConnectionLost({ operation: "result" })))
    this.waiting.clear()
  }
}
