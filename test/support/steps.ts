/**
 * Steps under `it.effect`'s TestClock: an action is forked behind a 1 ms
 * sleep and the clock advanced 1 ms, so TestClock runs the action and every
 * fiber it wakes, transitively, until all of them are suspended again. When a
 * step returns, nothing more happens until the next action or timer — unless
 * fibers that no step woke are still running (`settleWithin`).
 */
import { Data, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"

/** The simulated time one step takes. */
export const STEP_MS = 1

/**
 * Runs `action` as one step of the world and returns its fiber: when this
 * returns, the action and everything it woke are suspended (or done).
 */
export const step = <A, E, R>(action: Effect.Effect<A, E, R>): Effect.Effect<Fiber.Fiber<A, E>, never, R> =>
  Effect.gen(function*() {
    const fiber = yield* Effect.forkChild(Effect.andThen(Effect.sleep(STEP_MS), action), { startImmediately: true })
    yield* TestClock.adjust(STEP_MS)
    return fiber
  })

export class StillRunning extends Data.TaggedError("StillRunning")<{ readonly what: string }> {
  override get message(): string {
    return `${this.what} had not completed when the world went idle (it waits for a timer or for another action)`
  }
}

/** Runs `action` as one step; it must complete within it (it waits on nothing but the world). */
export const settle = <A, E, R>(
  action: Effect.Effect<A, E, R>,
  what = "the action"
): Effect.Effect<A, E | StillRunning, R> => settleWithin(1, action, what)

/**
 * Runs `action` as one step, then as many empty steps as it still needs, at
 * most `steps` in all; it must complete by then. For a world in which fibers
 * run on outside any step (woken by a test fiber that yields to them, with a
 * small `Scheduler.MaxOpsBeforeYield`): TestClock waits only for what a step
 * woke, so the action may be behind such a fiber when its first step ends.
 * Deterministic still: no step waits on real time.
 */
export const settleWithin = <A, E, R>(
  steps: number,
  action: Effect.Effect<A, E, R>,
  what = "the action"
): Effect.Effect<A, E | StillRunning, R> =>
  Effect.gen(function*() {
    const fiber = yield* step(action)
    for (let taken = 1; taken < steps && fiber.pollUnsafe() === undefined; taken++) yield* step(Effect.void)
    if (fiber.pollUnsafe() === undefined) {
      yield* Fiber.interrupt(fiber)
      return yield* new StillRunning({ what })
    }
    return yield* Fiber.join(fiber)
  })
