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
 * The table is keyed by a hash of the message id alone, a small integer
 * computed from the id the message already carries, so no key string is
 * built per message. Records whose ids share a hash — an id other senders
 * used too (told apart by `senderKey`), or, rarely, another id — are chained
 * on the record (`sameHash`), in the order they joined.
 *
 * Age order: each part is threaded through its records on a doubly linked
 * list of its own — replay records in the order they were (last) kept,
 * routes in the order they were (last) added — with no node object per
 * entry; each concern expires and evicts from its oldest in O(1) a step. A
 * record leaves the table when neither part is kept.
 *
 * Lookups miss the cache once the table holds the hour's records (up to
 * 262,144), so each costs what it touches. A new send makes three: the
 * replay check's `get`, the claim's `set` (answered from that `find`'s memo
 * while the table is unchanged) and, in a full table, an evicted record's
 * `delete` (no `get` unless its hash is shared). An integer key decides a
 * miss without reading a key string, which a `Map` keyed by the id had to
 * compare. The hash is seeded per table: a client chooses its ids, and must
 * not be able to choose ones that share a hash. See docs/performance.md,
 * "Replay records at steady state, eighth stop".
 *
 * The table is sixteen `Map`s, chosen by the hash's low bits (`shardOf`),
 * not one: once full, one record joins and one leaves per message, each
 * leaving a deleted slot, and V8 rebuilds a `Map` whose deleted slots fill
 * it in one step, copying every live entry — for the hour's ~215,000
 * records a 50–60 ms pause of the whole event loop every ~310,000 messages.
 * A shard holds a sixteenth of them, so each of its rebuilds is a sixteenth
 * as long, at other times than the others' (the same work in all;
 * bench/records-pause.ts, docs/performance.md "The records' table's
 * pause").
 *
 * Withdrawals kept past their routes (the withdrawals' list) are bounded
 * overall; when it is full, a settled one (`settleKept`) goes before any
 * still waiting — the earliest settled of the receiver holding the most
 * settled — else the oldest of the receiver holding the most waiting
 * (KeptShares.ts, `linkKept`).
 *
 * Size: about 790 lines because the record and its table share the `parts`
 * bits and the chain and list links; apart, each would reach into the other.
 *
 * Owner: the Router's synchronous code; DeliveryRecords (the replay part)
 * and Receipts (the route part) each write only their own part.
 */
import { randomInt } from "node:crypto"
import { DeliveryCode } from "../protocol/delivery.ts"
import type { Message } from "../protocol/frames.ts"
import type { Fingerprint, Outcome } from "./DeliveryRecords.ts"
import { idOfSessionKey, type SessionInstance } from "./Registry.ts"
import { KeptShares } from "./KeptShares.ts"
import { highOf, joined, lowOf } from "./SplitNumber.ts"

/** The outcome field of a record whose replay part is not kept: never answered to anyone. */
const NOT_RECORDED: Outcome = { ok: false, code: DeliveryCode.DeliveryFailed, reason: "not recorded", retryable: true }

/**
 * 53-bit string hash (cyrb53). The fingerprint hashes message text instead of
 * keeping it: 4,096 records of 1 MiB texts would otherwise pin gigabytes.
 */
export const hash = (text: string): number => {
  let h1 = 0xdeadbeef
  let h2 = 0x41c6ce57
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    h1 = Math.imul(h1 ^ c, 2654435761)
    h2 = Math.imul(h2 ^ c, 1597334677)
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909)
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909)
  return 4294967296 * (2097151 & h2) + (h1 >>> 0)
}

const NO_ATTACHMENTS_HASH = hash("")

/**
 * The fingerprint fields most sends leave at their defaults (attachments,
 * reply, ask, supersede and retry fields, a failure reply's text): one shared
 * object when set, none otherwise, so a plain send's record carries one field
 * for all of them.
 */
type RareFingerprint = Omit<Fingerprint, "targetId" | "textLength" | "textHash">

/** `fingerprint`'s rare fields, or undefined when they are all at their defaults. */
const rareOf = (fingerprint: RareFingerprint): RareFingerprint | undefined =>
  fingerprint.attachmentsLength === 0 && fingerprint.attachmentsHash === NO_ATTACHMENTS_HASH &&
    fingerprint.replyTo === undefined && fingerprint.expectsReply === undefined && fingerprint.supersedes === undefined &&
    fingerprint.retryOf === undefined && fingerprint.replyErrorLength === -1 && fingerprint.replyErrorHash === 0
    ? undefined
    : {
      attachmentsLength: fingerprint.attachmentsLength,
      attachmentsHash: fingerprint.attachmentsHash,
      replyTo: fingerprint.replyTo,
      expectsReply: fingerprint.expectsReply,
      supersedes: fingerprint.supersedes,
      retryOf: fingerprint.retryOf,
      replyErrorLength: fingerprint.replyErrorLength,
      replyErrorHash: fingerprint.replyErrorHash
    }

/**
 * Withdrawals kept past their routes at most, overall (the withdrawals' list): one more put on it drops the
 * oldest of the receiver holding the most at once (`linkKept`, KeptShares.ts; reviews revaw AW4, revbh), so the
 * list never holds more between prunes.
 */
export const MAX_KEPT_WITHDRAWALS = 4_096

/**
 * The least time between two log lines about withdrawals dropped because the withdrawals' list was full
 * (`linkKept`): each line carries how many were dropped since the last (review revbh BH2).
 */
export const KEPT_DROPS_NOTICE_INTERVAL_MS = 3_600_000

/** Bits of `OutboundRecord.parts`. */
const RECORDED = 1
const ROUTED = 2
const IN_TABLE = 4
/** In the table behind another record of its hash (in its chain, not the table's slot). */
const CHAINED = 8
/** Its replay part was restored from the store at startup and not kept again since (`restored`). */
const RESTORED = 16
/** Its route was dropped with its message, which no client read (`dropRoute`'s `unread`; Receipts.droppedUnread). */
const DROPPED_UNREAD = 32
/**
 * Its route aged out (its hour, or MAX_ROUTES) while it kept its sender's withdrawal: the record stays on the
 * withdrawals' list (`keepWithdrawal`), on the route links, so that withdrawal outlives the route.
 */
const WITHDRAWAL_KEPT = 64
/**
 * Its sender's withdrawal came while its message may still have waited for its receiver — unwritten or
 * unconfirmed (Receipts' cancel and supersede paths): only such a withdrawal outlives the route (`ageRoute`).
 */
const WITHDRAWN_WAITING = 128

/**
 * The table's key for message id `id`: a 30-bit hash (a small integer),
 * seeded per table (FNV-1a's steps, then murmur3's finaliser).
 */
export const idHash = (id: string, seed: number): number => {
  let h = seed ^ 0x811c9dc5
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193)
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b)
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35)
  return (h ^ (h >>> 16)) & 0x3fffffff
}

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
   * WITHDRAWAL_KEPT, WITHDRAWN_WAITING).
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

  /** The text's hash (`hash`), a fingerprint field. */
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
   * (`dropRoute` with `unread`; helper sim111). Cleared when it is routed
   * again. A control about it reaches no one (Receipts.droppedUnread).
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

  /** It is the table's record of its (sender, id): `claim` needs no lookup. */
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

/** How many `Map`s the table is split over (a power of two; see the module header). */
const SHARDS = 16

/** The table of outbound records, with the two age lists; see the module header. */
export class OutboundRecords {
  /** The first record of each id hash, in the shard of its low bits; the rest of its chain hangs on `sameHash`. */
  private readonly shards: ReadonlyArray<Map<number, OutboundRecord>> = Array.from(
    { length: SHARDS },
    () => new Map<number, OutboundRecord>()
  )
  private readonly seed: number
  private oldestRecordEntry: OutboundRecord | undefined = undefined
  private newestRecordEntry: OutboundRecord | undefined = undefined
  private oldestRouteEntry: OutboundRecord | undefined = undefined
  private newestRouteEntry: OutboundRecord | undefined = undefined
  private recordCount = 0
  private routeTotal = 0
  /** The withdrawals kept past their routes (`keepWithdrawal`), oldest first, on the records' route links. */
  private oldestKeptEntry: OutboundRecord | undefined = undefined
  private newestKeptEntry: OutboundRecord | undefined = undefined
  private keptTotal = 0
  /** The receivers' shares of the withdrawals' list (`linkKept`). */
  private readonly shares: KeptShares<OutboundRecord>
  /** Kept withdrawals dropped because the list was full (`linkKept`), in all, and since the last log line. */
  private keptDropTotal = 0
  private keptDropsUntold = 0
  /** When the last log line about them was written (`linkKept`); none yet: undefined. */
  private keptDropsToldAt: number | undefined = undefined
  /** The receiver whose withdrawal the last drop took (`tellKeptDrops` names it). */
  private keptDropsLargest = ""
  private readonly notice: (line: string) => void
  private count = 0
  /** Counts every change to the table: the memo below holds only while it is unchanged. */
  private changes = 0
  /** The memo of the last `find`: its id, the id's hash, that hash's first record, and `changes` then. */
  private memoId: string | undefined = undefined
  private memoHash = 0
  private memoFirst: OutboundRecord | undefined = undefined
  private memoChanges = -1

  /**
   * @param seed the ids' hash seed: random unless a test needs it known.
   * @param notice a warning line for the broker's log: the withdrawals' list was full and a kept withdrawal
   * was dropped (`linkKept`); at most one line per KEPT_DROPS_NOTICE_INTERVAL_MS, with the count since the last.
   */
  constructor(seed: number = randomInt(0x40000000), notice: (line: string) => void = () => {}) {
    this.seed = seed
    this.notice = notice
    this.shares = new KeptShares<OutboundRecord>()
  }

  /** The shard that holds id hash `hash`'s chain. */
  private shardOf(hash: number): Map<number, OutboundRecord> {
    return this.shards[hash & (SHARDS - 1)]!
  }

  /** Replay parts kept. */
  get records(): number {
    return this.recordCount
  }

  /** Route parts kept. */
  get routes(): number {
    return this.routeTotal
  }

  /** Withdrawals kept past their routes (`keepWithdrawal`). */
  get withdrawalsKept(): number {
    return this.keptTotal
  }

  /** Withdrawals kept past their routes of messages to `receiverKey`'s session (its share: `linkKept`). */
  withdrawalsKeptFor(receiverKey: string): number {
    return this.shares.of(receiverKey)
  }

  /** Kept withdrawals dropped so far because the withdrawals' list was full (`linkKept`). */
  get withdrawalsDroppedFull(): number {
    return this.keptDropTotal
  }

  /** The withdrawal kept past its route longest, if any. */
  get oldestKeptWithdrawal(): OutboundRecord | undefined {
    return this.oldestKeptEntry
  }

  /** Objects in the table (a record with both parts counts once). */
  get size(): number {
    return this.count
  }

  /** The oldest replay part kept, if any. */
  get oldestRecord(): OutboundRecord | undefined {
    return this.oldestRecordEntry
  }

  /** The oldest route part kept, if any. */
  get oldestRoute(): OutboundRecord | undefined {
    return this.oldestRouteEntry
  }

  /** The first record of message id `id`, whatever its sender; `nextWithId` gives the others. */
  firstWithId(id: string): OutboundRecord | undefined {
    const hash = idHash(id, this.seed)
    return this.sameIdFrom(this.shardOf(hash).get(hash), id)
  }

  /** The record after `record` (in the table) with its id, whatever its sender. */
  nextWithId(record: OutboundRecord): OutboundRecord | undefined {
    return this.sameIdFrom(record.sameHash, record.id)
  }

  private sameIdFrom(from: OutboundRecord | undefined, id: string): OutboundRecord | undefined {
    for (let record = from; record !== undefined; record = record.sameHash) if (record.id === id) return record
    return undefined
  }

  /** `senderKey`'s record of its message `id`, whichever parts it holds. */
  find(senderKey: string, id: string): OutboundRecord | undefined {
    const hash = idHash(id, this.seed)
    const first = this.shardOf(hash).get(hash)
    this.memoId = id
    this.memoHash = hash
    this.memoFirst = first
    this.memoChanges = this.changes
    for (let record = first; record !== undefined; record = record.sameHash) {
      if (record.id === id && record.senderKey === senderKey) return record
    }
    return undefined
  }

  /**
   * The table's record of `record`'s (sender, id): `record` itself when there
   * was none (it joins the table), else the record already there. No lookup
   * when `record` is in the table already, and none before the insert when
   * the last `find` was of its id and the table has not changed since (the
   * send pipeline's replay check, then its claim).
   */
  claim(record: OutboundRecord): OutboundRecord {
    if (record.inTable) return record
    const id = record.id
    const memo = id === this.memoId && this.changes === this.memoChanges
    const hash = memo ? this.memoHash : idHash(id, this.seed)
    const first = memo ? this.memoFirst : this.shardOf(hash).get(hash)
    let last: OutboundRecord | undefined
    for (let other = first; other !== undefined; other = other.sameHash) {
      if (other.id === id && other.senderKey === record.senderKey) return other
      last = other
    }
    record.idHash = hash
    if (last === undefined) this.shardOf(hash).set(hash, record)
    else {
      last.sameHash = record
      record.parts |= CHAINED
    }
    this.changes++
    this.count++
    record.parts |= IN_TABLE
    return record
  }

  /**
   * Takes `record` out of the table once it keeps neither part: a `delete`
   * alone when no other record shares its hash.
   */
  private release(record: OutboundRecord): void {
    if ((record.parts & (RECORDED | ROUTED | WITHDRAWAL_KEPT)) !== 0 || (record.parts & IN_TABLE) === 0) return
    this.changes++
    this.count--
    const next = record.sameHash
    record.sameHash = undefined
    if ((record.parts & CHAINED) === 0) {
      // The hash's first record: its successor, if any, takes the slot.
      if (next === undefined) this.shardOf(record.idHash).delete(record.idHash)
      else {
        next.parts &= ~CHAINED
        this.shardOf(record.idHash).set(record.idHash, next)
      }
    } else {
      for (let before = this.shardOf(record.idHash).get(record.idHash); before !== undefined; before = before.sameHash) {
        if (before.sameHash === record) {
          before.sameHash = next
          break
        }
      }
    }
    record.parts &= ~(IN_TABLE | CHAINED)
  }

  /**
   * Keeps the replay part of `record` (claimed: the table's record of its
   * sender and id) as the newest record; a kept one moves to the back.
   * `restored`: found stored at startup (`OutboundRecord.restored`); a record
   * kept again in this run is not.
   */
  keepRecord(record: OutboundRecord, outcome: Outcome, at: number, bytes: number, restored = false): void {
    if (record.recorded) this.unlinkRecord(record)
    else this.recordCount++
    record.parts = restored ? record.parts | RECORDED | RESTORED : (record.parts | RECORDED) & ~RESTORED
    record.outcome = outcome
    record.recordedAt = at
    record.bytes = bytes
    record.olderRecord = this.newestRecordEntry
    if (this.newestRecordEntry !== undefined) this.newestRecordEntry.newerRecord = record
    else this.oldestRecordEntry = record
    this.newestRecordEntry = record
  }

  /** Drops `record`'s replay part (its route part, if any, stays). */
  dropRecord(record: OutboundRecord): void {
    if (!record.recorded) return
    this.unlinkRecord(record)
    record.parts &= ~(RECORDED | RESTORED)
    record.outcome = NOT_RECORDED
    this.recordCount--
    this.release(record)
  }

  /**
   * Keeps the route part (P70) of `record` (claimed: the table's record of
   * its sender and id) to the session of `receiverKey`, given to its client
   * instance `receiverInstance`, as the newest route; a kept one moves to
   * the back.
   */
  keepRoute(record: OutboundRecord, receiverKey: string, receiverInstance: SessionInstance, at: number): void {
    if (record.routed) this.unlinkRoute(record)
    else {
      // Routed again (a message under its id flushed or sent anew): its kept withdrawal, if any, leaves that list.
      if ((record.parts & WITHDRAWAL_KEPT) !== 0) this.unlinkKept(record)
      this.routeTotal++
    }
    // A route made in this run names the instance given the message: with it gone, no record implies one.
    // A withdrawal made while the message waited (WITHDRAWN_WAITING) stays so: a withdrawn copy routed again
    // (flushed to a client that read it) waits once more, and its withdrawal outlives this route too.
    record.parts = (record.parts | ROUTED) & ~(RESTORED | DROPPED_UNREAD | WITHDRAWAL_KEPT)
    record.receiverKey = receiverKey
    record.receiverInstance = receiverInstance
    record.routedAt = at
    record.olderRoute = this.newestRouteEntry
    if (this.newestRouteEntry !== undefined) this.newestRouteEntry.newerRoute = record
    else this.oldestRouteEntry = record
    this.newestRouteEntry = record
  }

  /**
   * Drops `record`'s route part (its replay part, if any, stays); `unread`:
   * with its message, which no client read (`droppedUnread`).
   */
  dropRoute(record: OutboundRecord, unread = false): void {
    if (!record.routed) return
    this.unlinkRoute(record)
    const parts = record.parts & ~(ROUTED | WITHDRAWN_WAITING)
    record.parts = unread ? parts | DROPPED_UNREAD : parts
    record.withdrawal = undefined
    this.routeTotal--
    this.release(record)
  }

  /**
   * Drops `record`'s route part as it ages out (its hour, or MAX_ROUTES
   * newer routes: Receipts.prune, Receipts.addRoute) at `at`. A route that
   * keeps its sender's withdrawal (`OutboundRecord.withdrawal`) leaves the
   * record on the withdrawals' list instead, still in the table, with that
   * withdrawal and the instance it names: the message may still wait
   * unwritten in its receiver's outbox or a parked list, and whoever gives
   * it back must find it withdrawn (DeliveryRecords.withdrawal,
   * MailReturns.requeue; review revao AO2). Only a withdrawal made while
   * its message may still have waited so (`withdrawnWaiting`): one of a
   * message written and confirmed before it can never be given back, and
   * would only crowd the list (review revau AU2). A field and a bit test per
   * aged route.
   */
  ageRoute(record: OutboundRecord, at: number): void {
    if (record.withdrawal === undefined || !record.routed || (record.parts & WITHDRAWN_WAITING) === 0) {
      return this.dropRoute(record)
    }
    this.unlinkRoute(record)
    this.routeTotal--
    record.parts &= ~ROUTED
    this.linkKept(record, at, record.receiverKey)
  }

  /**
   * Marks `record`'s withdrawal (`OutboundRecord.withdrawal`, set by its
   * sender's cancel or supersede) as made while its message may still have
   * waited for its receiver, unwritten or unconfirmed: it outlives the route
   * (`ageRoute`). With no route left (MAX_ROUTES or its hour took it; the
   * withdrawal followed the replay record: Receipts.recordedRoute), it goes
   * on the withdrawals' list now, at `at` (review revau AU1), in the share
   * of `receiverKey`, the session the message was for (`linkKept`; by
   * default the one its last route named). The cancel and supersede paths
   * only.
   */
  keepWithdrawal(record: OutboundRecord, at: number, receiverKey: string = record.receiverKey): void {
    record.parts |= WITHDRAWN_WAITING
    if ((record.parts & (ROUTED | WITHDRAWAL_KEPT)) === 0) this.linkKept(record, at, receiverKey)
  }

  /**
   * Puts `record` on the withdrawals' list as its newest, kept from `at`, in `receiverKey`'s share
   * (KeptShares.ts). Past MAX_KEPT_WITHDRAWALS, one leaves the list now: while any is settled (`settleKept`),
   * the earliest settled of the receiver holding the most settled; else the oldest of the receiver holding
   * the most (review revbh BH1: not the list's oldest, which may be an innocent receiver's; while the list
   * has room nobody's is dropped, BH4) — with `dropKept` (the record may leave the table), not at the next prune
   * (review revaw AW4). A drop is logged (`notice`): the first at once, later ones at most one line per
   * KEPT_DROPS_NOTICE_INTERVAL_MS (by `at`), counting those dropped since the last line (BH2).
   */
  private linkKept(record: OutboundRecord, at: number, receiverKey: string): void {
    record.parts |= WITHDRAWAL_KEPT
    record.routedAt = at
    record.olderRoute = this.newestKeptEntry
    if (this.newestKeptEntry !== undefined) this.newestKeptEntry.newerRoute = record
    else this.oldestKeptEntry = record
    this.newestKeptEntry = record
    this.keptTotal++
    this.shares.join(record, receiverKey)
    if (this.keptTotal <= MAX_KEPT_WITHDRAWALS) return
    const largest = this.shares.largestReceiver
    const victim = this.shares.largestOldest()
    if (largest === undefined || victim === undefined) return
    this.keptDropTotal++
    this.keptDropsUntold++
    this.keptDropsLargest = largest
    this.dropKept(victim)
    this.tellKeptDrops(at)
  }

  /**
   * The day's clean-up of the withdrawals' list (`Receipts.prune`, at
   * `now`): drops every kept withdrawal kept at `cutoff` or before, and logs
   * drops `linkKept` made since its last line that are still untold once the
   * interval is over, though no drop came after it (review revbl BL1).
   */
  pruneKept(cutoff: number, now: number): void {
    for (let oldest = this.oldestKeptEntry; oldest !== undefined && oldest.routedAt <= cutoff; oldest = this.oldestKeptEntry) {
      this.dropKept(oldest)
    }
    this.tellKeptDrops(now)
  }

  /**
   * Logs the kept withdrawals dropped since the last line (`linkKept`), if
   * any: the first drop at once, then at most one line per
   * KEPT_DROPS_NOTICE_INTERVAL_MS (`linkKept` at each drop, `pruneKept` at
   * each prune); a clock stepped back counts as the interval over (review
   * revbl BL2: the broker's `at` is the wall clock).
   */
  private tellKeptDrops(at: number): void {
    if (this.keptDropsUntold === 0) return
    const toldAt = this.keptDropsToldAt
    if (toldAt !== undefined && at >= toldAt && at - toldAt < KEPT_DROPS_NOTICE_INTERVAL_MS) return
    const largest = this.keptDropsLargest
    this.notice(
      `Withdrawals kept: the list (${MAX_KEPT_WITHDRAWALS}) is full; ${this.keptDropsUntold} dropped since the last ` +
        `such line, each the oldest of the session holding the most (last ${idOfSessionKey(largest)}, ` +
        `${this.shares.of(largest)} now): a message withdrawn then, if given back later, is delivered live`
    )
    this.keptDropsToldAt = at
    this.keptDropsUntold = 0
  }

  /**
   * Marks the record whose withdrawal is kept past its route (`ageRoute`) as
   * its message's give-back settled it: it names no client instance now,
   * and `unread`, none read it (`droppedUnread`). It stays on the
   * withdrawals' list, so a control about that message given back later
   * still finds both (MailReturns.aboutUngiven), but in its receiver's
   * settled order (KeptShares.settle): when the list is full a settled one
   * is dropped before any still waiting, whose message a give-back could
   * yet deliver live.
   */
  settleKept(record: OutboundRecord, unread: boolean): void {
    if ((record.parts & WITHDRAWAL_KEPT) === 0) return
    if (unread) record.parts |= DROPPED_UNREAD
    // It guards no message that can still be given back live: on a full list it goes before any still waiting.
    this.shares.settle(record)
  }

  /** Takes `record`'s kept withdrawal off the withdrawals' list (its day: Receipts.prune; the bound: `linkKept`); the record may leave the table. */
  dropKept(record: OutboundRecord): void {
    if ((record.parts & WITHDRAWAL_KEPT) === 0) return
    this.forgetWithdrawal(record)
    this.release(record)
  }

  /**
   * Forgets `record`'s withdrawal — a new send under its id is not withdrawn
   * (DeliveryRecords.keep) — taking it off the withdrawals' list if it is
   * there; the record stays in the table. Only a record with a withdrawal is
   * on that list or marked WITHDRAWN_WAITING (each is set with it and
   * cleared with it), so a caller may skip one without.
   */
  forgetWithdrawal(record: OutboundRecord): void {
    if ((record.parts & WITHDRAWAL_KEPT) !== 0) this.unlinkKept(record)
    record.parts &= ~(WITHDRAWAL_KEPT | WITHDRAWN_WAITING)
    record.withdrawal = undefined
  }

  private unlinkKept(record: OutboundRecord): void {
    if (record.olderRoute !== undefined) record.olderRoute.newerRoute = record.newerRoute
    else this.oldestKeptEntry = record.newerRoute
    if (record.newerRoute !== undefined) record.newerRoute.olderRoute = record.olderRoute
    else this.newestKeptEntry = record.olderRoute
    record.olderRoute = record.newerRoute = undefined
    this.keptTotal--
    this.shares.leave(record)
  }

  private unlinkRecord(record: OutboundRecord): void {
    if (record.olderRecord !== undefined) record.olderRecord.newerRecord = record.newerRecord
    else this.oldestRecordEntry = record.newerRecord
    if (record.newerRecord !== undefined) record.newerRecord.olderRecord = record.olderRecord
    else this.newestRecordEntry = record.olderRecord
    record.olderRecord = record.newerRecord = undefined
  }

  private unlinkRoute(record: OutboundRecord): void {
    if (record.olderRoute !== undefined) record.olderRoute.newerRoute = record.newerRoute
    else this.oldestRouteEntry = record.newerRoute
    if (record.newerRoute !== undefined) record.newerRoute.olderRoute = record.olderRoute
    else this.newestRouteEntry = record.olderRoute
    record.olderRoute = record.newerRoute = undefined
  }
}
