/**
 * The broker's timer fibers (Broker.ts) and a deadline a fraction of a
 * millisecond away. Each sleeps from the clock's reading to its next
 * deadline; readings are floats and a Duration counts nanoseconds, so two
 * deadlines set 0.4 ns apart leave the fiber, woken at the first, a sleep of
 * no length toward the second (as does a sleep that the rounding to the
 * nanosecond ends 0.4 ns short) — it woke at once and asked again, spinning
 * until something else moved the clock (under TestClock, while nothing does:
 * here the recording clock's guard, `SPIN_GUARD`). They sleep whole
 * milliseconds now (`sleepWhole`). Here the broker's clock records every
 * sleep asked of it, and none may be under a millisecond: the replace
 * staging fiber (`delivery-v1`), the live view's (`observe-v1`) and the
 * registration timeout's (P15), and the idle watcher's (P92). The ask expiry
 * fiber's own test is ask-expiry-fraction.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Queue, Stream } from "effect"
import { TestClock } from "effect/testing"
import { ObserveClient } from "../../src/observe/ObserveClient.ts"
import { DELIVERY_V1 } from "../../src/protocol/features.ts"
import type { Message } from "../../src/protocol/frames.ts"
import { message, messageFor, type RegisterOptions } from "../support/broker.ts"
import { advance, withMemoryBroker } from "../support/memory.ts"
import { recordingClock } from "../support/recordingClock.ts"
import type { WireClient } from "../support/wire.ts"

/** 0.4 ns: less than half a nanosecond, which a Duration rounds to nothing. */
const FRACTION = 4e-7

const modern = (sessionId: string): RegisterOptions => ({ sessionId, name: sessionId, frame: { features: [DELIVERY_V1] } })

/** A replace send, answered (`delivery_queued`). */
const stage = (client: WireClient, to: string, msg: Message, threadId: string) =>
  Effect.andThen(
    client.send({ type: "send", to, message: msg, delivery: "queue", queueMode: "replace", threadId }),
    client.next("delivery_queued", (frame) => frame.messageId === msg.id)
  )

/** Fails naming how many of the recorded sleeps were under a millisecond, if any were. */
const noShortSleeps = (sleeps: ReadonlyArray<number>): void => {
  const short = sleeps.filter((ms) => ms < 1).length
  assert.strictEqual(short, 0, `${short} of the broker's ${sleeps.length} sleeps were under 1 ms`)
}

describe("the broker's timer fibers and deadlines a fraction of a millisecond apart", () => {
  it.effect("replace staging: two messages staged 0.4 ns apart are both delivered, and the broker never sleeps less than a millisecond", () =>
    Effect.gen(function*() {
      const recorded = recordingClock(yield* Clock.Clock)
      const window = 1_500
      const broker = yield* withMemoryBroker({ replaceWindow: window, brokerClock: recorded.clock })
      const a = yield* broker.session(modern("a"))
      const b = yield* broker.session(modern("b"))
      const start = yield* Clock.currentTimeMillis
      const first = message("first")
      const second = message("second")
      yield* stage(a.client, "b", first, "x")
      // Due 0.4 ns after the first: woken at the first's deadline, the fiber has 0.4 ns to sleep.
      yield* TestClock.setTime(start + FRACTION)
      yield* stage(a.client, "b", second, "y")
      yield* advance(window + 1)
      yield* messageFor(b.client, first.id)
      yield* messageFor(b.client, second.id)
      noShortSleeps(recorded.sleeps)
    }))

  it.effect("the live view: two watches started 0.6 ns apart each get their next frame, and the broker never sleeps less than a millisecond", () =>
    Effect.gen(function*() {
      const recorded = recordingClock(yield* Clock.Clock)
      const interval = 1_000
      const broker = yield* withMemoryBroker({ brokerClock: recorded.clock })
      // A watch's first element, its snapshot, comes from the same step that set the watch.
      const watch = Effect.gen(function*() {
        const seen = yield* Queue.unbounded<unknown>()
        yield* ObserveClient.watch({ socketPath: broker.address, dial: broker.dial, intervalMs: interval }).pipe(
          Stream.runForEach((element) => Queue.offer(seen, element)),
          Effect.forkScoped
        )
        yield* Queue.take(seen)
        return seen
      })
      const start = yield* Clock.currentTimeMillis
      const first = yield* watch
      // A new watch wakes the fiber (it may be due sooner), which sleeps toward the first's deadline from a
      // clock 0.6 ns past a millisecond: 999.9999994 ms, which a Duration rounds to the nanosecond below — it
      // wakes 0.4 ns short of that deadline, with 0.4 ns to sleep.
      yield* TestClock.setTime(start + 6e-7)
      const second = yield* watch
      yield* advance(interval + 1)
      yield* Queue.take(first)
      yield* Queue.take(second)
      noShortSleeps(recorded.sleeps)
    }))

  it.effect("registration timeout: two connections dialled 0.4 ns apart, and the broker never sleeps less than a millisecond", () =>
    Effect.gen(function*() {
      const recorded = recordingClock(yield* Clock.Clock)
      const timeout = 1_000
      const broker = yield* withMemoryBroker({ registrationTimeout: timeout, brokerClock: recorded.clock })
      const start = yield* Clock.currentTimeMillis
      yield* broker.connect("first")
      // Due 0.4 ns after the first: woken at the first's deadline, the fiber has 0.4 ns to sleep.
      yield* TestClock.setTime(start + FRACTION)
      yield* broker.connect("second")
      yield* advance(timeout + 1)
      noShortSleeps(recorded.sleeps)
    }))

  it.effect("idle exit: a session that registered and left 0.4 ns after startup, and the broker never sleeps less than a millisecond", () =>
    Effect.gen(function*() {
      const recorded = recordingClock(yield* Clock.Clock)
      const idle = 1_000
      const broker = yield* withMemoryBroker({ idleExit: idle, brokerClock: recorded.clock })
      const exit = yield* Effect.forkChild(broker.broker.idleExit, { startImmediately: true })
      const start = yield* Clock.currentTimeMillis
      // The watcher sleeps toward startup + idle; the leave 0.4 ns later moves the idle period's start,
      // so, woken at the first deadline, it has 0.4 ns to sleep.
      yield* TestClock.setTime(start + FRACTION)
      const a = yield* broker.session(modern("a"))
      yield* a.client.destroy
      yield* advance(idle + 1)
      assert.isDefined(exit.pollUnsafe(), "the broker did not exit within a millisecond of its idle deadline")
      noShortSleeps(recorded.sleeps)
    }))
})
