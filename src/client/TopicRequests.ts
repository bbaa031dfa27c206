/**
 * One connection's topic requests (`topics-v1`): each waits for the broker's
 * answer by `requestId`, and every one still waiting fails with
 * `ConnectionLost` when the connection closes — a publish never vanishes
 * silently. Owned by one `ClientConnection`; touched only synchronously.
 * The waiting and settling are PendingRequests.ts's; this module gives
 * the frames.
 */
import type {
  TopicFailedFrame,
  TopicPublishedFrame,
  TopicStateFrame,
  TopicSubscribedFrame,
  TopicUnsubscribedFrame
} from "../protocol/topics.ts"
import { type ConnectionLost, type RequestTimeout, TopicRefused } from "./errors.ts"
import { PendingRequests } from "./PendingRequests.ts"

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

/**
 * Pending topic requests of one connection (PendingRequests.ts): a refusal
 * (`topic_failed`) fails the request with `TopicRefused`.
 *
 * @category models
 * @since 0.1.0
 */
export class TopicRequests extends PendingRequests<TopicRequestFrame, TopicAnswer, TopicFailedFrame, TopicRefused> {
  constructor() {
    super({
      operation: "topic",
      isRefusal: (frame): frame is TopicFailedFrame => frame.type === "topic_failed",
      refused: (frame) => new TopicRefused({ reason: frame.reason })
    })
  }
}
