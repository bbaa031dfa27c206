/**
 * The broker's records that the durable store keeps — a message addressed to
 * a session (`Mail`), an open ask (`AskEdge`), a send's replay fingerprint
 * and outcome (`Fingerprint`, `Outcome`) — as plain types. They live in the
 * store, which the broker imports, so that the store imports no broker
 * module (imports go one way, docs/architecture.md); the broker modules that
 * own each concept re-export them (Peer.ts, AskEdges.ts, DeliveryRecords.ts),
 * and what is done with them stays there. One value beside the types: the
 * symbol that keys a `Mail`'s place in the broker's acceptance order
 * (`ACCEPTED`), a field no store row holds.
 */
import type { DeliveryCode } from "../protocol/delivery.ts"
import type { DeliveryChoice } from "../protocol/deliveryModes.ts"
import type { Message } from "../protocol/frames.ts"

/**
 * An open ask (P61–P64): who asked whom, until when. A reply is accepted
 * only along an open edge (AskEdges.ts keeps them, with one deadline each).
 */
export interface AskEdge {
  /** The ask's record key: its asker and its id. */
  readonly messageKey: string
  /** The ask's message id. */
  readonly messageId: string
  readonly askerKey: string
  readonly targetKey: string
  /**
   * The ask's receipt plus its timeout (ms), on the stamps' scale as `openedAt` (a durable question's edge: the
   * broker's clock when it opened plus its timeout): what the ask is told by (its withdrawals, its copies).
   */
  readonly deadline: number
  /**
   * When the edge fires, on the broker's clock (ms): that clock when the ask was received plus its timeout
   * (`Mail.askDueAt`; a durable question's edge: its `deadline`). Stored with the edge (review revby by1) and
   * restored as it is, a reading of the last run's clock; absent only in a row of this stop's earlier builds, which
   * Router.restore gives one by the derived rule (BrokerStamps.restoredLead).
   */
  readonly dueAt?: number | undefined
  /**
   * When the ask was received (its `brokerReceivedAt`, a broker stamp, ms; a durable question's edge: the broker's
   * clock when it opened); absent on edges stored by an older broker.
   */
  readonly openedAt?: number | undefined
  /**
   * A durable supervisor question's edge (Questions.ts), which that concern
   * opens and closes itself: a reply along it is saved as the question's
   * answer, so losing the reply later does not open it again (Asks.answerLost).
   */
  readonly question?: true | undefined
  /**
   * Its asker was granted `ask-expiry-v1` when it asked: when the edge
   * expires unanswered, the asker is told (`ask_expired`, Asks.ts).
   */
  readonly notify?: true | undefined
}

/**
 * Whether a short-lived sender (`ephemeral-v1`) has ended by `unregister`:
 * one cell per such session, shared by its registration and every message it
 * sent, set when it ends. A message lost later, however much later, then owes
 * its sender no notice: it will never register to take one (broker's
 * MailDelivery.ts). Kept in memory only, never stored.
 */
export interface SenderEnd {
  ended: boolean
}

/**
 * The key of `Mail`'s place in the order the running broker accepted messages (BrokerStamps.accept). A symbol, so
 * that the JSON of a store row (`encodeMail`) never holds it — the row format stays as it was — while every copy of
 * the mail (`{ ...mail }`: given back, requeued, staged for a P49 holder) keeps it, with no per-message entry
 * anywhere else (issue 16).
 */
export const ACCEPTED: unique symbol = Symbol("accepted")

/** A message addressed to a session, as the mailbox and requeueing keep it. */
export interface Mail {
  /**
   * The message's key everywhere in the broker — replay record, mailbox,
   * receipt route, ask edge: its sender and its id (`recordKeyOf`). Ids are
   * the sender's own: another session using the same id never collides.
   */
  readonly recordKey: string
  readonly senderKey: string
  readonly senderId: string
  readonly senderIdentity: string | undefined
  /**
   * A short-lived sender's end (`ephemeral-v1`; the session's `senderEnd`),
   * undefined for any other sender and for mail restored from a store.
   */
  readonly senderEnd?: SenderEnd | undefined
  /** The sender's SessionInfo JSON when it sent the message (P49: flushed mail keeps it). */
  readonly fromJson: string
  readonly message: Message
  readonly brokerReceivedAt: number
  /**
   * An ask's due time on the broker's clock (ms): that clock when it was received plus its timeout, when its edge
   * fires (`AskEdge.dueAt`); `brokerReceivedAt` is a stamp, ahead of that clock after it stepped back. Undefined
   * for a message that is not an ask. Stored with the mail (review revby by1), a reading of the clock of the run
   * that received it; absent only in a row of this stop's earlier builds (then AskEdges.askDueOf derives it).
   */
  readonly askDueAt?: number | undefined
  /**
   * The routing namespace of its target, whose mailbox keeps it: the
   * sender's, except for traffic across groups (a child's `supervisor_send`,
   * its supervisor's reply back), which waits in the target's group.
   */
  readonly spaceKey: string
  readonly targetKey: string
  readonly targetId: string
  readonly targetIdentity: string | undefined
  readonly queuedAt: number
  /** For an ask: how long its edge stays open (the asker's announced timeout, or the broker's). */
  readonly askTimeoutMs: number | undefined
  /** Set by the broker on a `supervisor_send` (extension `supervisor-v1`), shown to recipients granted it. */
  readonly channel?: "supervisor" | undefined
  /** A failure reply's text (extension `reply-error-v1`), shown to each recipient in the form it understands. */
  readonly replyError?: string | undefined
  /** The sender's delivery mode (`delivery-v1`) when not the default `steer`, shown to recipients granted it. */
  readonly delivery?: DeliveryChoice | undefined
  /**
   * The trace context to hand on (`trace-v1`): the broker's routing span, or
   * the sender's when the broker does not trace; shown to recipients granted
   * it. Kept in the durable store: mail restored after a restart carries it too.
   */
  readonly traceparent?: string | undefined
  /**
   * For a reply: the ask edge it closed (Asks.ts), kept with it until it
   * reaches its asker. A reply the mailbox drops first — evicted by its
   * bounds, expired, or cancelled by its sender — leaves the ask unanswered,
   * and the edge opens again until its own deadline (`Asks.answerLost`), so
   * the replier can answer again. Kept in the durable store with the mail.
   */
  readonly answers?: AskEdge | undefined
  /**
   * Its place in the order this run's broker accepted messages (BrokerStamps.accept): higher is later. Breaks a
   * stamp tie between two messages under one reused id (MailDelivery.newestUnder), which their queue order cannot
   * (a message given back is queued again behind later ones; review revmailkey2 probe 6). Never stored (a symbol
   * key, skipped by JSON): mail restored from the store is given its place anew, in the order its rows were
   * accepted (`seq`; an ask put back keeps its old row's, StoreJournal.putAgain), before any message of the new
   * run (RestoreOrder.acceptInSeqOrder; review rrmk probe 3, rvmk2 probe 1).
   * Absent on a durable question's mail (Questions.ts).
   */
  readonly [ACCEPTED]?: number | undefined
}

/** What a send came to, as answered (and replayed to a retry). */
export type Outcome =
  | {
    readonly ok: true
    readonly delivery: "socket_delivered" | "queued"
    /**
     * A replace send staged on its thread (`delivery-v1`, C-DLV-6): answered
     * `delivery_queued` with the window's close, the first time and to a
     * same-id retry alike (P46). Kept in memory only: a store keeps it as
     * `queued`, so after a restart a retry is answered `delivered`, queued.
     */
    readonly staged?: { readonly threadId: string; readonly deliverAt: number } | undefined
    /**
     * Delivered (`socket_delivered`) to another session than the one its
     * fingerprint's `targetId` names — P49's other live holder of a departed
     * target's name — that session's id: who was delivered it, where the
     * receipt route (not stored) is gone, as after a restart, and a cancel
     * must reach the receiver that has it (Receipts.ts). Stored.
     */
    readonly receiverId?: string | undefined
  }
  | { readonly ok: false; readonly code: DeliveryCode; readonly reason: string; readonly retryable: boolean }

/**
 * What identifies "the same send": target and authored content, not
 * timestamps or sequence numbers. Text and attachments are hashed (with their
 * lengths, so a collision also needs equal lengths), and so is a failure
 * reply's `replyError` (C-BRK-8), when there is one. Kept as fields of the
 * message's one outbound record (OutboundRecord.ts), not as an object or a
 * string of its own: records are kept by the hundred thousand, and every
 * object they hold is work for the garbage collector.
 */
export interface Fingerprint {
  readonly targetId: string
  readonly textLength: number
  readonly textHash: number
  readonly attachmentsLength: number
  readonly attachmentsHash: number
  readonly replyTo: string | undefined
  readonly expectsReply: boolean | undefined
  readonly supersedes: string | undefined
  readonly retryOf: string | undefined
  /** A failure reply's `replyError` (`reply-error-v1`): its length, or -1 without one. */
  readonly replyErrorLength: number
  /** Its hash; 0 without one. */
  readonly replyErrorHash: number
}
