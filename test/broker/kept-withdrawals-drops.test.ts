/**
 * The withdrawals' list when full (OutboundRecords.linkKept, review revbl):
 * every drop is told in some log line — also drops after a line with none
 * after the interval (BL1: `pruneKept`, which Receipts.prune calls on
 * every prune), and after the wall clock stepped back (BL2); and a tie at the
 * largest share costs the share whose join made it, not an older one (BL3).
 */
import { describe, expect, it } from "@effect/vitest"
import { KEPT_DROPS_NOTICE_INTERVAL_MS, MAX_KEPT_WITHDRAWALS } from "../../src/broker/KeptWithdrawals.ts"
import { OutboundRecord } from "../../src/broker/OutboundRecord.ts"
import { OutboundRecords } from "../../src/broker/OutboundRecords.ts"
import { keptFor, noticedTable, SEED } from "../support/keptWithdrawals.ts"

const HOUR = KEPT_DROPS_NOTICE_INTERVAL_MS

describe("the withdrawals' list when full: drops told, ties", () => {
  it("drops after the hour's first line, with no drop after the hour, are told by the next prune after it", () => {
    const { fill, notices, table } = noticedTable()
    fill(MAX_KEPT_WITHDRAWALS + 1, 0)
    fill(9, 1)
    expect([notices.length, table.withdrawalsDroppedFull]).toEqual([1, 10])
    // A day later the day's prune takes the oldest half; the list keeps working, never full again.
    for (let k = 0; k < MAX_KEPT_WITHDRAWALS / 2; k++) table.dropKept(table.oldestKeptWithdrawal!)
    fill(100, 25 * HOUR)
    // Receipts.prune's part, as every prune does (before each send, and from the idle watcher); no cutoff here.
    table.pruneKept(-1, 25 * HOUR)
    expect(notices.some((line) => line.includes("; 9 dropped since the last such line"))).toBe(true)
  })

  it("after the clock steps back, a drop more than an hour later (by the clock) is logged", () => {
    const { fill, notices } = noticedTable()
    fill(MAX_KEPT_WITHDRAWALS + 1, 10 * HOUR)
    expect(notices).toHaveLength(1)
    // The wall clock (Clock.currentTimeMillisUnsafe) is stepped back 8 hours.
    fill(1, 2 * HOUR)
    fill(1, 3 * HOUR + 1)
    expect(notices.length).toBeGreaterThanOrEqual(2)
  })

  it("a receiver holding one kept withdrawal keeps it when other sessions, each holding one, fill the list and one more joins", () => {
    const table = new OutboundRecords(SEED)
    const innocent = keptFor(table, "innocent", "d", 0)
    // One party's many sessions, each with one kept withdrawal: the list is full.
    for (let k = 0; k < MAX_KEPT_WITHDRAWALS - 1; k++) keptFor(table, `x${k}`, `x${k}`, 1 + k)
    expect(table.withdrawalsKept).toBe(MAX_KEPT_WITHDRAWALS)
    keptFor(table, "more", `x${MAX_KEPT_WITHDRAWALS}`, MAX_KEPT_WITHDRAWALS + 1)
    expect(innocent.withdrawalKept).toBe(true)
  })

  it("on a tie at the largest, the share whose join filled the list loses its own oldest, not the older tied share", () => {
    const table = new OutboundRecords(SEED)
    const half = MAX_KEPT_WITHDRAWALS / 2
    const a: Array<OutboundRecord> = []
    for (let k = 0; k < half; k++) a.push(keptFor(table, `a${k}`, "a", k))
    const b: Array<OutboundRecord> = []
    for (let k = 0; k < half; k++) b.push(keptFor(table, `b${k}`, "b", half + k))
    // Routed again: b holds half - 1, a half, the list has one place.
    table.keepRoute(b[0]!, "b", 8, 10_000)
    keptFor(table, "c0", "c", 10_001)
    expect(table.withdrawalsKept).toBe(MAX_KEPT_WITHDRAWALS)
    // b's join fills it past the bound and ties a at `half`: b loses its own oldest.
    keptFor(table, "bNew", "b", 10_002)
    expect([a[0]!.withdrawalKept, b[1]!.withdrawalKept]).toEqual([true, false])
  })
})
