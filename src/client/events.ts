/**
 * What a client hands its owner besides answers: inbound messages, membership
 * events, receipts and controls, and the delivery details of a send — the
 * shapes `IntercomClient`'s streams and `send` yield.
 */
import type { Effect } from "effect"
import type { DeliveryChoice } from "../protocol/deliveryModes.ts"
import type { Message, MessageControl, MessageReceipt, SessionInfo } from "../protocol/frames.ts"
import type { TopicEntry } from "../protocol/topics.ts"
import type { ConfirmBound } from "./ConfirmationPolicy.ts"
import type { SendAnswer } from "./PendingSends.ts"

/**
 * What the broker pushes to a child about its own durable question
 * (`questions-v1`): the saved answer, or its cancellation (C-DQ-9, C-DQ-11).
 * `IntercomClient.questionEvents` yields these.
 */
export type QuestionEvent =
  | { readonly _tag: "Answered"; readonly questionId: string; readonly answer: string; readonly answeredAt: number }
  | { readonly _tag: "Cancelled"; readonly questionId: string; readonly cancelledAt: number }

/** A message delivered to this session (P50): `IntercomClient.messages` yields these. */
export interface InboundMessage {
  readonly from: SessionInfo
  readonly message: Message
  /** For an ask, how long its asker waits (`ask-timeout-v1`); keep it pending that long. */
  readonly askTimeoutMs?: number
  /** `supervisor`: a child's message to this supervisor, as the broker checked it (`supervisor-v1`). */
  readonly channel?: "supervisor"
  /**
   * A reply (`message.replyTo`) saying the ask it answers failed, with this
   * text (`reply-error-v1`, C-ASK-7): treat the ask as failed, not answered.
   */
  readonly replyError?: string
  /** The sender's delivery mode (`delivery-v1`); absent means `steer`. */
  readonly delivery?: DeliveryChoice
  /**
   * True when this connection had already read its sender's `session_left`
   * (and no `session_joined` since): the sender wrote it before it left.
   * The broker writes a departure after the output already queued for the
   * recipient, so this is rare: output the sender had parked behind
   * backpressure, a broker that writes departures first (ours did before),
   * or a message the broker delivers later on its own (a replace-staged one
   * when its window closes). An ask so marked has no asker to answer any
   * more (`IntercomSession` does not keep it pending, C-RPL-10).
   */
  readonly senderLeft?: boolean
  /**
   * The W3C trace context of the hop that routed it (`trace-v1`): the
   * broker's routing span, or the sender's span when the broker does not
   * trace. The session runtime makes its receive span a child of it.
   */
  readonly traceparent?: string
  /**
   * The client's read number of it (RecentMessages.nextRead): higher than the `read` of every control read
   * before it, so a control whose `read` is lower is an earlier message's (review revbb BB2). Absent from a
   * message not read by an `IntercomClient` (a test's, a journal's).
   */
  readonly read?: number
}

/**
 * Another session of the scope joined, changed its presence, or left (P30, P32, P33): `IntercomClient.presenceEvents`.
 * `resync: true` marks one the client made up after a reconnect, from a `list` (MembershipView.ts): the change
 * happened while this client was not connected, so the broker's feed never sent it.
 */
export type PresenceEvent =
  | { readonly _tag: "Joined"; readonly session: SessionInfo; readonly resync?: true }
  | { readonly _tag: "Updated"; readonly session: SessionInfo; readonly resync?: true }
  | { readonly _tag: "Left"; readonly sessionId: string; readonly resync?: true }

/**
 * News about a message: a receiver's receipt for one this session sent (P70),
 * or its sender's cancel/supersede of one this session received (P73):
 * `IntercomClient.controls`.
 */
export type ControlEvent =
  | { readonly _tag: "Receipt"; readonly from: SessionInfo; readonly receipt: MessageReceipt }
  | {
    readonly _tag: "Control"
    readonly from: SessionInfo
    readonly control: MessageControl
    /**
     * The read number of the last message read before this control (RecentMessages.lastRead): it is of a message
     * numbered at most this, never of one read after it (`IntercomClient.readSince`, review revbb BB2).
     */
    readonly read?: number
  }
  /** `reply-elsewhere-v1`: the ask `messageId` was answered to another client instance of this session. */
  | ({ readonly _tag: "AnsweredElsewhere" } & AnsweredElsewhere)

/**
 * What the broker said about a delivered send (P41): written to the
 * recipient, queued in the mailbox for an absent one, or (`delivery-v1`)
 * `staged` for replace coalescing — delivered when the window closes unless a
 * later message of `threadId` replaces it (a `superseded` receipt then says so).
 */
export interface Delivery {
  readonly messageId: string
  readonly delivery: "socket_delivered" | "queued" | "staged"
  /** For `staged`: the replace thread. */
  readonly threadId?: string
  /** For `staged`: when the broker will deliver it (broker clock, ms). */
  readonly deliverAt?: number
  /**
   * For an ask sent with `askSince`: the `askTimeoutMs` its last write
   * carried, its timeout less the time since it was first sent (shorter
   * when a reconnect wrote it again). The broker's deadline is that long
   * from when it read that write; the asker's own timer runs as long from
   * this answer (Ask.ts).
   */
  readonly askTimeoutMs?: number
}

/**
 * The broker's word (`ask_answered_elsewhere`, `reply-elsewhere-v1`) that
 * this session's ask `messageId` was answered by `replyId`, and that reply
 * went for good to another client instance of the session (told at this
 * client's registration, or behind the answer to its resend of the ask).
 */
export interface AnsweredElsewhere {
  readonly messageId: string
  readonly replyId: string
}

/** Where a connection puts what nobody asked for; called synchronously by its reader. */
export interface ClientSinks {
  /** Numbers a message read, before it is passed to `message` (`InboundMessage.read`). */
  readonly nextRead: () => number
  /** The number of the last message read, as a control is read (`ControlEvent` `read`). */
  readonly lastRead: () => number
  readonly message: (message: InboundMessage) => void
  /**
   * What the reader logs once a batch of frames was routed (a message dropped as a copy though its timestamp
   * differed: RecentMessages.takeReused); undefined when there is nothing, the common case.
   */
  readonly warnings: () => Effect.Effect<void> | undefined
  readonly presence: (event: PresenceEvent) => void
  readonly control: (event: ControlEvent) => void
  /** A subscribed topic's record (`topics-v1`). */
  readonly topic: (entry: TopicEntry) => void
  /** An answer to, or the cancellation of, this child's durable question (`questions-v1`). */
  readonly question: (event: QuestionEvent) => void
  /** The broker's notice that this session's ask `messageId` expired unanswered (`ask-expiry-v1`). */
  readonly askExpired: (messageId: string) => void
  /**
   * The broker's answer to a send of `messageId` that no send on this
   * connection waited for any more (its caller's send timeout ran out and
   * the connection forgot it), with the state epoch of the connection that
   * read it: kept for an ask that watches it (`LateVerdicts.ts`).
   */
  readonly lateAnswer: (messageId: string, answer: SendAnswer, stateEpoch: string | undefined) => void
  /**
   * Whether an ask settling with the broker watches the verdict on
   * `messageId` (`LateVerdicts.watches`): its question, once queued, is never
   * taken back by its caller's send timeout.
   */
  readonly awaitsVerdict: (messageId: string) => boolean
  /**
   * This client writes a `cancel_message` of `messageId` (once a send of
   * that id waiting here was answered): called before the frame is handed
   * to the socket, so before anything the broker writes after reading it.
   */
  readonly cancelWritten: (messageId: string) => void
  /**
   * The cancel of `messageId` that `cancelWritten` announced ended with
   * the broker's answer (true: cancelled), told as that answer is read,
   * before any cancel waiting for it resumes and before any frame read after
   * it is routed — also when every caller stopped waiting before it came.
   * Each cancel `cancelWritten` announced ends with exactly one of this,
   * `cancelWithdrawn` and `cancelAbandoned`.
   */
  readonly cancelEnded: (messageId: string, cancelled: boolean) => void
  /**
   * The cancel of `messageId` reached no broker (its frame was never
   * queued, or the outbox took it back).
   */
  readonly cancelWithdrawn: (messageId: string) => void
  /**
   * The cancel of `messageId` is let go with no answer read (its
   * connection closed first, or it was dropped detached past the bound):
   * the broker may have carried it out.
   */
  readonly cancelAbandoned: (messageId: string) => void
  /**
   * How far what was read may be confirmed now (`received-v1`;
   * ConfirmationPolicy.ts): under `confirmWhenHandled`, and while no session
   * takes this client's messages (`IntercomClient.holdConfirmations`), only
   * the frames before the oldest message read and not handled yet. A
   * connection reads what it may not confirm but does not confirm it, so the
   * broker keeps it for the session's next client if this one closes.
   */
  readonly confirmBound: () => ConfirmBound
  /**
   * Whether a bound can fall on a message now (held, or `confirmWhenHandled`):
   * only then does a connection note the frame each message came in (a
   * message read before, that a hold then bounds at, confirms nothing).
   */
  readonly bounded: () => boolean
}

