/**
 * What reaches a workflow stage: an inbound intercom message, or a notice an
 * engine raises itself (an async bash result, a subagent completion), which
 * enter a stage the same way (C-ORD-1, C-ORD-34). Pure data and the few
 * questions every stage module asks of it: is it a blocking ask, and what
 * identifies it.
 *
 * @since 0.1.0
 */
import type { InboundMessage } from "../client/events.ts"

/**
 * An inbound intercom message addressed to a stage session.
 *
 * @category models
 * @since 0.1.0
 */
export interface StageMessage {
  readonly _tag: "Message"
  readonly inbound: InboundMessage
}

/**
 * A notice the engine raises for a stage (an async bash or subagent
 * completion): `id` identifies the occurrence, `source` the producer.
 *
 * @category models
 * @since 0.1.0
 */
export interface StageNotice {
  readonly _tag: "Notice"
  readonly id: string
  readonly text: string
  readonly source?: string | undefined
}

/**
 * An entry for a stage.
 *
 * @category models
 * @since 0.1.0
 */
export type StageEntry = StageMessage | StageNotice

/**
 * An inbound message as a stage entry.
 *
 * @category constructors
 * @since 0.1.0
 */
export const stageMessage = (inbound: InboundMessage): StageMessage => ({ _tag: "Message", inbound })

/**
 * An engine notice as a stage entry.
 *
 * @category constructors
 * @since 0.1.0
 */
export const stageNotice = (notice: Omit<StageNotice, "_tag">): StageNotice => ({ _tag: "Notice", ...notice })

/**
 * Whether the entry is a blocking ask: a message that expects a reply. Only
 * an ask gets a correlated `replyError` when it cannot be handled (C-ORD-5,
 * C-ORD-8); anything else is released for retry or goes to the parent chat.
 *
 * @category predicates
 * @since 0.1.0
 */
export const isAsk = (entry: StageEntry): entry is StageMessage =>
  entry._tag === "Message" && entry.inbound.message.expectsReply === true

/**
 * What identifies an entry across redeliveries: (sender id, message id) for
 * a message, the notice id for a notice.
 *
 * @category models
 * @since 0.1.0
 */
export const stageEntryKey = (entry: StageEntry): string =>
  entry._tag === "Message" ? `m\u0000${entry.inbound.from.id}\u0000${entry.inbound.message.id}` : `n\u0000${entry.id}`
