/**
 * One connection's topic requests (`topics-v1`): each waits for the broker's
 * answer by `requestId`, and every one still waiting fails with
 * `ConnectionLost` when the connection closes — a publish never vanishes
 * silently. Owned by one `ClientConnection`; touched only synchronously.
 */
import { Deferred, Effect, Exit } from "effect"
import { randomUUID } from "node:crypto"
import type {
  TopicFailedFrame,
  TopicPublishedFrame,
  TopicStateFrame,
  TopicSubscribedFrame,
  TopicUnsubscribedFrame
} from "../protocol/topics.ts"
import { ConnectionLost, type RequestTimeout, TopicRefused } from "./errors.ts"
import { awaitAnswer } from "./requests.ts"

/** A broker answer to a topic request. */
export type TopicAnswer = TopicPublishedFrame | TopicSubscribedFrame | TopicUnsubscribedFrame | TopicStateFrame

/** A topic request as it goes on the wire, without its `requestId`. */
export type TopicRequestFrame =
  | { readonly type: "topic_publish"; readonly record: object }
  | { readonly type: "topic_subscribe"; readonly topic: string; readonly awaitRelease?: boolean }
  | { readonly type: "topic_unsubscribe"; readonly topic: string }
  | { readonly type: "topic_query"; readonly topic?: string }

/** Why a topic request on a connection failed. */
export type TopicRequestError = TopicRefused | RequestTimeout | ConnectionLost

/** Pending topic requests of one connection; see the module header. */
export class TopicRequests {
  private readonly waiting = new Map<string, Deferred.Deferred<TopicAnswer, TopicRefused | ConnectionLost>>()

  /** Writes the request with a fresh `requestId` and waits for its answer. */
  request(
    frame: TopicRequestFrame,
    write: (text: string) => Effect.Effect<void, ConnectionLost>,
    timeoutMs: number
  ): Effect.Effect<TopicAnswer, TopicRequestError> {
    return Effect.suspend(() => {
      const requestId = randomUUID()
      const answer = Deferred.makeUnsafe<TopicAnswer, TopicRefused | ConnectionLost>()
      this.waiting.set(requestId, answer)
      return write(JSON.stringify({ ...frame, requestId })).pipe(
        Effect.andThen(awaitAnswer(answer, timeoutMs, "topic", () => this.waiting.delete(requestId))),
        Effect.onExit(() => Effect.sync(() => this.waiting.delete(requestId)))
      )
    })
  }

  /** An answer arrived: settles the request waiting for it (late or unknown answers are dropped). */
  settle(frame: TopicAnswer | TopicFailedFrame): void {
    const answer = this.waiting.get(frame.requestId)
    if (answer === undefined) return
    this.waiting.delete(frame.requestId)
    Deferred.doneUnsafe(
      answer,
      frame.type === "topic_failed" ? Exit.fail(new TopicRefused({ reason: frame.reason })) : Exit.succeed(frame)
    )
  }

  /** The connection closed: every request still waiting fails. */
  failAll(): void {
    for (const answer of this.waiting.values()) Deferred.doneUnsafe(answer, Exit.fail(new ConnectionLost({ operation: "topic" })))
    this.waiting.clear()
  }
}
