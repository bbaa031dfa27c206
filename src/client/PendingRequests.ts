/**
 * One connection's requests of one extension that are answered by
 * `requestId` (topics, results, questions): each waits for the broker's
 * answer or refusal, and every one still waiting fails with `ConnectionLost`
 * when the connection closes — a request never vanishes silently (it may or
 * may not have taken effect then; the error says so). Owned by one
 * `ClientConnection`; touched only synchronously.
 *
 * The three extensions differ only in their frames, their refusal's error and
 * the operation named in a timeout or a lost connection, which a subclass
 * gives (TopicRequests.ts, ResultRequests.ts, QuestionRequests.ts).
 */
import { Deferred, Effect, Exit } from "effect"
import { randomUUID } from "node:crypto"
import { ConnectionLost, type RequestTimeout } from "./errors.ts"
import { awaitAnswer } from "./requests.ts"

/**
 * What sets one extension's requests apart: the operation's name and how a
 * refusal frame becomes the request's error.
 *
 * @category models
 * @since 0.1.0
 */
export interface PendingRequestsOptions<Answer, Failed, Refused> {
  /** Named in `RequestTimeout` and `ConnectionLost`. */
  readonly operation: "topic" | "result" | "question"
  /** Whether a frame is the broker's refusal rather than its answer. */
  readonly isRefusal: (frame: Answer | Failed) => frame is Failed
  /** The error a refused request fails with. */
  readonly refused: (frame: Failed) => Refused
}

/**
 * Pending requests of one connection, by `requestId`; see the module header.
 *
 * @category models
 * @since 0.1.0
 */
export class PendingRequests<Frame extends object, Answer extends { readonly requestId: string }, Failed extends { readonly requestId: string }, Refused> {
  private readonly waiting = new Map<string, Deferred.Deferred<Answer, Refused | ConnectionLost>>()

  private readonly options: PendingRequestsOptions<Answer, Failed, Refused>

  constructor(options: PendingRequestsOptions<Answer, Failed, Refused>) {
    this.options = options
  }

  /** Writes the request with a fresh `requestId` and waits for its answer, at most `timeoutMs`. */
  request(
    frame: Frame,
    write: (text: string) => Effect.Effect<void, ConnectionLost>,
    timeoutMs: number
  ): Effect.Effect<Answer, Refused | RequestTimeout | ConnectionLost> {
    return Effect.suspend(() => {
      const requestId = randomUUID()
      const answer = Deferred.makeUnsafe<Answer, Refused | ConnectionLost>()
      this.waiting.set(requestId, answer)
      return write(JSON.stringify({ ...frame, requestId })).pipe(
        Effect.andThen(awaitAnswer(answer, timeoutMs, this.options.operation, () => this.waiting.delete(requestId))),
        Effect.onExit(() => Effect.sync(() => this.waiting.delete(requestId)))
      )
    })
  }

  /** An answer or refusal arrived: settles the request waiting for it (late or unknown ones are dropped). */
  settle(frame: Answer | Failed): void {
    const answer = this.waiting.get(frame.requestId)
    if (answer === undefined) return
    this.waiting.delete(frame.requestId)
    Deferred.doneUnsafe(
      answer,
      this.options.isRefusal(frame) ? Exit.fail(this.options.refused(frame)) : Exit.succeed(frame)
    )
  }

  /** The connection closed: every request still waiting fails with `ConnectionLost`. */
  failAll(): void {
    const lost = Exit.fail(new ConnectionLost({ operation: this.options.operation }))
    for (const answer of this.waiting.values()) Deferred.doneUnsafe(answer, lost)
    this.waiting.clear()
  }
}
