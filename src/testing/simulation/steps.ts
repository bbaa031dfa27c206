/**
 * Time and steps: how the driver moves the world. Only the driver advances
 * the TestClock. Each action is a *step*: forked behind a 1 ms sleep, then
 * the clock advanced by 1 ms, so TestClock runs it and everything it wakes
 * until the world is idle again — in the same order on every run. After
 * every advance, the checks that hold in an idle world are made.
 */
import { Duration, Effect, Fiber, FiberSet } from "effect"
import { TestClock } from "effect/testing"
import { ownedBy } from "../FiberWatch.ts"
import type { Pending } from "./types.ts"
import type { World } from "./world.ts"

/** Simulated time each step takes. */
const STEP_MS = 1

/** `input` in milliseconds. */
export const millisOf = (input: Duration.Input): number => Duration.toMillis(Duration.fromInputUnsafe(input))

/** Checks that hold whenever the world is idle and no fault is in progress. */
export const idleChecks = (world: World): Effect.Effect<void> =>
  Effect.gen(function*() {
    const { ledger } = world
    const current = world.state.broker
    if (current === undefined || world.state.lifecycleBusy > 0) return
    for (const link of world.links.values()) if (link.settling) return
    const count = yield* current.core.sessionCount
    const owners = new Set(ledger.registeredOwners())
    ledger.check(count === owners.size, "registry-mismatch", () =>
      `the broker has ${count} live session(s); registered connections belong to ${owners.size} (${
        [...owners].map((id) => ledger.nameOf(id)).join(", ")
      })`)
  })

/** Lets `duration` of simulated time pass, then makes the idle checks. */
export const advance = (world: World, duration: Duration.Input): Effect.Effect<void> =>
  Effect.andThen(TestClock.adjust(duration), idleChecks(world))

/** Runs `action` as one step (see the module comment) in `into`, as `owner`, and returns its fiber. */
export const step = <A, E>(
  world: World,
  action: Effect.Effect<A, E>,
  into: FiberSet.FiberSet<unknown, unknown> = world.steps,
  owner?: string
): Effect.Effect<Fiber.Fiber<A, E>> =>
  Effect.gen(function*() {
    const run = FiberSet.run(into, Effect.andThen(Effect.sleep(STEP_MS), action))
    const fiber = yield* (owner === undefined ? run : run.pipe(ownedBy(owner)))
    yield* advance(world, STEP_MS)
    return fiber
  })

/** A `Pending` handle on a step's fiber. */
export const pending = <A, E>(world: World, fiber: Fiber.Fiber<A, E>): Pending<A, E> => ({
  fiber,
  result: (within = Duration.minutes(15)) =>
    Effect.gen(function*() {
      const deadline = world.now() + millisOf(within)
      while (fiber.pollUnsafe() === undefined && world.now() < deadline) yield* advance(world, 100)
      if (fiber.pollUnsafe() === undefined) yield* Fiber.interrupt(fiber)
      return yield* Fiber.await(fiber)
    })
})

/**
 * Runs a world action (broker, lifecycle) as a step, noting `label` first,
 * and waits until it is done; an action that died is a `defect` (`label`
 * names it).
 */
export const worldStep = (world: World, label: string | undefined, action: Effect.Effect<void>): Effect.Effect<void> =>
  Effect.gen(function*() {
    if (label !== undefined) world.ledger.note(label)
    const fiber = yield* step(world, action)
    while (fiber.pollUnsafe() === undefined) yield* advance(world, 100)
    // A world action that dies (a host that cannot be built, …) is a defect, not a silent outcome.
    world.ledger.defectOf(label ?? "a world step", yield* Fiber.await(fiber))
  })
