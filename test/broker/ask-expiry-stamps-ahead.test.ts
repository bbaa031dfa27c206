/**
 * An ask's edge keeps its deadline on the stamps' scale (its mail's `brokerReceivedAt` plus its timeout, for
 * withdrawals and copies) but fires on the broker's clock at its own due time, the clock at receipt plus its
 * timeout (`AskEdge.dueAt`): once the stamps lead the clock — a clock stepped forward, then back — a new ask
 * still closes when its own timeout runs out, not when the clock catches up with the stamps (review revbu bu1).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { steppedWorld } from "../support/steppedClock.ts"

const START = 1_000_000_000
const HOUR = 60 * 60 * 1000

const openAfterTimeout = (step: number) =>
  Effect.gen(function*() {
    // A message while the clock reads `step` ahead (the stamps reach START + step), then the clock set right again.
    const { clock, w } = yield* steppedWorld(START + step, START, { askTimeout: "1 second" })
    const q = message("q", { expectsReply: true })
    w.batch(w.d, [{ type: "send", to: "b", message: q }])
    assert.strictEqual(w.router.stats().asks, 1, "setup: q's edge open")
    clock.now = START + 2_000 // twice q's one-second timeout
    w.router.expireAsks(clock.now)
    return w.router.stats().asks
  })

describe("an ask sent while the stamps lead the clock expires within its own timeout", () => {
  it.effect("the clock as it is: the edge has closed 2 s into a 1 s ask", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* openAfterTimeout(0), 0)
    }))

  it.effect("after the clock stepped forward an hour and back: the edge has closed 2 s into a 1 s ask", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* openAfterTimeout(HOUR), 0)
    }))
})
