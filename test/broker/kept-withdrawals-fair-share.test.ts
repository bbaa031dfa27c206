/**
 * The withdrawals' list's fair share (OutboundRecords.linkKept,
 * KeptShares.ts; review revbh): while the list has room nobody's kept
 * withdrawal is dropped, however many one receiver holds (BH4); when it is
 * full, the one dropped is the oldest of the receiver holding the most, so
 * receivers that never confirm — even four sessions of one client — lose
 * their own, not an innocent receiver's older one (BH1); the drops are
 * logged at most once an hour, each line counting those since the last, on a
 * list that never empties too (BH2); and, under any mix of operations, the
 * shares sum to the list, which stays within its bound.
 */
import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { KEPT_DROPS_NOTICE_INTERVAL_MS, MAX_KEPT_WITHDRAWALS } from "../../src/broker/KeptWithdrawals.ts"
import { OutboundRecord } from "../../src/broker/OutboundRecord.ts"
import { OutboundRecords } from "../../src/broker/OutboundRecords.ts"
import { CANCELLED, keptFor, messageOf, noticedTable, SEED } from "../support/keptWithdrawals.ts"

describe("the withdrawals' list drops the oldest of the receiver holding the most, only when full (review revbh)", () => {
  it("BH1: four flooding receivers (one client's four sessions) filling the list lose their own oldest, not an innocent receiver's older one", () => {
    const table = new OutboundRecords(SEED)
    const innocent = keptFor(table, "innocent", "b", 0)
    const flooders = 4
    const floods: Array<Array<OutboundRecord>> = [[], [], [], []]
    let at = 1
    // Round after round, each flooder one more: the list fills at 4,096 and then each new one drops a flooder's.
    for (let n = 0; n < MAX_KEPT_WITHDRAWALS / flooders + 2; n++) {
      for (let r = 0; r < flooders; r++) floods[r]!.push(keptFor(table, `f${r}-${n}`, `flood${r}`, at++))
    }
    expect(table.withdrawalsKept).toBe(MAX_KEPT_WITHDRAWALS)
    expect(table.withdrawalsKeptFor("b")).toBe(1)
    expect(innocent.withdrawalKept).toBe(true)
    expect(table.oldestKeptWithdrawal).toBe(innocent)
    // Each flooder lost its own oldest ones: 4 × 1,026 + 1 joined, 4,096 kept.
    const dropped = flooders * (MAX_KEPT_WITHDRAWALS / flooders + 2) + 1 - MAX_KEPT_WITHDRAWALS
    expect(table.withdrawalsDroppedFull).toBe(dropped)
    expect(floods.map((f) => f.filter((record) => !record.withdrawalKept).length).reduce((a, b) => a + b, 0)).toBe(dropped)
    for (const f of floods) expect(f[f.length - 1]!.withdrawalKept).toBe(true)
  })

  it("BH4: one receiver holding far more than others while the list has room loses nothing; once full, it loses its own oldest", () => {
    const table = new OutboundRecords(SEED)
    const first = keptFor(table, "0", "busy", 0)
    for (let n = 1; n <= MAX_KEPT_WITHDRAWALS / 4; n++) keptFor(table, `${n}`, "busy", n)
    expect(table.withdrawalsKept).toBe(MAX_KEPT_WITHDRAWALS / 4 + 1)
    expect(first.withdrawalKept).toBe(true)
    const other = keptFor(table, "other", "b", 5_000)
    for (let n = MAX_KEPT_WITHDRAWALS / 4 + 1; n < MAX_KEPT_WITHDRAWALS - 1; n++) keptFor(table, `${n}`, "busy", 5_000 + n)
    expect([table.withdrawalsKept, table.withdrawalsDroppedFull, first.withdrawalKept]).toEqual([MAX_KEPT_WITHDRAWALS, 0, true])
    // Full: one more of b's drops busy's oldest (the largest share), though b's own is newer than it.
    keptFor(table, "other2", "b", 20_000)
    expect([first.withdrawalKept, other.withdrawalKept, table.withdrawalsKeptFor("b"), table.withdrawalsDroppedFull]).toEqual([false, true, 2, 1])
    expect(table.find("a", "0")).toBeUndefined()
  })

  it("a kept withdrawal routed again leaves its receiver's share: the next drop weighs the shares as they are now", () => {
    const table = new OutboundRecords(SEED)
    const x: Array<OutboundRecord> = []
    const y: Array<OutboundRecord> = []
    for (let n = 0; n < MAX_KEPT_WITHDRAWALS / 2; n++) {
      x.push(keptFor(table, `x${n}`, "x", 2 * n))
      y.push(keptFor(table, `y${n}`, "y", 2 * n + 1))
    }
    // x's first two routed again: x holds 2,046, y 2,048, so y is the largest when one more joins.
    table.keepRoute(x[0]!, "x", 8, 10_000)
    table.keepRoute(x[1]!, "x", 8, 10_000)
    expect([table.withdrawalsKeptFor("x"), table.withdrawalsKeptFor("y")]).toEqual([MAX_KEPT_WITHDRAWALS / 2 - 2, MAX_KEPT_WITHDRAWALS / 2])
    keptFor(table, "z0", "z", 10_001)
    keptFor(table, "z1", "z", 10_002)
    expect(table.withdrawalsDroppedFull).toBe(0)
    keptFor(table, "z2", "z", 10_003)
    // The list was full only at the third: y, holding the most, lost its oldest; x, whose oldest is older, none.
    expect([y[0]!.withdrawalKept, y[1]!.withdrawalKept, x[2]!.withdrawalKept, table.withdrawalsDroppedFull]).toEqual([false, true, true, 1])
    expect(["x", "y", "z"].map((r) => table.withdrawalsKeptFor(r))).toEqual([MAX_KEPT_WITHDRAWALS / 2 - 2, MAX_KEPT_WITHDRAWALS / 2 - 1, 3])
  })

  it("a full list drops a settled kept withdrawal (its give-back settled it) before one still waiting, the settled ones of the receiver holding the most settled first", () => {
    const table = new OutboundRecords(SEED)
    // x: its oldest still waiting, then 2,100 settled (the mailbox dropped their messages after a give-back).
    const waitingX = keptFor(table, "wx", "x", 0)
    const settledX: Array<OutboundRecord> = []
    for (let n = 0; n < 2_100; n++) {
      const record = keptFor(table, `sx${n}`, "x", 1 + n)
      table.settleKept(record, false)
      settledX.push(record)
    }
    // w: 5 settled, fewer than x's; y: waiting only, as many as fill the list.
    const settledW: Array<OutboundRecord> = []
    for (let n = 0; n < 5; n++) {
      const record = keptFor(table, `sw${n}`, "w", 3_000 + n)
      table.settleKept(record, true)
      settledW.push(record)
    }
    const y: Array<OutboundRecord> = []
    for (let n = table.withdrawalsKept; n < MAX_KEPT_WITHDRAWALS; n++) y.push(keptFor(table, `y${n}`, "y", 4_000 + n))
    expect([table.withdrawalsKept, table.withdrawalsKeptFor("x"), table.withdrawalsDroppedFull]).toEqual([MAX_KEPT_WITHDRAWALS, 2_101, 0])
    // Full: x holds the most, but its one still waiting stays; its earliest settled goes.
    keptFor(table, "y-more", "y", 9_000)
    expect([waitingX.withdrawalKept, settledX[0]!.withdrawalKept, settledX[1]!.withdrawalKept]).toEqual([true, false, true])
    expect([table.withdrawalsKeptFor("x"), table.withdrawalsDroppedFull]).toEqual([2_100, 1])
    // y holds the most waiting (1,991 > x's 1), yet the 2,104 settled left go first, wherever they are (x's, then w's).
    for (let n = 0; n < 2_099 + 5; n++) keptFor(table, `y-again${n}`, "y", 10_000 + n)
    expect(settledX.every((record) => !record.withdrawalKept)).toBe(true)
    expect(settledW.map((record) => record.withdrawalKept)).toEqual([false, false, false, false, false])
    expect(y.every((record) => record.withdrawalKept)).toBe(true)
    expect(waitingX.withdrawalKept).toBe(true)
    // None settled is left: now the receiver holding the most waiting (y) loses its own oldest.
    keptFor(table, "y-last", "y", 20_000)
    expect([y[0]!.withdrawalKept, waitingX.withdrawalKept, table.withdrawalsKeptFor("x")]).toEqual([false, true, 1])
  })

  it("BH2: drops are logged at most once per KEPT_DROPS_NOTICE_INTERVAL_MS, each line counting those since the last, though the list never empties", () => {
    const { fill, notices, table } = noticedTable()
    fill(MAX_KEPT_WITHDRAWALS + 1, 0)
    expect(notices).toHaveLength(1)
    expect(notices[0]).toContain("; 1 dropped since the last such line")
    // More drops within the hour: counted, not logged.
    fill(9, KEPT_DROPS_NOTICE_INTERVAL_MS - 1)
    expect(notices).toHaveLength(1)
    // A day's prune takes half (Receipts.prune: dropKept from the oldest), the list never empty.
    for (let k = 0; k < MAX_KEPT_WITHDRAWALS / 2; k++) table.dropKept(table.oldestKeptWithdrawal!)
    expect(table.withdrawalsKept).toBe(MAX_KEPT_WITHDRAWALS / 2)
    // Hours later it fills again: the first drop then is logged, with the nine untold before it.
    fill(MAX_KEPT_WITHDRAWALS / 2 + 1, 5 * KEPT_DROPS_NOTICE_INTERVAL_MS)
    expect(table.withdrawalsKept).toBe(MAX_KEPT_WITHDRAWALS)
    expect(notices).toHaveLength(2)
    expect(notices[1]).toContain("; 10 dropped since the last such line")
    expect(table.withdrawalsDroppedFull).toBe(11)
  })

  it("under any mix of keep, age, route again, forget, settle and drop below the bound, the shares sum to the list (the drops at the bound: KeptShares.model.test.ts)", () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant("keep" as const), id: fc.integer({ min: 0, max: 2_000 }), receiver: fc.integer({ min: 0, max: 2 }), direct: fc.boolean() }),
      fc.record({ kind: fc.constant("reroute" as const), id: fc.integer({ min: 0, max: 2_000 }), receiver: fc.integer({ min: 0, max: 2 }) }),
      fc.record({ kind: fc.constant("forget" as const), id: fc.integer({ min: 0, max: 2_000 }) }),
      fc.record({ kind: fc.constant("settle" as const), id: fc.integer({ min: 0, max: 2_000 }) }),
      fc.record({ kind: fc.constant("dropOldest" as const) })
    )
    fc.assert(
      fc.property(fc.array(op, { maxLength: 3_000 }), (ops) => {
        const table = new OutboundRecords(SEED)
        let at = 0
        for (const o of ops) {
          at++
          if (o.kind === "keep") {
            const record = table.claim(OutboundRecord.of("a", "t", messageOf(`${o.id}`), undefined))
            if (o.direct && !record.routed) {
              record.withdrawal = CANCELLED
              table.keepWithdrawal(record, at, `r${o.receiver}`)
            } else {
              table.keepRoute(record, `r${o.receiver}`, 7, at)
              record.withdrawal = CANCELLED
              table.keepWithdrawal(record, at)
              table.ageRoute(record, at)
            }
          } else if (o.kind === "reroute") {
            const record = table.find("a", `${o.id}`)
            if (record !== undefined) table.keepRoute(record, `r${o.receiver}`, 8, at)
          } else if (o.kind === "forget") {
            const record = table.find("a", `${o.id}`)
            if (record !== undefined) table.forgetWithdrawal(record)
          } else if (o.kind === "settle") {
            const record = table.find("a", `${o.id}`)
            if (record !== undefined) table.settleKept(record, false)
          } else {
            const oldest = table.oldestKeptWithdrawal
            if (oldest !== undefined) table.dropKept(oldest)
          }
          const shares = [0, 1, 2].map((r) => table.withdrawalsKeptFor(`r${r}`))
          expect(shares.reduce((a, b) => a + b, 0)).toBe(table.withdrawalsKept)
          expect(table.withdrawalsKept).toBeLessThanOrEqual(MAX_KEPT_WITHDRAWALS)
        }
      }),
      { numRuns: 30 }
    )
  })
})
