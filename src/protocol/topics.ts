/**
 * Topics (extension `topics-v1`, C-TOP-1…5): the wire shapes of a topic
 * record and of the topic frames, and the validation every side shares — the
 * client and the session check a publication before anything is sent, the
 * broker checks it again and answers `topic_failed` (never a dropped
 * connection) when it is wrong.
 *
 * A record is self-contained latest state of one publisher on one topic:
 * `{topic, text, event, resource?, ownership?, revision, updatedAt}`. The
 * publisher numbers its revisions: strictly increasing per topic, starting at
 * 1, with gaps where a publication was refused after a later one was
 * numbered or may have been saved unconfirmed (docs/protocol.md); the broker
 * and every receiver ignore a revision lower than the one they hold.
 */
import { Schema } from "effect"
import * as Limits from "./limits.ts"

/** The longest topic label, in UTF-16 units. */
export const MAX_TOPIC_LENGTH = 256
/** The longest publication text, in UTF-16 units: records are kept, so they are small. */
export const MAX_TOPIC_TEXT_LENGTH = 8192
/** The longest `resource` label, in UTF-16 units. */
export const MAX_RESOURCE_LENGTH = 1024

/** What a publication says happened (C-TOP-3). */
export const TopicEvent = Schema.Literals(["update", "blocker", "decision", "release"])
/** A topic event. */
export type TopicEvent = typeof TopicEvent.Type

/** Advisory ownership of `resource` (C-TOP-12: never a lock). */
export const TopicOwnership = Schema.Literals(["held", "released"])
/** A topic ownership value. */
export type TopicOwnership = typeof TopicOwnership.Type

/** One publisher's current state on one topic (C-TOP-3), as it travels. */
export const TopicRecord = Schema.Struct({
  topic: Schema.String.check(Schema.isMaxLength(MAX_TOPIC_LENGTH)),
  text: Schema.String.check(Schema.isMaxLength(MAX_TOPIC_TEXT_LENGTH)),
  event: TopicEvent,
  resource: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(MAX_RESOURCE_LENGTH))),
  ownership: Schema.optionalKey(TopicOwnership),
  revision: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)),
  updatedAt: Schema.Finite
})
/** A topic record. */
export type TopicRecord = typeof TopicRecord.Type

/** Who published a record: the session id, and its name when it had one. */
export const TopicPublisher = Schema.Struct({ id: Schema.String, name: Schema.optionalKey(Schema.String) })
/** A topic publisher. */
export type TopicPublisher = typeof TopicPublisher.Type

/**
 * A record with its publisher, as the broker hands it out. `available` is
 * false once the publisher disconnected (C-TOP-12): the record stays, and
 * its ownership is not released by that.
 */
export const TopicEntry = Schema.Struct({ from: TopicPublisher, record: TopicRecord, available: Schema.Boolean })
/** A topic entry. */
export type TopicEntry = typeof TopicEntry.Type

/** One subscription, as `topic_state` lists them. */
export const TopicSubscription = Schema.Struct({ topic: Schema.String, awaitRelease: Schema.Boolean })
/** A subscription. */
export type TopicSubscription = typeof TopicSubscription.Type

const RequestId = Schema.String.check(Schema.isMaxLength(Limits.MAX_ID_LENGTH))
const Topic = Schema.String.check(Schema.isMaxLength(MAX_TOPIC_LENGTH))

// --- client → broker --------------------------------------------------------

/** `topic_publish`: save `record` as this session's current state on its topic and fan it out. */
export const TopicPublishFrame = Schema.Struct({ type: Schema.tag("topic_publish"), requestId: RequestId, record: TopicRecord })
/** A `topic_publish` frame. */
export type TopicPublishFrame = typeof TopicPublishFrame.Type

/** `topic_subscribe`: receive `topic`'s records from now on; answered with its current state. */
export const TopicSubscribeFrame = Schema.Struct({
  type: Schema.tag("topic_subscribe"),
  requestId: RequestId,
  topic: Topic,
  awaitRelease: Schema.optionalKey(Schema.Boolean)
})
/** A `topic_subscribe` frame. */
export type TopicSubscribeFrame = typeof TopicSubscribeFrame.Type

/** `topic_unsubscribe`: stop receiving `topic`. */
export const TopicUnsubscribeFrame = Schema.Struct({ type: Schema.tag("topic_unsubscribe"), requestId: RequestId, topic: Topic })
/** A `topic_unsubscribe` frame. */
export type TopicUnsubscribeFrame = typeof TopicUnsubscribeFrame.Type

/** `topic_query`: the current records (of `topic`, or of every topic) and this session's subscriptions. */
export const TopicQueryFrame = Schema.Struct({
  type: Schema.tag("topic_query"),
  requestId: RequestId,
  topic: Schema.optionalKey(Topic)
})
/** A `topic_query` frame. */
export type TopicQueryFrame = typeof TopicQueryFrame.Type

// --- broker → client --------------------------------------------------------

/**
 * `topic_published`: the broker saved the record and wrote it to `accepted`
 * of the `subscribers` it has (C-TOP-13) — or, `stale`, it keeps a newer
 * revision of this publisher (`revision` is then the kept one) and changed nothing.
 */
export const TopicPublishedFrame = Schema.Struct({
  type: Schema.tag("topic_published"),
  requestId: Schema.String,
  topic: Schema.String,
  revision: Schema.Int,
  subscribers: Schema.Int,
  accepted: Schema.Int,
  stale: Schema.optionalKey(Schema.Boolean)
})
/** A `topic_published` frame. */
export type TopicPublishedFrame = typeof TopicPublishedFrame.Type

/**
 * `topic_subscribed`: the subscription holds; `entries` is the topic's current
 * state (no replay, C-TOP-11). `truncated: true` when records were left out
 * to keep the answer within its byte budget (absent otherwise).
 */
export const TopicSubscribedFrame = Schema.Struct({
  type: Schema.tag("topic_subscribed"),
  requestId: Schema.String,
  topic: Schema.String,
  entries: Schema.Array(TopicEntry),
  truncated: Schema.optionalKey(Schema.Boolean)
})
/** A `topic_subscribed` frame. */
export type TopicSubscribedFrame = typeof TopicSubscribedFrame.Type

/** `topic_unsubscribed`: the subscription is gone (or was never there). */
export const TopicUnsubscribedFrame = Schema.Struct({
  type: Schema.tag("topic_unsubscribed"),
  requestId: Schema.String,
  topic: Schema.String
})
/** A `topic_unsubscribed` frame. */
export type TopicUnsubscribedFrame = typeof TopicUnsubscribedFrame.Type

/**
 * `topic_state`: the answer to `topic_query`. `truncated: true` when entries
 * or subscriptions were left out to keep the answer within its byte budget
 * (absent otherwise).
 */
export const TopicStateFrame = Schema.Struct({
  type: Schema.tag("topic_state"),
  requestId: Schema.String,
  entries: Schema.Array(TopicEntry),
  subscriptions: Schema.Array(TopicSubscription),
  truncated: Schema.optionalKey(Schema.Boolean)
})
/** A `topic_state` frame. */
export type TopicStateFrame = typeof TopicStateFrame.Type

/** `topic_failed`: a topic request was refused, with why and what to do; nothing was saved. */
export const TopicFailedFrame = Schema.Struct({ type: Schema.tag("topic_failed"), requestId: Schema.String, reason: Schema.String })
/** A `topic_failed` frame. */
export type TopicFailedFrame = typeof TopicFailedFrame.Type

/** `topic_record`: a subscribed topic's record changed (a publication, or its publisher left). */
export const TopicRecordFrame = Schema.Struct({ type: Schema.tag("topic_record"), entry: TopicEntry })
/** A `topic_record` frame. */
export type TopicRecordFrame = typeof TopicRecordFrame.Type

// --- validation ---------------------------------------------------------------

/** A publication as a caller writes it, before it is numbered (C-TOP-4). */
export interface PublishInput {
  readonly topic: string
  readonly text: string
  readonly event?: string | undefined
  readonly resource?: string | undefined
  readonly ownership?: string | undefined
}

// Control characters (C0, DEL, C1) and the line/paragraph separators.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/
/**
 * Why `text` is not a publication's text for its characters, or undefined:
 * the first control character other than TAB, LF and CR (C-TOOL-6), by its
 * code and 1-based position.
 */
const textControlProblem = (text: string): string | undefined => {
  const found = Limits.textControlOf(text)
  return found === undefined
    ? undefined
    : `text contains the control character ${found.code} at position ${found.position}: ` +
      "only TAB, LF and CR are allowed in a text, remove it (or describe it in words) and publish again"
}

/**
 * Why `topic` is not a topic label, or undefined when it is (C-TOP-1): a
 * non-empty plain label, no control characters, no wildcards.
 *
 * @example
 * ```ts
 * import { checkTopic } from "effect-intercom/protocol"
 *
 * checkTopic("browser/tab-4") // undefined
 * checkTopic("") // "topic is empty: name the exact topic, e.g. \"project/build\""
 * ```
 */
export const checkTopic = (topic: string): string | undefined => {
  if (topic.trim() === "") return `topic is empty: name the exact topic, e.g. "project/build"`
  if (CONTROL.test(topic)) return "topic contains a control character: use a plain one-line label"
  if (topic.length > MAX_TOPIC_LENGTH) return `topic is longer than ${MAX_TOPIC_LENGTH} characters: use a shorter label`
  if (topic.includes("*")) return "topic contains \"*\": there are no wildcards, subscribe to each exact topic"
  return undefined
}

const isEvent = (value: string): value is TopicEvent =>
  value === "update" || value === "blocker" || value === "decision" || value === "release"
const isOwnership = (value: string): value is TopicOwnership => value === "held" || value === "released"

/** A publication that passed `checkPublish`: its event decided (C-TOP-4), not yet numbered. */
export interface CheckedPublication {
  readonly topic: string
  readonly text: string
  readonly event: TopicEvent
  readonly resource?: string
  readonly ownership?: TopicOwnership
}

/**
 * Checks a publication (C-TOP-1, C-TOP-2, C-TOP-4; no control character in
 * its text but TAB, LF and CR, C-TOOL-6) and decides its event:
 * `release` when `ownership` is `released`, otherwise `update`, unless
 * given. Returns the checked publication, or the reason as a string.
 *
 * @example
 * ```ts
 * import { checkPublish } from "effect-intercom/protocol"
 *
 * checkPublish({ topic: "tab-4", text: "done", resource: "tab-4", ownership: "released" }) // event "release"
 * checkPublish({ topic: "tab-4", text: "done", ownership: "held" }) // "ownership needs a resource: …"
 * ```
 */
export const checkPublish = (input: PublishInput): CheckedPublication | string => {
  const topicProblem = checkTopic(input.topic)
  if (topicProblem !== undefined) return topicProblem
  if (input.text.trim() === "") return "text is empty: a publication is self-contained current state, say what it is"
  if (input.text.length > MAX_TOPIC_TEXT_LENGTH) {
    return `text is longer than ${MAX_TOPIC_TEXT_LENGTH} characters: publish a summary, send details as a message`
  }
  const textProblem = textControlProblem(input.text)
  if (textProblem !== undefined) return textProblem
  if (input.event !== undefined && !isEvent(input.event)) {
    return `event "${input.event}" is not one of update, blocker, decision, release`
  }
  if (input.ownership !== undefined && !isOwnership(input.ownership)) {
    return `ownership "${input.ownership}" is not one of held, released`
  }
  const resource = input.resource
  if (resource !== undefined && (resource.trim() === "" || CONTROL.test(resource))) {
    return "resource must be a non-empty plain one-line label"
  }
  if (resource !== undefined && resource.length > MAX_RESOURCE_LENGTH) {
    return `resource is longer than ${MAX_RESOURCE_LENGTH} characters`
  }
  if (input.ownership !== undefined && resource === undefined) return "ownership needs a resource: name what is held or released"
  const event: TopicEvent = input.event ?? (input.ownership === "released" ? "release" : "update")
  if (input.ownership === "released" && event !== "release") return "ownership \"released\" goes only with event \"release\""
  if (event === "release" && (resource === undefined || input.ownership !== "released")) {
    return "event \"release\" needs a resource and ownership \"released\""
  }
  return {
    topic: input.topic,
    text: input.text,
    event,
    ...(resource === undefined ? {} : { resource }),
    ...(input.ownership === undefined ? {} : { ownership: input.ownership })
  }
}

/** Checks a record as the broker receives it (the same rules, its event given). */
export const checkRecord = (record: TopicRecord): string | undefined => {
  const checked = checkPublish(record)
  return typeof checked === "string" ? checked : undefined
}
