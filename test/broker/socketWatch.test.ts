/**
 * `whenNoLongerOurs`, the broker's watch on its socket file, on a TestClock:
 * asked at once, then once per interval, and done the first time the answer
 * is "not ours".
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Ref } from "effect"
import { TestClock } from "effect/testing"
import { whenNoLongerOurs } from "../../src/broker/runBroker.ts"

describe("whenNoLongerOurs", () => {
  it.effect("asks at once and every interval on the Clock; completes the first time the file is not ours", () =>
    Effect.gen(function*() {
      const ours = yield* Ref.make(true)
      const asked = yield* Ref.make(0)
      const stillOurs = Ref.update(asked, (n) => n + 1).pipe(Effect.andThen(Ref.get(ours)))
      const watch = yield* Effect.forkChild(whenNoLongerOurs(stillOurs, "2 seconds"), { startImmediately: true })
      assert.strictEqual(yield* Ref.get(asked), 1, "asked at once")
      yield* TestClock.adjust("1999 millis")
      assert.strictEqual(yield* Ref.get(asked), 1, "not before the interval")
      yield* TestClock.adjust("1 millis")
      assert.strictEqual(yield* Ref.get(asked), 2)
      yield* TestClock.adjust("10 seconds")
      assert.strictEqual(yield* Ref.get(asked), 7)
      assert.isUndefined(watch.pollUnsafe(), "still ours: still watching")

      yield* Ref.set(ours, false)
      yield* TestClock.adjust("2 seconds")
      assert.isDefined(watch.pollUnsafe(), "done once the file is not ours")
      assert.strictEqual(yield* Ref.get(asked), 8)
      yield* TestClock.adjust("1 hour")
      assert.strictEqual(yield* Ref.get(asked), 8, "and asks no more")
    }))
})
