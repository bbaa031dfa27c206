/** scopedWithGrace: a broker whose shutdown hangs still ends (exit 1) instead of lingering. */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { ExitCode, exitCodeOf } from "../../src/cli/exit.ts"
import { scopedWithGrace } from "../../src/cli/shutdown.ts"
import { step } from "../support/steps.ts"

const withGrace = scopedWithGrace("3 seconds")

describe("scopedWithGrace", () => {
  it.effect("runs the body, then closes its Scope", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const result = yield* Effect.gen(function*() {
        yield* Effect.addFinalizer(() => Effect.sync(() => log.push("closed")))
        return 42
      }).pipe(withGrace)
      assert.strictEqual(result, 42)
      assert.deepStrictEqual(log, ["closed"])
    }))

  it.effect("an interrupted body still closes its Scope; the outcome is interruption (exit 0)", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const fiber = yield* step(
        Effect.gen(function*() {
          yield* Effect.addFinalizer(() => Effect.sync(() => log.push("closed")))
          return yield* Effect.never
        }).pipe(withGrace)
      )
      yield* Fiber.interrupt(fiber)
      const exit = yield* Fiber.await(fiber)
      assert.isTrue(Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause))
      assert.strictEqual(exitCodeOf(exit), 0)
      assert.deepStrictEqual(log, ["closed"])
    }))

  it.effect("a finalizer that never completes is abandoned after the grace period: exit 1", () =>
    Effect.gen(function*() {
      const fiber = yield* step(
        Effect.gen(function*() {
          yield* Effect.addFinalizer(() => Effect.never)
          return yield* Effect.never
        }).pipe(withGrace)
      )
      yield* step(Fiber.interrupt(fiber)) // as SIGTERM does; the grace period starts in this step
      yield* TestClock.adjust("2999 millis")
      assert.isUndefined(fiber.pollUnsafe(), "still waiting within the grace period")
      yield* TestClock.adjust("1 millis")
      const exit = yield* Fiber.await(fiber)
      assert.strictEqual(exitCodeOf(exit), 1)
      assert.isTrue(Exit.isFailure(exit) && Cause.squash(exit.cause) instanceof ExitCode)
    }))

  it.effect("the same after a body that ended by itself (idle exit)", () =>
    Effect.gen(function*() {
      const fiber = yield* step(Effect.addFinalizer(() => Effect.never).pipe(withGrace))
      yield* TestClock.adjust("2999 millis")
      assert.isUndefined(fiber.pollUnsafe(), "still waiting within the grace period")
      yield* TestClock.adjust("1 millis")
      assert.strictEqual(exitCodeOf(yield* Fiber.await(fiber)), 1)
    }))
})
