/**
 * The broker's age-ordered lists after its clock stepped back (an NTP step, a VM resumed): each is pruned from its
 * oldest end and the walk stops at the first entry younger than the cutoff, so it must stay in age order. An entry
 * kept after the step carries a reading earlier than the entries kept before it, yet sits behind them. The one rule
 * (OutboundRecords.keepRecord / keepRoute / linkKept, AgedMap.append): an entry kept at a reading below the list's
 * newest re-dates the entries past that reading to it, so they count from the step and the list stays in age order.
 * Here: the replay records (DeliveryRecords.prune), the routes (Receipts.prune's walk), the withdrawals kept past
 * their routes (OutboundRecords.pruneKept), the withdrawals a resend made a record forget (DeliveryRecords'
 * `forgotten`, an AgedMap) and AgedMap itself. On the TestClock: the clock is set back with `TestClock.setTime` and
 * each call is given the reading, as the broker's paths give it; no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect } from "effect"
import { TestClock } from "effect/testing"
import { AgedMap } from "../../src/broker/AgedMap.ts"
import { DeliveryRecords, type Outcome, recordKeyOf } from "../../src/broker/DeliveryRecords.ts"
import { OutboundRecord } from "../../src/broker/OutboundRecord.ts"
import { OutboundRecords } from "../../src/broker/OutboundRecords.ts"
import { DeliveryCode } from "../../src/protocol/delivery.ts"
import { message } from "../support/broker.ts"

const START = 1_000_000_000
/** How far the clock steps back: more than any window here. */
const STEP = 3 * 86_400_000
const HOUR = 3_600_000
const DAY = 86_400_000
const limits = { windowMs: 1_000, retentionMs: 10_000, maxRecords: 1_000, maxBytes: 1_000_000 }
const ok: Outcome = { ok: true, delivery: "socket_delivered" }
const CANCELLED: Outcome = { ok: false, code: DeliveryCode.DeliveryCancelled, reason: "cancelled", retryable: false }
const recordOf = (id: string) => OutboundRecord.of("s", "t", { ...message("m"), id }, undefined)

/** The clock's reading after setting it to `at`. */
const setTo = (at: number) => Effect.andThen(TestClock.setTime(at), Clock.currentTimeMillis)

/** Receipts.prune's walk over the routes: from the oldest, while each is past its hour. */
const pruneRoutes = (table: OutboundRecords, now: number): void => {
  for (let oldest = table.oldestRoute; oldest !== undefined && oldest.routedAt <= now - HOUR - 1; oldest = table.oldestRoute) {
    table.ageRoute(oldest, now)
  }
}

describe("age lists after the clock stepped back", () => {
  it.effect("DeliveryRecords.prune drops a record kept after the step once its retention passed", () =>
    Effect.gen(function*() {
      const records = new DeliveryRecords(limits)
      records.set(recordOf("ahead"), ok, yield* setTo(START + STEP))
      records.set(recordOf("behind"), ok, yield* setTo(START))
      records.prune(yield* setTo(START + limits.retentionMs + 1))
      assert.isFalse(records.table.find("s", "behind")?.recorded ?? false, "the record kept after the step outlived its retention")
      assert.strictEqual(records.size, 0)
    }))

  it.effect("a record kept before the step is kept its retention counted from the step", () =>
    Effect.gen(function*() {
      const records = new DeliveryRecords(limits)
      records.set(recordOf("ahead"), ok, yield* setTo(START + STEP))
      records.set(recordOf("behind"), ok, yield* setTo(START))
      const now = yield* setTo(START + limits.retentionMs)
      records.prune(now)
      assert.isDefined(records.get("s", "ahead", now))
      assert.isDefined(records.get("s", "behind", now))
    }))

  it.effect("a message's record and route, both kept after the step, both leave after their hour", () =>
    Effect.gen(function*() {
      const records = new DeliveryRecords({ ...limits, retentionMs: HOUR })
      const table = records.table
      let now = yield* setTo(START + STEP)
      records.set(recordOf("ahead"), ok, now)
      table.keepRoute(table.claim(recordOf("ahead")), "r", 1, now)
      now = yield* setTo(START)
      records.set(recordOf("behind"), ok, now)
      table.keepRoute(table.claim(recordOf("behind")), "r", 1, now)
      now = yield* setTo(START + HOUR + 1)
      records.prune(now)
      pruneRoutes(table, now)
      assert.deepStrictEqual([records.size, table.routes, table.size], [0, 0, 0], "a record or route outlived its hour")
    }))

  it.effect("a withdrawal kept past its route after the step leaves after its day", () =>
    Effect.gen(function*() {
      const table = new OutboundRecords()
      const kept = (id: string, at: number): OutboundRecord => {
        const record = table.claim(recordOf(id))
        record.withdrawal = CANCELLED
        table.keepWithdrawal(record, at, "r")
        return record
      }
      kept("ahead", yield* setTo(START + STEP))
      kept("behind", yield* setTo(START))
      assert.strictEqual(table.withdrawalsKept, 2)
      const now = yield* setTo(START + DAY + 1)
      table.pruneKept(now - DAY - 1, now)
      assert.strictEqual(table.withdrawalsKept, 0, "a withdrawal kept after the step outlived its day")
    }))

  it.effect("a withdrawal a resend made its record forget, noted after the step, is forgotten after its day", () =>
    Effect.gen(function*() {
      const records = new DeliveryRecords(limits)
      /** `id` sent, cancelled, and sent again at `at`: the resend makes the record forget the cancel. */
      const resent = (id: string, at: number): void => {
        records.set(recordOf(id), ok, at)
        records.rewrite("s", id, CANCELLED)
        records.set(OutboundRecord.of("s", "t", { ...message("again"), id }, undefined), ok, at)
      }
      resent("ahead", yield* setTo(START + STEP))
      resent("behind", yield* setTo(START))
      const before = OutboundRecord.of("s", "t", { ...message("m"), id: "behind" }, undefined)
      assert.isTrue(records.withdrawnBeforeResend(recordKeyOf("s", "behind"), START - 1, () => before), "nothing was noted")
      records.prune(yield* setTo(START + DAY + 1))
      assert.isFalse(records.withdrawnBeforeResend(recordKeyOf("s", "behind"), START - 1, () => before), "kept past its day")
    }))

  it.effect("AgedMap.expire takes an entry set after the step once past the cutoff", () =>
    Effect.gen(function*() {
      const map = new AgedMap<string, string>()
      map.set("ahead", "ahead", yield* setTo(START + STEP))
      map.set("behind", "behind", yield* setTo(START))
      assert.deepStrictEqual(map.expire((yield* setTo(START + 10)) - 10), ["ahead", "behind"])
      assert.strictEqual(map.size, 0)
    }))
})
