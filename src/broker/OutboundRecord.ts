/**
 * One record per accepted message, found by its sender and its id: what the
 * broker keeps of a message after routing it. Its two parts are the replay
 * record (P46: fingerprint and outcome, with the bounds DeliveryRecords.ts
 * applies) and the receipt route (P70: who sent it to whom, with the bounds
 * Receipts.ts applies). Both live in one object, so a delivered message keeps
 * one heap object and one table slot rather than two of each plus age-list
 * nodes and a built key string: every object kept per message is work for the
 * garbage collector, which traced and promoted them on every scavenge
 * (docs/performance.md, "Per-message records, second stop").
 *
 * This module owns the record's layout — its fields, the `parts` bits that
 * say which parts it keeps and how it sits in the table, and the fingerprint
 * of a send (`OutboundRecord.of`) — and nothing that moves it: the table and
 * its age lists (OutboundRecords.ts) set the bits and the links, the
 * withdrawals' list (KeptWithdrawals.ts) the route links of a withdrawal kept
 * past its route. The bits are exported for the table alone.
 *
 * Owner: the Router's synchronous code: the send pipeline makes a record
 * (`OutboundRecord.of`), OutboundRecords keeps and moves it.
 */
import { DeliveryCode } from "../protocol/delivery.ts"
import type { Message } from "../protocol/frames.ts"
import type { Fingerprint, Outcome } from "./DeliveryRecords.ts"
import { hash, NO_ATTACHMENTS_HASH, type RareFingerprint, rareOf } from "./Fingerprints.ts"
import type { SessionInstance } from "./Registry.ts"
import { highOf, joined, lowOf } from "./SplitNumber.ts"

/** The outcome field of a record whose replay part is not kept: never answered to anyone. */
export const NOT_RECORDED: Outcome = { ok: false, code: DeliveryCode.DeliveryFailed, reason: "not recorded", retryable: true }

/** Bit of `OutboundRecord.parts`: its replay part is kept (`recorded`). */
export const RECORDED = 1
/** Bit of `OutboundRecord.parts`: its route part is kept (`routed`). */
export const ROUTED = 2
/** Bit of `OutboundRecord.parts`: it is the table's record of its (sender, id) (`inTable`). */
export const IN_TABLE = 4
/** In the table behind another record of its hash (in its chain, not the table's slot). */
export const CHAINED = 8
/** Its replay part was restored from the store at startup and not kept again since (`restored`). */
export const RESTORED = 16
/** Its route was dropped with its message, which no client read (`OutboundRecords.dropRoute`'s `unread`; Receipts.droppedUnread). */
export const DROPPED_UNREAD = 32
/**
 * Its route aged out (its hour, or MAX_ROUTES) while it kept its sender's withdrawal: the record stays on the
 * withdrawals' list (`OutboundRecords.keepWithdrawal`), on the route links, so that withdrawal outlives the route.
 */
export const WITHDRAWAL_KEPT = 64
/**
 * Its sender's withdrawal came while its message may still have waited for its receiver — unwritten or
 * unconfirmed (Receipts' cancel and supersede paths): only such a withdrawal outlives the route (`OutboundRecords.ageRoute`).
 */
export const WITHDRAWN_WAITING = 128
/**
 * Its replay part is a later send's under its id than the message its route names: that send was recorded after
 * the earlier message's replay record left while its route stayed (DeliveryRecords.keep; review revdd DD1).
 * Cleared when a route is made for the recorded message (Receipts.addRoute). It outlives the replay part it
 * describes (OutboundRecords.dropRecord): the fingerprint fields still hold that later send's, by which a flush
 * tells that send from the routed message (review revroute D2).
 */
export const RECORD_LATER = 256
/**
 * Of a send's own record (`OutboundRecord.of`), never of one in the table: its route was kept on the table's
 * record of its id (Receipts.addRoute) before its replay part (DeliveryRecords.keep), so the two are one message's.
 */
export const ROUTE_TAKEN = 512
/**
 * Its message's stored row is under another session than its route's receiver: P49's other holder of the
 * session the send named took it, and the row is the named session's (`OutboundRecords.rowKeyOf`; review rrmk
 * probe 1). Set and cleared with each route kept; it outlives the route, as `receiverInstance` does.
 */
export const ROW_ELSEWHERE = 1024
/**
 * Its routed message is a supervisor's reply that a durable question took as its answer (`questionAnsweredBy`,
 * Questions.ts): its sender cannot cancel it (Cancels.ts; task fixq3). Set and cleared with each route kept
 * (`OutboundRecords.keepRoute`), the question's id kept aside (`OutboundRecords.answeredBy`); it outlives the route,
 * as `receiverInstance` does, for a cancel that follows the record (Receipts.recordedRoute).
 */
export const ANSWERED_QUESTION = 2048

/**
 * What the broker keeps of one message (see the module header). The
 * fingerprint fields are meaningful while `recorded`, the route fields while
 * `routed`; the links and `parts` belong to the table. Few fields, most of
 * them shared strings or small integers: it is kept by the hundred thousand.
 * The two times and the text hash are kept in halves (SplitNumber.ts), so no
 * field of a record points to a heap number of its own.
 */
export class OutboundRecord implements Fingerprint {
  readonly senderKey: string
  readonly id: string

  // --- The replay record (P46) ---------------------------------------------------
  targetId = ""
  textLength = 0
  private textHashHigh = 0
  private textHashLow = 0
  /** The fingerprint's other fields, when any is not at its default. */
  rare: RareFingerprint | undefined = undefined
  /** What the send came to, as answered and replayed. */
  outcome: Outcome = NOT_RECORDED
  private recordedAtHigh = 0
  private recordedAtLow = 0
  /** Estimated memory of the record (DeliveryRecords' byte bound). */
  bytes = 0
  olderRecord: OutboundRecord | undefined = undefined
  newerRecord: OutboundRecord | undefined = undefined
  /**
   * Which parts are kept, whether (and how) it is in the table, whether restored, whether its route was dropped
   * with its message unread, whether its withdrawal is kept past its route, whether that withdrawal came while
   * its message may still have waited (RECORDED, ROUTED, IN_TABLE, CHAINED, RESTORED, DROPPED_UNREAD,
   * WITHDRAWAL_KEPT, WITHDRAWN_WAITING, RECORD_LATER, ROW_ELSEWHERE, ANSWERED_QUESTION; ROUTE_TAKEN on a send's record outside the table).
   */
  parts = 0
  /** Its id's hash in the table (while in it). */
  idHash = 0
  /** The next record of the same hash in the table, if any. */
  sameHash: OutboundRecord | undefined = undefined

  // --- The receipt route (P70) ----------------------------------------------------
  /** The registry key of the session it was delivered to (the sender's is `senderKey`). */
  receiverKey = ""
  /**
   * The client instance of that session it was given to (`Session.instance`): where it was routed, or
   * handed on to since (a takeover's hand-over, a closed connection's give-back). A small integer.
   */
  receiverInstance: SessionInstance = 0
  /**
   * How its sender withdrew it, if it did: the cancelled or superseded outcome its replay record was
   * rewritten to (Receipts.ts), that same object, so it allocates nothing. Kept with the route because the route
   * can outlive that record (the records' bounds push a flooding sender's oldest out; a record ages from
   * the send, a route from the delivery): a later cancel or supersede still finds the fate settled
   * (DeliveryRecords.withdrawal). Cleared with the route — but for a route that aged out (its hour, or
   * MAX_ROUTES): the withdrawal then stays on the withdrawals' list (`OutboundRecords.keepWithdrawal`), as the
   * message it withdrew may still wait unwritten in an outbox or a parked list, and its give-back must find it
   * withdrawn (review revao AO2).
   */
  withdrawal: Outcome | undefined = undefined
  private routedAtHigh = 0
  private routedAtLow = 0
  /** The route list's links while routed; the withdrawals' list's while its withdrawal is kept past the route. */
  olderRoute: OutboundRecord | undefined = undefined
  newerRoute: OutboundRecord | undefined = undefined

  constructor(senderKey: string, id: string, fingerprint: Fingerprint | undefined) {
    this.senderKey = senderKey
    this.id = id
    if (fingerprint !== undefined) this.fingerprintFrom(fingerprint)
  }

  /** The text's hash (`hash`, Fingerprints.ts), a fingerprint field. */
  get textHash(): number {
    return joined(this.textHashHigh, this.textHashLow)
  }

  set textHash(value: number) {
    this.textHashHigh = highOf(value)
    this.textHashLow = lowOf(value, this.textHashHigh)
  }

  /** When the record was (last) kept (broker clock, ms). */
  get recordedAt(): number {
    return joined(this.recordedAtHigh, this.recordedAtLow)
  }

  set recordedAt(value: number) {
    this.recordedAtHigh = highOf(value)
    this.recordedAtLow = lowOf(value, this.recordedAtHigh)
  }

  /** When the route was (last) added (broker clock, ms). */
  get routedAt(): number {
    return joined(this.routedAtHigh, this.routedAtLow)
  }

  set routedAt(value: number) {
    this.routedAtHigh = highOf(value)
    this.routedAtLow = lowOf(value, this.routedAtHigh)
  }

  /** The replay part is kept (on the record list). */
  get recorded(): boolean {
    return (this.parts & RECORDED) !== 0
  }

  /** The route part is kept (on the route list). */
  get routed(): boolean {
    return (this.parts & ROUTED) !== 0
  }

  /**
   * Its replay part was found stored at startup (DeliveryRecords.restore) and
   * neither kept again nor routed in this run: a message delivered before the
   * restart, whose route was not stored (Receipts.recordedRoute). A record
   * kept or routed in this run is not, even once its route is gone.
   */
  get restored(): boolean {
    return (this.parts & RESTORED) !== 0
  }

  /**
   * Its route was dropped in this run with its message, which no client
   * instance read: withdrawn on its way and given back never written
   * (`OutboundRecords.dropRoute` with `unread`; helper sim111). Cleared
   * when it is routed again. A control about it reaches no one
   * (Receipts.droppedUnread).
   */
  get droppedUnread(): boolean {
    return (this.parts & DROPPED_UNREAD) !== 0
  }

  /**
   * Its route aged out while it kept its sender's withdrawal, which stays
   * (`OutboundRecords.keepWithdrawal`): on the withdrawals' list, not the
   * route list. `routedAt` then says when the route aged out.
   */
  get withdrawalKept(): boolean {
    return (this.parts & WITHDRAWAL_KEPT) !== 0
  }

  /**
   * Its sender's withdrawal came while its message may still have waited for
   * its receiver, unwritten or unconfirmed (WITHDRAWN_WAITING): that message
   * may yet be given back, and must be found withdrawn then.
   */
  get withdrawnWaiting(): boolean {
    return (this.parts & WITHDRAWN_WAITING) !== 0
  }

  /**
   * Its replay part is a later send's under its id than the message its
   * route names (RECORD_LATER): a withdrawal of the routed message must not
   * rewrite it (DeliveryRecords.rewrite's `route`; review revdd DD1). Still
   * set once that replay part is dropped, its fingerprint staying in the
   * fields: the flush of that later send takes the route over
   * (Receipts.addRoute; review revroute D2).
   */
  get recordLater(): boolean {
    return (this.parts & RECORD_LATER) !== 0
  }

  /** It is the table's record of its (sender, id): `OutboundRecords.claim` needs no lookup. */
  get inTable(): boolean {
    return (this.parts & IN_TABLE) !== 0
  }

  get attachmentsLength(): number {
    return this.rare?.attachmentsLength ?? 0
  }

  get attachmentsHash(): number {
    return this.rare?.attachmentsHash ?? NO_ATTACHMENTS_HASH
  }

  get replyTo(): string | undefined {
    return this.rare?.replyTo
  }

  get expectsReply(): boolean | undefined {
    return this.rare?.expectsReply
  }

  get supersedes(): string | undefined {
    return this.rare?.supersedes
  }

  get retryOf(): string | undefined {
    return this.rare?.retryOf
  }

  get replyErrorLength(): number {
    return this.rare?.replyErrorLength ?? -1
  }

  get replyErrorHash(): number {
    return this.rare?.replyErrorHash ?? 0
  }

  /**
   * A record for `senderKey`'s send of `message` to `targetId`, fingerprinted
   * (text and attachments hashed, with their lengths) and not yet kept: the
   * send pipeline compares it with a kept record, then keeps it.
   */
  static of(senderKey: string, targetId: string, message: Message, replyError: string | undefined): OutboundRecord {
    const record = new OutboundRecord(senderKey, message.id, undefined)
    const text = message.content.text
    record.targetId = targetId
    record.textLength = text.length
    record.textHash = hash(text)
    const attachments = message.content.attachments === undefined ? undefined : JSON.stringify(message.content.attachments)
    if (
      attachments === undefined && message.replyTo === undefined && message.expectsReply === undefined &&
      message.supersedes === undefined && message.retryOf === undefined && replyError === undefined
    ) return record
    record.rare = {
      attachmentsLength: attachments === undefined ? 0 : attachments.length,
      attachmentsHash: attachments === undefined ? NO_ATTACHMENTS_HASH : hash(attachments),
      replyTo: message.replyTo,
      expectsReply: message.expectsReply,
      supersedes: message.supersedes,
      retryOf: message.retryOf,
      replyErrorLength: replyError === undefined ? -1 : replyError.length,
      replyErrorHash: replyError === undefined ? 0 : hash(replyError)
    }
    return record
  }

  /** Takes `other`'s fingerprint (a new send under a kept id). */
  fingerprintFrom(other: Fingerprint): void {
    this.targetId = other.targetId
    this.textLength = other.textLength
    this.textHash = other.textHash
    this.rare = other instanceof OutboundRecord ? other.rare : rareOf(other)
  }
}
