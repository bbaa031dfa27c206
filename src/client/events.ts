/**
 * What a client hands its owner besides answers: inbound messages, membership
 * events, receipts and controls, and the delivery details of a send — the
 * shapes `IntercomClient`'s streams and `send` yield.
 */
import type { Message, MessageControl, MessageReceipt, SessionInfo } from "../protocol/frames.ts"
import type { TopicEntry } from "../protocol/topics.ts"

/** A message delivered to this session (P50): `IntercomClient.messages` yields these. */
export interface InboundMessage {
  readonly from: SessionInfo
  readonly message: Message
  /** For an ask, how long its asker waits (`ask-timeout-v1`); keep it pending that long. */
  readonly askTimeoutMs?: number
  /** `supervisor`: a child's message to this supervisor, as the broker checked it (`supervisor-v1`). */
  readonly channel?: "supervisor"
}

/** Another session of the scope joined, changed its presence, or left (P30, P32, P33): `IntercomClient.presenceEvents`. */
export type PresenceEvent =
  | { readonly _tag: "Joined"; readonly session: SessionInfo }
  | { readonly _tag: "Updated"; readonly session: SessionInfo }
  | { readonly _tag: "Left"; readonly sessionId: string }

/**
 * News about a message: a receiver's receipt for one this session sent (P70),
 * or its sender's cancel/supersede of one this session received (P73):
 * `IntercomClient.controls`.
 */
export type ControlEvent =
  | { readonly _tag: "Receipt"; readonly from: SessionInfo; readonly receipt: MessageReceipt }
  | { readonly _tag: "Control"; readonly from: SessionInfo; readonly control: MessageControl }

/** What the broker said about a delivered send (P41). */
export interface Delivery {
  readonly messageId: string
  readonly delivery: "socket_delivered" | "queued"
}

/** Where a connection puts what nobody asked for; called synchronously by its reader. */
export interface ClientSinks {
  readonly message: (message: InboundMessage) => void
  readonly presence: (event: PresenceEvent) => void
  readonly control: (event: ControlEvent) => void
  /** A subscribed topic's record (`topics-v1`). */
  readonly topic: (entry: TopicEntry) => void
}

