/**
 * The broker's ask expiry fiber (`ask-expiry-v1`, Broker.ts) sleeps until
 * the earliest deadline of an ask whose asker is told. Clock readings are
 * floats: a deadline a rounding error puts a few picoseconds after `now`
 * asked for a sleep that did not move the clock, and the fiber spun —
 * under TestClock for ever (a simulation's soak burned a minute of CPU per
 * ten seeds so). It sleeps whole milliseconds now. Here a Duration's
 * rounding to the nanosecond would wake it 0.4 ns short of a deadline, and
 * both asks still end at their deadlines. The asks' ends do not tell the
 * two sleeps apart (the asker's own round trip ends the spin here); the
 * sleeps the broker asks of its clock do: with the fractional sleep the
 * fiber asks for ones of no length, over and over, until that round trip.
 * (The soak that first showed it is test/testing/bus-workflow-full.test.ts,
 * whose seeds 1–10 took 62.7 s of CPU with the fractional sleep and 2.5 s
 * without.)
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Clock, Effect, Exit, Fiber, Queue } from "effect"
import { TestClock } from "effect/testing"
import { ReplyTimeout } from "../../src/session/errors.ts"
import { memoryWorld } from "../support/memoryWorld.ts"
import { recordingClock } from "../support/recordingClock.ts"

const TIMEOUT = 10_000

describe("the ask expiry fiber and a deadline a fraction of a millisecond away", () => {
  it.effect("two granted asks opened 0.6 ns apart, due at different deadlines, each end with ReplyTimeout at its own deadline, and the broker never sleeps less than a millisecond meanwhile", () =>
    Effect.gen(function*() {
      const recorded = recordingClock(yield* Clock.Clock)
      const world = yield* memoryWorld({}, { brokerClock: recorded.clock })
      const first = yield* world.session("first")
      const second = yield* world.session("second")
      const answerer = yield* world.session("answerer")
      assert.include((yield* first.client.status).features, "ask-expiry-v1")
      const start = yield* Clock.currentTimeMillis
      // The broker reads the first ask at `start`: due at start + TIMEOUT.
      const asking = yield* Effect.forkChild(first.session.ask({ to: "answerer", message: "well?", timeoutMs: TIMEOUT }))
      yield* Queue.take(answerer.inbound)
      // The second, 0.6 ns later and due sooner, wakes the fiber; once it expires, the fiber sleeps toward the
      // first's deadline from a clock 0.6 ns past a millisecond: 4,999.9999994 ms, which a Duration rounds to
      // the nanosecond below — the fiber woke 0.4 ns short, and a 0.4 ns sleep is none.
      yield* TestClock.setTime(start + 6e-7)
      const sooner = yield* Effect.forkChild(second.session.ask({ to: "answerer", message: "and you?", timeoutMs: TIMEOUT / 2 }))
      yield* Queue.take(answerer.inbound)
      yield* TestClock.adjust(TIMEOUT / 2)
      assert.instanceOf(yield* Effect.flip(Fiber.join(sooner)), ReplyTimeout)
      assert.isUndefined(asking.pollUnsafe(), "the first ask ended before its deadline")
      yield* TestClock.adjust(TIMEOUT / 2)
      const exit = asking.pollUnsafe()
      assert.isDefined(exit, "the first ask still waits at its deadline")
      const error = exit !== undefined && Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
      assert.instanceOf(error, ReplyTimeout)
      // A sleep under a millisecond is one a deadline's fraction asked for: the fiber that asks it spins.
      const short = recorded.sleeps.filter((ms) => ms < 1)
      assert.strictEqual(short.length, 0, `${short.length} of the broker's ${recorded.sleeps.length} sleeps were under 1 ms`)
    }), 20_000)
})
