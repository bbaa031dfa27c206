/**
 * The withdrawals' list: outbound records whose route aged out (or was gone
 * already) while they kept their sender's cancel or supersede, made while
 * the message may still have waited for its receiver (review revao AO2). A
 * message withdrawn then may still wait unwritten in an outbox or a parked
 * list, and whoever gives it back must find it withdrawn, so the withdrawal
 * outlives the route — a day at most (Receipts.prune), and at most
 * MAX_KEPT_WITHDRAWALS of them.
 *
 * The list is threaded, oldest first, through the records' route links,
 * which a record off the route list does not use: no node object per entry.
 * Each receiver's share of it is kept by KeptShares.ts. When the list is
 * full, one leaves as another joins: a settled one (`settle`) before any
 * still waiting — the earliest settled of the receiver holding the most
 * settled — else the oldest of the receiver holding the most waiting
 * (`link`; reviews revaw AW4, revbh BH1, BH4, revbx BX1, BX2). Each drop
 * is logged, the first at once, then at most one line per
 * KEPT_DROPS_NOTICE_INTERVAL_MS counting those since the last
 * (`tellDrops`; reviews revbh BH2, revbl BL1, BL2).
 *
 * This module owns the list's links, its count, the shares and the drops'
 * log; the record's bits (WITHDRAWAL_KEPT, WITHDRAWN_WAITING) and whether
 * a dropped record leaves the table stay with the table (OutboundRecords.ts,
 * `linkKept`, `dropKept`), which changes the list only for a record whose
 * withdrawal is kept or to be kept: on the cancel, supersede and
 * route-aging paths, and when a message under such a record's id is routed
 * or sent again (`keepRoute`, `forgetWithdrawal`) — never for a plain
 * send's record; each prune reads the list's oldest and may log its drops
 * (`oldest`, `tellDrops`), and the counts are read by the status.
 *
 * Owner: OutboundRecords.
 */
import type { OutboundRecord } from "./OutboundRecord.ts"
import { KeptShares } from "./KeptShares.ts"
import { idOfSessionKey } from "./Registry.ts"

/**
 * Withdrawals kept past their routes at most, overall (the withdrawals' list): one more put on it drops one at
 * once — a settled one (its give-back settled) before any still waiting, each the oldest of the receiver
 * holding the most of its kind (review revbx BX1) (`KeptWithdrawals.link`, KeptShares.ts; reviews revaw AW4,
 * revbh), so the list never holds more between prunes.
 */
export const MAX_KEPT_WITHDRAWALS = 4_096

/**
 * The least time between two log lines about withdrawals dropped because the withdrawals' list was full
 * (`KeptWithdrawals.tellDrops`): each line carries how many were dropped since the last (review revbh BH2).
 */
export const KEPT_DROPS_NOTICE_INTERVAL_MS = 3_600_000

/** The withdrawals' list, its receivers' shares and the log of its drops; see the module header. */
export class KeptWithdrawals {
  /** The withdrawals kept past their routes, oldest first, on the records' route links. */
  private oldestEntry: OutboundRecord | undefined = undefined
  private newestEntry: OutboundRecord | undefined = undefined
  private total = 0
  /** The receivers' shares of the list (`link`). */
  private readonly shares = new KeptShares<OutboundRecord>()
  /** Kept withdrawals dropped because the list was full (`link`), in all, and since the last log line. */
  private dropTotal = 0
  private dropsUntold = 0
  /** When the last log line about them was written (`tellDrops`); none yet: undefined. */
  private dropsToldAt: number | undefined = undefined
  /** The receiver whose withdrawal the last drop took (`tellDrops` names it). */
  private dropsLargest = ""
  private readonly notice: (line: string) => void

  /**
   * @param notice a warning line for the broker's log: the list was full and a kept withdrawal was dropped;
   * at most one line per KEPT_DROPS_NOTICE_INTERVAL_MS, with the count since the last (`tellDrops`).
   */
  constructor(notice: (line: string) => void) {
    this.notice = notice
  }

  /** Withdrawals on the list. */
  get size(): number {
    return this.total
  }

  /** Withdrawals on the list of messages to `receiverKey`'s session (its share). */
  of(receiverKey: string): number {
    return this.shares.of(receiverKey)
  }

  /** Kept withdrawals dropped so far because the list was full (`link`). */
  get droppedFull(): number {
    return this.dropTotal
  }

  /** The withdrawal on the list longest, if any. */
  get oldest(): OutboundRecord | undefined {
    return this.oldestEntry
  }

  /** The withdrawal kept most recently, if any (`olderRoute` leads towards the oldest). */
  get newest(): OutboundRecord | undefined {
    return this.newestEntry
  }

  /**
   * Puts `record` on the list as its newest, in `receiverKey`'s share (KeptShares.ts). Past
   * MAX_KEPT_WITHDRAWALS, answers the one that must leave the list now, counted as dropped: while any is
   * settled (`settle`), the earliest settled of the receiver holding the most settled; else the oldest of the
   * receiver holding the most (review revbh BH1: not the list's oldest, which may be an innocent receiver's;
   * while the list has room nobody's is dropped, BH4). The caller drops it (`OutboundRecords.dropKept`, which
   * calls `unlink`), then logs the drop (`tellDrops`).
   */
  link(record: OutboundRecord, receiverKey: string): OutboundRecord | undefined {
    record.olderRoute = this.newestEntry
    if (this.newestEntry !== undefined) this.newestEntry.newerRoute = record
    else this.oldestEntry = record
    this.newestEntry = record
    this.total++
    this.shares.join(record, receiverKey)
    if (this.total <= MAX_KEPT_WITHDRAWALS) return undefined
    const largest = this.shares.largestReceiver
    const victim = this.shares.largestOldest()
    if (largest === undefined || victim === undefined) return undefined
    this.dropTotal++
    this.dropsUntold++
    this.dropsLargest = largest
    return victim
  }

  /** Takes `record` off the list and out of its receiver's share. */
  unlink(record: OutboundRecord): void {
    if (record.olderRoute !== undefined) record.olderRoute.newerRoute = record.newerRoute
    else this.oldestEntry = record.newerRoute
    if (record.newerRoute !== undefined) record.newerRoute.olderRoute = record.olderRoute
    else this.newestEntry = record.olderRoute
    record.olderRoute = record.newerRoute = undefined
    this.total--
    this.shares.leave(record)
  }

  /**
   * Moves `record` (on the list) to its receiver's settled order (KeptShares.settle): its message's
   * give-back settled it, so it guards no message that can still be given back live, and on a full list it
   * goes before any still waiting.
   */
  settle(record: OutboundRecord): void {
    this.shares.settle(record)
  }

  /**
   * Logs the kept withdrawals dropped since the last line (`link`), if
   * any: the first drop at once, then at most one line per
   * KEPT_DROPS_NOTICE_INTERVAL_MS (OutboundRecords calls it after each drop
   * and at each prune, `pruneKept`); a clock stepped back counts as the
   * interval over (review revbl BL2: the broker's `at` is the wall clock).
   */
  tellDrops(at: number): void {
    if (this.dropsUntold === 0) return
    const toldAt = this.dropsToldAt
    if (toldAt !== undefined && at >= toldAt && at - toldAt < KEPT_DROPS_NOTICE_INTERVAL_MS) return
    const largest = this.dropsLargest
    this.notice(
      `Withdrawals kept: the list (${MAX_KEPT_WITHDRAWALS}) is full; ${this.dropsUntold} dropped since the last ` +
        `such line, each the oldest of the session holding the most (last ${idOfSessionKey(largest)}, ` +
        `${this.shares.of(largest)} now): a message withdrawn then, if given back later, is delivered live`
    )
    this.dropsToldAt = at
    this.dropsUntold = 0
  }
}
