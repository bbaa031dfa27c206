/**
 * The table of outbound records (OutboundRecord.ts), found by sender and id,
 * with an age order for each of a record's two parts.
 * Size note: about 560 lines,
 * one concept — the hashed table and the two age lists share the records'
 * `parts` bits: each keep or drop moves a record on a list and decides
 * whether it leaves the table (`release`); apart, each would reach into the
 * other.
 *
 * A record is one per accepted message, holding its replay record and its
 * receipt route. DeliveryRecords (the replay part) and Receipts (the route
 * part) keep their bounds with it; the withdrawals kept past their routes
 * are on a list of their own (KeptWithdrawals.ts), which this table keeps
 * in step with the records' `parts` bits.
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
 * record leaves the table when neither part is kept, nor a withdrawal past
 * its route.
 *
 * Each list (and the withdrawals' list) stays in age order when the broker's
 * clock steps back (an NTP step, a VM resumed, a restart on a host whose
 * clock is behind): a keep on any of the three at a reading below the
 * newest reading the table was given (`reading`) re-dates the entries of
 * all three dated past it to it (`redate`, from `keepRecord`, `keepRoute`,
 * `linkKept`) — the rule AgedMap.ts applies too. Without it an entry kept
 * after the step sits behind younger-reading ones, the prune's walk from
 * the oldest stops at those, and it outlives its time for as long as the
 * step. All three together, not only the list kept on: sends that keep a
 * replay record but no route (mail queued for an absent session) would
 * otherwise re-date the records alone, and a message routed before the
 * step lose its record an hour after the step while its route stayed the
 * whole step longer (review revdf DF3). So every entry leaves after its
 * time: one kept after the step exactly; one kept before counts from the
 * step, kept no less than its time (so within P46's window), and the two
 * lists of one message agree. A keep pays one comparison (with the table's
 * reading, not each list's newest); the walk, over the entries past the
 * reading only, comes once per step back (a read of the clock older than
 * one already used re-dates the few entries between the two). Records
 * restored at startup come sorted by their stored reading (MailStore), so
 * they join in age order; a first keep at a clock behind them re-dates
 * them to its reading.
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
 * Owner: the Router's synchronous code; DeliveryRecords (the replay part)
 * and Receipts (the route part) each write only their own part.
 */
import { randomInt } from "node:crypto"
import type { Outcome } from "./DeliveryRecords.ts"
import { KeptWithdrawals } from "./KeptWithdrawals.ts"
import {
  ANSWERED_QUESTION,
  CHAINED,
  DROPPED_UNREAD,
  IN_TABLE,
  NOT_RECORDED,
  type OutboundRecord,
  RECORDED,
  RECORD_LATER,
  RESTORED,
  ROUTED,
  ROW_ELSEWHERE,
  WITHDRAWAL_KEPT,
  WITHDRAWN_WAITING
} from "./OutboundRecord.ts"
import type { SessionInstance } from "./Registry.ts"

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
 * Re-dates to `at` the entries of a list on the route links (the routes, or the withdrawals kept past them) dated
 * past it, walking from `newest` towards the oldest: the clock stepped back (module header, "Age order").
 */
const redateRoutes = (newest: OutboundRecord | undefined, at: number): void => {
  for (let later = newest; later !== undefined && later.routedAt > at; later = later.olderRoute) later.routedAt = at
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
  private readonly kept: KeptWithdrawals
  private count = 0
  /** The newest clock reading a keep was given: no entry of the three lists is dated past it (module header). */
  private reading = Number.NEGATIVE_INFINITY
  /**
   * The session key a record's message's stored row is under, for the few whose route's receiver is another
   * (ROW_ELSEWHERE: P49's other holder took it; `rowKeyOf`). Weak, so a record that leaves the table takes it along.
   */
  private readonly rowKeys = new WeakMap<OutboundRecord, string>()
  /**
   * The durable question a record's routed message answered, for the few that did (ANSWERED_QUESTION; `answeredBy`).
   * Weak, as `rowKeys`.
   */
  private readonly answered = new WeakMap<OutboundRecord, string>()
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
   * was dropped (`linkKept`); at most one line per KEPT_DROPS_NOTICE_INTERVAL_MS (KeptWithdrawals.ts), with the
   * count since the last.
   */
  constructor(seed: number = randomInt(0x40000000), notice: (line: string) => void = () => {}) {
    this.seed = seed
    this.kept = new KeptWithdrawals(notice)
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
    return this.kept.size
  }

  /** Withdrawals kept past their routes of messages to `receiverKey`'s session (its share: `linkKept`). */
  withdrawalsKeptFor(receiverKey: string): number {
    return this.kept.of(receiverKey)
  }

  /** Kept withdrawals dropped so far because the withdrawals' list was full (`linkKept`). */
  get withdrawalsDroppedFull(): number {
    return this.kept.droppedFull
  }

  /** The withdrawal kept past its route longest, if any. */
  get oldestKeptWithdrawal(): OutboundRecord | undefined {
    return this.kept.oldest
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
   * The clock stepped back to `at`, below the newest reading a keep was given: the records, routes and kept
   * withdrawals dated past it, all three lists together, count from it (module header, "Age order").
   */
  private redate(at: number): void {
    for (let later = this.newestRecordEntry; later !== undefined && later.recordedAt > at; later = later.olderRecord) {
      later.recordedAt = at
    }
    redateRoutes(this.newestRouteEntry, at)
    redateRoutes(this.kept.newest, at)
  }

  /**
   * Keeps the replay part of `record` (claimed: the table's record of its
   * sender and id) as the newest record; a kept one moves to the back.
   * `restored`: found stored at startup (`OutboundRecord.restored`); a record
   * kept again in this run is not. `later`: the send kept is a later one
   * under the id than the message its route names (`recordLater`).
   */
  keepRecord(record: OutboundRecord, outcome: Outcome, at: number, bytes: number, restored = false, later = false): void {
    if (record.recorded) this.unlinkRecord(record)
    else this.recordCount++
    if (at < this.reading) this.redate(at)
    this.reading = at
    const parts = restored ? record.parts | RECORDED | RESTORED : (record.parts | RECORDED) & ~RESTORED
    record.parts = later ? parts | RECORD_LATER : parts & ~RECORD_LATER
    record.outcome = outcome
    record.recordedAt = at
    record.bytes = bytes
    record.olderRecord = this.newestRecordEntry
    if (this.newestRecordEntry !== undefined) this.newestRecordEntry.newerRecord = record
    else this.oldestRecordEntry = record
    this.newestRecordEntry = record
  }

  /**
   * Drops `record`'s replay part (its route part, if any, stays). RECORD_LATER stays: the fingerprint fields
   * still hold that later send's, which the mailbox may flush yet, and a flush must tell it from the routed
   * message whose withdrawal the route keeps (Receipts.addRoute; review revroute D2).
   */
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
   * the back. `ofRecord`: the routed message is the one its replay part
   * records, if any (no longer `recordLater`); else an earlier one under the
   * id is (`recordLater` while a replay part is kept). `rowKey`: the session
   * the message's stored row is under (`Mail.targetKey`), when not
   * `receiverKey`'s — P49's other holder of the named session took it
   * (`rowKeyOf`; review rrmk probe 1).
   */
  keepRoute(
    record: OutboundRecord,
    receiverKey: string,
    receiverInstance: SessionInstance,
    at: number,
    ofRecord = true,
    rowKey = receiverKey,
    answered: string | undefined = undefined
  ): void {
    if (record.routed) this.unlinkRoute(record)
    else {
      // Routed again (a message under its id flushed or sent anew): its kept withdrawal, if any, leaves that list.
      if ((record.parts & WITHDRAWAL_KEPT) !== 0) this.kept.unlink(record)
      this.routeTotal++
    }
    // A route made in this run names the instance given the message: with it gone, no record implies one.
    // A withdrawal made while the message waited (WITHDRAWN_WAITING) stays so: a withdrawn copy routed again
    // (flushed to a client that read it) waits once more, and its withdrawal outlives this route too.
    let parts = (record.parts | ROUTED) & ~(RESTORED | DROPPED_UNREAD | WITHDRAWAL_KEPT | ROW_ELSEWHERE | ANSWERED_QUESTION)
    if (rowKey !== receiverKey) {
      this.rowKeys.set(record, rowKey)
      parts |= ROW_ELSEWHERE
    }
    // A reply saved as a durable question's answer (task fixq3): a message routed anew under its id is not.
    if (answered !== undefined) {
      this.answered.set(record, answered)
      parts |= ANSWERED_QUESTION
    }
    record.parts = ofRecord || (parts & RECORDED) === 0 ? parts & ~RECORD_LATER : parts | RECORD_LATER
    record.receiverKey = receiverKey
    record.receiverInstance = receiverInstance
    if (at < this.reading) this.redate(at)
    this.reading = at
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
   * The session key `record`'s routed message's stored row is under: the one the send named (`Mail.targetKey`),
   * which is the route's receiver's but when P49's other holder of that session took the message (`keepRoute`'s
   * `rowKey`). A withdrawal found by the route drops that row (DeliveryRecords.rewrite's `targetKey`); kept as
   * the route's receiver is, also once the route has aged out (Receipts.recordedRoute; review rrmk probe 1).
   */
  rowKeyOf(record: OutboundRecord): string {
    return (record.parts & ROW_ELSEWHERE) === 0 ? record.receiverKey : this.rowKeys.get(record) ?? record.receiverKey
  }

  /**
   * The durable question `record`'s routed message answered, if it is a supervisor's reply saved as one
   * (`keepRoute`'s `answered`; ANSWERED_QUESTION): kept as the route's receiver is, also once the route has aged out.
   * Read on the cancel path only (Cancels.ts, task fixq3).
   */
  answeredBy(record: OutboundRecord): string | undefined {
    return (record.parts & ANSWERED_QUESTION) === 0 ? undefined : this.answered.get(record)
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
   * (KeptWithdrawals.link). Past MAX_KEPT_WITHDRAWALS, the one that list names leaves it now — with `dropKept`
   * (the record may leave the table), not at the next prune (review revaw AW4) — and the drop is logged
   * (KeptWithdrawals.tellDrops): the first at once, later ones at most one line per
   * KEPT_DROPS_NOTICE_INTERVAL_MS (by `at`), counting those dropped since the last line (review revbh BH2).
   */
  private linkKept(record: OutboundRecord, at: number, receiverKey: string): void {
    record.parts |= WITHDRAWAL_KEPT
    if (at < this.reading) this.redate(at)
    this.reading = at
    record.routedAt = at
    const victim = this.kept.link(record, receiverKey)
    if (victim === undefined) return
    this.dropKept(victim)
    this.kept.tellDrops(at)
  }

  /**
   * The day's clean-up of the withdrawals' list (`Receipts.prune`, at
   * `now`): drops every kept withdrawal kept at `cutoff` or before, and logs
   * drops `linkKept` made since its last line that are still untold once the
   * interval is over, though no drop came after it (review revbl BL1).
   */
  pruneKept(cutoff: number, now: number): void {
    for (let oldest = this.kept.oldest; oldest !== undefined && oldest.routedAt <= cutoff; oldest = this.kept.oldest) {
      this.dropKept(oldest)
    }
    this.kept.tellDrops(now)
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
    this.kept.settle(record)
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
    if ((record.parts & WITHDRAWAL_KEPT) !== 0) this.kept.unlink(record)
    record.parts &= ~(WITHDRAWAL_KEPT | WITHDRAWN_WAITING)
    record.withdrawal = undefined
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
