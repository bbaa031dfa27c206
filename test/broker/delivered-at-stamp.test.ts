/**
 * A message frame's `brokerDeliveredAt` is a stamp, as its `brokerReceivedAt` is (BrokerStamps): a message
 * handed over at once reads as delivered when it was received, also after the broker's clock stepped back —
 * the gap is the mailbox wait IntercomSession's askTiming reads, never negative (review revbu bu2).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import type { Seen } from "../support/controlWorld.ts"
import { steppedWorld } from "../support/steppedClock.ts"

const START = 1_000_000_000
const STEP = 5_000

/** `brokerDeliveredAt - brokerReceivedAt` of the frame of `id` among `frames`. */
const gapOf = (frames: ReadonlyArray<Seen>, id: string): number => {
  const frame = frames.find((f) => f.type === "message" && f.message?.id === id)
  const fields = new Map(Object.entries(frame?.message ?? {}))
  const received = fields.get("brokerReceivedAt")
  const delivered = fields.get("brokerDeliveredAt")
  assert.isNumber(received, "setup: brokerReceivedAt")
  assert.isNumber(delivered, "setup: brokerDeliveredAt")
  return typeof delivered === "number" && typeof received === "number" ? delivered - received : Number.NaN
}

const liveGap = (step: number) =>
  Effect.gen(function*() {
    const { w } = yield* steppedWorld(START, START - step)
    const m1 = message("m1")
    w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
    return gapOf(w.framesOf(w.b1), m1.id)
  })

describe("a message handed over at once is not delivered before it was received", () => {
  it.effect("the clock as it is: brokerDeliveredAt - brokerReceivedAt is 0", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* liveGap(0), 0)
    }))

  it.effect("after the clock stepped back: brokerDeliveredAt - brokerReceivedAt is not negative", () =>
    Effect.gen(function*() {
      assert.isAtLeast(yield* liveGap(STEP), 0)
    }))
})
