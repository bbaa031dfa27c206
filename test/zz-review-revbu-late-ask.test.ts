/**
 * Review revbu bu1 probe: an ask's edge fires on the clock but its deadline is on the stamps' scale
 * (Asks.ts:427-429), so once the stamps run ahead of the clock — a clock stepped forward then back (NTP), or a
 * durable restart floored at a stored stamp up to a day ahead (Router.restoreStamps) — every NEW ask, whatever its
 * own timeout, stays open (and answerable) for that whole difference. Before stamps2 the edge was `now + timeout`.
 * The case on an unmoved clock passes; the stepped one fails on main.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "./support/broker.ts"
import { controlWorld as world, custodyFeatures } from "./support/controlWorld.ts"

const START = 1_000_000_000
const HOUR = 60 * 60 * 1000

const openAfterTimeout = (step: number) =>
  Effect.gen(function*() {
    const clock = { now: START + step }
    const w = yield* world(custodyFeatures, { askTimeout: "1 second" }, clock)
    // A message while the clock reads `step` ahead: the stamps reach START + step.
    w.batch(w.d, [{ type: "send", to: "b", message: message("m0") }])
    clock.now = START // the clock is set right again
    const q = message("q", { expectsReply: true })
    w.batch(w.d, [{ type: "send", to: "b", message: q }])
    assert.strictEqual(w.router.stats().asks, 1, "setup: q's edge open")
    clock.now = START + 2_000 // twice q's one-second timeout
    w.router.expireAsks(clock.now)
    return w.router.stats().asks
  })

describe("review revbu bu1: an ask sent after the stamps ran ahead of the clock expires within its own timeout", () => {
  it.effect("the clock as it is: the edge has closed 2 s into a 1 s ask", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* openAfterTimeout(0), 0)
    }))

  it.effect("after the clock stepped forward an hour and back: the edge has closed 2 s into a 1 s ask", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* openAfterTimeout(HOUR), 0)
    }))
})
