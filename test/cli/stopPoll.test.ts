/**
 * How `intercom broker stop` waits for the broker to go away, under a
 * TestClock: a look every 100 ms, success at the first look that finds it
 * gone, and failure once 5 s have passed. (test/cli/broker.process.test.ts
 * runs `broker stop` against a real broker.)
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { pollUntilStopped } from "../../src/cli/commands.ts"

/** A `stopped` check that records when it looked and answers `gone(now)`. */
const recorder = (gone: (now: number) => boolean) => {
  const looks: Array<number> = []
  const stopped = Effect.map(Clock.currentTimeMillis, (now) => {
    looks.push(now)
    return gone(now)
  })
  return { looks, stopped }
}

describe("pollUntilStopped", () => {
  it.effect("looks every 100 ms and answers true at the first look that finds the broker gone", () =>
    Effect.gen(function*() {
      const { looks, stopped } = recorder((now) => now >= 250)
      const fiber = yield* Effect.forkChild(pollUntilStopped(stopped))
      yield* TestClock.adjust("10 seconds")
      assert.isTrue(yield* Fiber.join(fiber))
      assert.deepStrictEqual(looks, [0, 100, 200, 300])
    }))

  it.effect("answers false once 5 s have passed, after one last look", () =>
    Effect.gen(function*() {
      const { looks, stopped } = recorder(() => false)
      const fiber = yield* Effect.forkChild(pollUntilStopped(stopped))
      yield* TestClock.adjust("4900 millis")
      assert.isUndefined(fiber.pollUnsafe(), "still looking at 4.9 s")
      yield* TestClock.adjust("10 seconds")
      assert.isFalse(yield* Fiber.join(fiber))
      assert.deepStrictEqual(looks, Array.from({ length: 52 }, (_, i) => i * 100))
    }))
})
