/**
 * Review revby by3: stats-v1 `asks.oldestAgeMs` is the broker's clock less the oldest edge's `openedAt`
 * (Stats.snapshot, then AskEdges.oldestOpenedAt) — but `openedAt` is a stamp since review revbu bu1, so while the
 * stamps lead the clock (a clock stepped forward, then back) an ask open for 5 s reads 0 ms old; observe-v1's
 * `askedAt`/`deadline` were stamps too. Now both are on the clock (AskEdges.askedAtOf, dueOf).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { steppedWorld } from "../support/steppedClock.ts"

const START = 1_000_000_000
const HOUR = 60 * 60 * 1000

const ageAfterFiveSeconds = (step: number) =>
  Effect.gen(function*() {
    // The stamps reach START + step, then the clock is set right again.
    const { clock, w } = yield* steppedWorld(START + step, START, { askTimeout: "1 minute" })
    w.batch(w.d, [{ type: "send", to: "b", message: message("q", { expectsReply: true }) }])
    assert.strictEqual(w.router.stats().asks, 1, "setup: q's edge open")
    clock.now = START + 5_000
    return w.router.metrics().asks.oldestAgeMs
  })

describe("review revby by3: the oldest open ask's age is on the clock", () => {
  it.effect("the clock as it is: an ask open 5 s reads 5000 ms old", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* ageAfterFiveSeconds(0), 5_000)
    }))

  it.effect("after the clock stepped forward an hour and back: an ask open 5 s reads 5000 ms old", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* ageAfterFiveSeconds(HOUR), 5_000)
    }))
})

const observedAfterFiveSeconds = (step: number) =>
  Effect.gen(function*() {
    // The stamps reach START + step, then the clock is set right again.
    const { clock, w } = yield* steppedWorld(START + step, START, { askTimeout: "1 minute" })
    const q = message("q", { expectsReply: true })
    w.batch(w.d, [{ type: "send", to: "b", message: q }])
    clock.now = START + 5_000
    const snapshot = w.router.observe.snapshot(clock.now)
    const ask = snapshot.asks.find((a) => a.messageId === q.id) ?? assert.fail("setup: q is observed open")
    return { age: snapshot.at - (ask.askedAt ?? Number.NaN), left: ask.deadline - snapshot.at }
  })

describe("review revby by3: observe-v1's open asks are on the snapshot's clock (docs/protocol.md: times are broker clock)", () => {
  it.effect("the clock as it is: an ask open 5 s of 60 s reads 5 s old, closing in 55 s", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* observedAfterFiveSeconds(0), { age: 5_000, left: 55_000 })
    }))

  it.effect("after the clock stepped forward an hour and back: an ask open 5 s of 60 s reads 5 s old, closing in 55 s", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* observedAfterFiveSeconds(HOUR), { age: 5_000, left: 55_000 })
    }))
})
