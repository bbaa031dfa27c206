/**
 * Review revbh probes (merge wdshare, b6fe8924): the per-receiver share of
 * the withdrawals' list (KeptShares.ts, OutboundRecords.linkKept).
 * BH1, BH2 and BH4 FAIL on main (they state the rule the merge claims); BH-S is a
 * model check of the share bookkeeping that passes (sound).
 */
import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import type { Outcome } from "../src/broker/DeliveryRecords.ts"
import {
  MAX_KEPT_WITHDRAWALS,
  MAX_KEPT_WITHDRAWALS_PER_RECEIVER,
  OutboundRecord,
  OutboundRecords
} from "../src/broker/OutboundRecords.ts"
import { DeliveryCode } from "../src/protocol/delivery.ts"
import type { Message } from "../src/protocol/frames.ts"

const SEED = 12345
const CANCELLED: Outcome = { ok: false, code: DeliveryCode.DeliveryCancelled, reason: "cancelled", retryable: false }
const messageOf = (id: string): Message => ({ id, timestamp: 0, content: { text: "t" } })

/** "a"'s message `id`, routed to `receiverKey` at `at`, withdrawn while it waited, its route aged out. */
const keptFor = (table: OutboundRecords, id: string, receiverKey: string, at: number): OutboundRecord => {
  const record = table.claim(OutboundRecord.of("a", "t", messageOf(id), undefined))
  table.keepRoute(record, receiverKey, 7, at)
  record.withdrawal = CANCELLED
  table.keepWithdrawal(record, at)
  table.ageRoute(record, at)
  return record
}

describe("review revbh: kept withdrawals' shares", () => {
  it("BH1: four never-confirming receivers (one party's four sessions) at their shares do not push an innocent receiver's kept withdrawal off the list", () => {
    const table = new OutboundRecords(SEED)
    const innocent = keptFor(table, "innocent", "b", 0)
    let at = 1
    for (let r = 0; r < MAX_KEPT_WITHDRAWALS / MAX_KEPT_WITHDRAWALS_PER_RECEIVER; r++) {
      for (let n = 0; n < MAX_KEPT_WITHDRAWALS_PER_RECEIVER; n++) keptFor(table, `f${r}-${n}`, `flood${r}`, at++)
    }
    // The flooders hold 4,096; b holds one. The rule: a receiver that never confirms loses its own, not b's.
    expect(table.withdrawalsKeptFor("b")).toBe(1)
    expect(innocent.withdrawalKept).toBe(true)
  })

  it("BH2: the list's overflow is logged again when it fills again after a prune (docs/architecture.md: 'logged once each time it fills')", () => {
    const notices: Array<string> = []
    const table = new OutboundRecords(SEED, (line) => notices.push(line))
    let at = 0
    const fill = (count: number) => {
      for (let n = 0; n < count; n++) {
        const i = at++
        keptFor(table, `m${i}`, `r${i % 8}`, i)
      }
    }
    fill(MAX_KEPT_WITHDRAWALS + 1)
    expect(notices).toHaveLength(1)
    // A day's prune takes half (Receipts.prune: dropKept from the oldest), the list never empty.
    for (let n = 0; n < MAX_KEPT_WITHDRAWALS / 2; n++) table.dropKept(table.oldestKeptWithdrawal!)
    expect(table.withdrawalsKept).toBe(MAX_KEPT_WITHDRAWALS / 2)
    // A second episode, hours later: it fills again and drops other receivers' withdrawals.
    fill(MAX_KEPT_WITHDRAWALS / 2 + 1)
    expect(table.withdrawalsKept).toBe(MAX_KEPT_WITHDRAWALS)
    expect(notices).toHaveLength(2)
  })

  it("BH4: a receiver past its share while the list has room loses nothing (the share bites only when the list is full)", () => {
    const table = new OutboundRecords(SEED)
    const first = keptFor(table, "0", "busy", 0)
    for (let n = 1; n <= MAX_KEPT_WITHDRAWALS_PER_RECEIVER; n++) keptFor(table, `${n}`, "busy", n)
    // 1,025 kept of 4,096 allowed, no other receiver: before the merge all were kept; now busy's oldest is dropped.
    expect(table.withdrawalsKept).toBe(MAX_KEPT_WITHDRAWALS_PER_RECEIVER + 1)
    expect(first.withdrawalKept).toBe(true)
  })

  it("BH-S (sound): under any mix of keep, age, route again, forget and drop, the shares sum to the list, which stays within its bound", () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant("keep" as const), id: fc.integer({ min: 0, max: 2_000 }), receiver: fc.integer({ min: 0, max: 2 }), direct: fc.boolean() }),
      fc.record({ kind: fc.constant("reroute" as const), id: fc.integer({ min: 0, max: 2_000 }), receiver: fc.integer({ min: 0, max: 2 }) }),
      fc.record({ kind: fc.constant("forget" as const), id: fc.integer({ min: 0, max: 2_000 }) }),
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
