/**
 * The replay records' prune after the broker's clock stepped back (an NTP step, a VM resumed). Records sit on one
 * age list in the order they were kept, and `DeliveryRecords.prune` walks it from the oldest while each is past the
 * retention. A record kept before the step carries a reading the clock reads again only later, so the walk stopped
 * there, and every record kept after the step — older by the clock — outlived its retention behind it, for as long
 * as the step. Records kept at readings past the clock are now re-dated to it when a record is kept below them
 * (DeliveryRecords.keep), so the list stays in age order. On the TestClock: the clock is set back with
 * `TestClock.setTime`, and each call is given its reading, as the broker's send path gives it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect } from "effect"
import { TestClock } from "effect/testing"
import { DeliveryRecords } from "../../src/broker/DeliveryRecords.ts"
import { OutboundRecord } from "../../src/broker/OutboundRecord.ts"
import { message } from "../support/broker.ts"

const START = 1_000_000_000
/** How far the clock steps back: more than the retention, as an hour's step is past a 10 s one. */
const STEP = 60_000
const limits = { windowMs: 1_000, retentionMs: 10_000, maxRecords: 1_000, maxBytes: 1_000_000 }
const ok = { ok: true, delivery: "socket_delivered" } as const
const record = (id: string) => OutboundRecord.of("s", "t", { ...message("m"), id }, undefined)

/** A record "ahead" kept at START + STEP, the clock set back to START, a record "behind" kept there. */
const steppedBack = Effect.gen(function*() {
  const records = new DeliveryRecords(limits)
  yield* TestClock.setTime(START + STEP)
  records.set(record("ahead"), ok, yield* Clock.currentTimeMillis)
  yield* TestClock.setTime(START)
  records.set(record("behind"), ok, yield* Clock.currentTimeMillis)
  return records
})

describe("DeliveryRecords.prune after the clock stepped back", () => {
  it.effect("a record kept after the step goes past its retention, though one kept before the step reads younger", () =>
    Effect.gen(function*() {
      const records = yield* steppedBack
      yield* TestClock.setTime(START + limits.retentionMs + 1)
      records.prune(yield* Clock.currentTimeMillis)
      assert.notStrictEqual(records.table.find("s", "behind")?.recorded, true, "the record kept after the step outlived its retention")
      assert.strictEqual(records.size, 0, "a record outlived its retention from the step")
    }))

  it.effect("the record kept before the step is still kept its retention from the step", () =>
    Effect.gen(function*() {
      const records = yield* steppedBack
      yield* TestClock.setTime(START + limits.retentionMs)
      const now = yield* Clock.currentTimeMillis
      records.prune(now)
      assert.strictEqual(records.size, 2)
      assert.isDefined(records.get("s", "ahead", now))
      assert.isDefined(records.get("s", "behind", now))
    }))
})
