/**
 * A script that fails ends its run at once with its own error. The world it
 * leaves (a broker restarted after the clients, an ask outstanding) closes
 * with the clock moving: a client's orderly close waits on the clock (it
 * joins its reconnect attempt, which sleeps out its backoff), and under
 * TestClock only the driver moves time. Before, the close waited for ever and
 * the test ran into vitest's timeout instead of showing the failed assertion.
 * Each test has a tight timeout, so it fails, not hangs, if that comes back.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
import type { Ledger } from "../../src/testing/Ledger.ts"
import { Simulation } from "../../src/testing/Simulation.ts"
import { runSimulation } from "../../src/testing/Workload.ts"

/** A run's time limit here: a close that waits for ever runs into it; the runs take well under a second. */
const TIMEOUT = 15_000

/** The memory-mode broker restart the hang was found in: A's ask outstanding, B busy, the broker restarted. */
const world = {
  seed: 2,
  sessions: ["A", { name: "B", agent: { mode: "manual" as const } }],
  session: { askTimeoutMs: 30_000 },
  durability: "memory" as const
}

/** The scenario up to the restart, then `end`; the world's ledger goes to `seen`. */
const scriptEndingWith = <E>(seen: { ledger?: Ledger }, end: Effect.Effect<void, E>) =>
  Effect.gen(function*() {
    const sim = yield* Simulation
    seen.ledger = sim.ledger
    yield* sim.session("A").ask("B", "Retry POST too?")
    yield* sim.session("B").busyFor("3 seconds")
    yield* sim.broker.restart
    yield* sim.advance("2 seconds")
    yield* end
  })

/** The run's one reason for failing, and that its world was closed for it. */
const onlyReason = <A, E>(exit: Exit.Exit<A, E>, seen: { ledger?: Ledger }) => {
  assert.isTrue(Exit.isFailure(exit), "the run succeeded")
  assert.isTrue(seen.ledger?.trace.some((line) => line.includes("the run ended before finish: the world closes")))
  if (Exit.isSuccess(exit)) return undefined
  assert.strictEqual(exit.cause.reasons.length, 1, String(exit.cause))
  return exit.cause.reasons[0]
}

describe("a script that fails ends its run with its own error, and its world closes", () => {
  it.effect("a failed expect(...) in the script: the run dies with that assertion", () =>
    Effect.gen(function*() {
      const seen: { ledger?: Ledger } = {}
      const exit = yield* Effect.exit(runSimulation(world, scriptEndingWith(seen, Effect.sync(() => expect("Only GET").toBe("Only PUT")))))
      const reason = onlyReason(exit, seen)
      assert.strictEqual(reason?._tag, "Die")
      const defect: unknown = reason?._tag === "Die" ? reason.defect : undefined
      assert.instanceOf(defect, Error)
      assert.include(defect instanceof Error ? defect.message : "", "expected 'Only GET' to be 'Only PUT'")
    }), TIMEOUT)

  it.effect("a typed failure of the script is the run's failure", () =>
    Effect.gen(function*() {
      const seen: { ledger?: Ledger } = {}
      const exit = yield* Effect.exit(runSimulation(world, scriptEndingWith(seen, Effect.fail("no reply from B"))))
      const reason = onlyReason(exit, seen)
      assert.deepStrictEqual(reason?._tag === "Fail" ? reason.error : reason, "no reply from B")
    }), TIMEOUT)

  it.effect("a defect of the script is the run's defect", () =>
    Effect.gen(function*() {
      const seen: { ledger?: Ledger } = {}
      const exit = yield* Effect.exit(runSimulation(world, scriptEndingWith(seen, Effect.die("the reply did not arrive"))))
      const reason = onlyReason(exit, seen)
      assert.deepStrictEqual(reason?._tag === "Die" ? reason.defect : reason, "the reply did not arrive")
    }), TIMEOUT)

  it.effect("a script that interrupts itself: the run ends interrupted", () =>
    Effect.gen(function*() {
      const seen: { ledger?: Ledger } = {}
      const exit = yield* Effect.exit(runSimulation(world, scriptEndingWith(seen, Effect.interrupt)))
      assert.strictEqual(onlyReason(exit, seen)?._tag, "Interrupt")
    }), TIMEOUT)

  it.effect("a run interrupted from outside while its script waits: the interruption returns", () =>
    Effect.gen(function*() {
      const seen: { ledger?: Ledger } = {}
      const waiting = yield* Deferred.make<void>()
      const run = yield* Effect.forkChild(
        runSimulation(world, scriptEndingWith(seen, Effect.andThen(Deferred.succeed(waiting, undefined), Effect.never)))
      )
      yield* Deferred.await(waiting)
      const exit = yield* Fiber.interrupt(run).pipe(Effect.andThen(Fiber.await(run)))
      assert.strictEqual(onlyReason(exit, seen)?._tag, "Interrupt")
    }), TIMEOUT)
})
