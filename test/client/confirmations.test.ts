/**
 * Confirmations.ts: the reader's `owe` never waits for a write, the fiber
 * writes the newest count, and `flush` writes a count whose write the close
 * cut short.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { Confirmations } from "../../src/client/Confirmations.ts"

describe("Confirmations", () => {
  it.effect("owe returns while a write waits, and the next write carries only the newest count", () =>
    Effect.gen(function*() {
      const written: Array<number> = []
      const gate = yield* Deferred.make<void>()
      const confirmations = new Confirmations((frames) =>
        Effect.andThen(Effect.sync(() => written.push(frames)), Deferred.await(gate))
      )
      const fiber = yield* Effect.forkChild(confirmations.run)
      confirmations.owe(3)
      yield* Effect.yieldNow
      assert.deepStrictEqual(written, [3]) // its write now waits on the gate
      confirmations.owe(5) // the reader goes on: nothing here waits
      confirmations.owe(8)
      yield* Deferred.succeed(gate, undefined)
      yield* Effect.yieldNow
      yield* Effect.yieldNow
      assert.deepStrictEqual(written, [3, 8])
      yield* Fiber.interrupt(fiber)
    }))

  it.effect("flush writes the count owed again when the fiber was stopped in the middle of its write", () =>
    Effect.gen(function*() {
      const started: Array<number> = []
      const completed: Array<number> = []
      const gate = yield* Deferred.make<void>()
      const confirmations = new Confirmations((frames) =>
        Effect.sync(() => started.push(frames)).pipe(
          Effect.andThen(Deferred.await(gate)),
          Effect.andThen(Effect.sync(() => completed.push(frames)))
        )
      )
      const fiber = yield* Effect.forkChild(confirmations.run)
      confirmations.owe(4)
      yield* Effect.yieldNow
      yield* Fiber.interrupt(fiber) // the close stops it mid-write
      yield* Deferred.succeed(gate, undefined)
      yield* confirmations.flush
      assert.deepStrictEqual(started, [4, 4])
      assert.deepStrictEqual(completed, [4])
      yield* confirmations.flush // written now: nothing more
      assert.deepStrictEqual(started, [4, 4])
    }))
})
