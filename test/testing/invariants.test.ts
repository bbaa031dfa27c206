/**
 * The invariants have teeth: deliberately broken brokers are caught and
 * reported with their seed and a shrunk, replayable workload; a run replays
 * exactly from its seed; the fiber watch sees what outlives its owner.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Scope } from "effect"
import { dropNthMessage, duplicateNthMessage, swapFirstTwoMessages } from "../../src/testing/BrokenBuilds.ts"
import { makeFiberWatch, ownedBy, watchFibers } from "../../src/testing/FiberWatch.ts"
import { Prng } from "../../src/testing/Prng.ts"
import type { AgentBehaviour } from "../../src/testing/SimAgent.ts"
import { Simulation } from "../../src/testing/Simulation.ts"
import { soak } from "../../src/testing/Soak.ts"
import { generateWorkload, runSimulation, runWorkload } from "../../src/testing/Workload.ts"

// Memory mode: a message a broken build drops is then a `silent-loss` even when its broker crashes
// later (in durable mode that broker's crash is no excuse either, and the loss is a `crash-loss`).
describe("a deliberately broken broker is caught", () => {
  it.effect("a routed message dropped silently: silent-loss, with the seed and a minimal workload", () =>
    Effect.gen(function*() {
      const summary = yield* soak({ seeds: 20, maxFailures: 1, config: { brokerFault: dropNthMessage(3), durability: "memory" } })
      const failure = summary.failures[0]
      assert.isDefined(failure)
      if (failure === undefined) return
      assert.strictEqual(failure.report.violations[0]?.kind, "silent-loss")
      assert.match(failure.description, new RegExp(`^simulation seed ${failure.seed} failed: silent-loss: `))
      assert.include(failure.description, `npm run sim -- --seed ${failure.seed}`)
      // Shrunk: a handful of operations instead of 40.
      const minimal = /minimal workload \((\d+) op\(s\)/.exec(failure.description)
      assert.isTrue(minimal !== null && Number(minimal[1]) <= 4, failure.description)
      // Replaying the seed reproduces the failure exactly.
      const again = yield* runWorkload({ seed: failure.seed, brokerFault: dropNthMessage(3), durability: "memory" })
      assert.deepStrictEqual(again.trace, failure.report.trace)
    }), 120_000) // a soak, a shrink and a replay: beside other CPU-bound files it has taken 60 s

  it.effect("a routed message written twice: duplicate-on-wire", () =>
    Effect.gen(function*() {
      const summary = yield* soak({ seeds: 20, maxFailures: 1, shrink: false, config: { brokerFault: duplicateNthMessage(2) } })
      assert.strictEqual(summary.failures[0]?.report.violations[0]?.kind, "duplicate-on-wire")
    }))

  it.effect("two messages of one sender swapped: fifo", () =>
    Effect.gen(function*() {
      const summary = yield* soak({ seeds: 20, maxFailures: 1, shrink: false, config: { brokerFault: swapFirstTwoMessages(), durability: "memory" } })
      assert.strictEqual(summary.failures[0]?.report.violations[0]?.kind, "fifo")
    }))
})

describe("fiber leaks are caught", () => {
  it.effect("an agent that forks a detached fiber leaks it past its generation: fiber-leak", () =>
    Effect.gen(function*() {
      const leaky: AgentBehaviour = () => Effect.asVoid(Effect.forkDetach(Effect.never))
      const report = yield* runSimulation(
        { seed: 1, sessions: ["A", { name: "B", agent: { mode: "custom", behaviour: leaky } }] },
        Effect.gen(function*() {
          const sim = yield* Simulation
          const sent = yield* sim.session("A").send("B", "start something")
          yield* sent!.result() // delivered (a durable broker holds it until it is stored)
          yield* sim.session("B").replaceGeneration
        })
      )
      const leaks = report.violations.filter((violation) => violation.kind === "fiber-leak")
      assert.isAbove(leaks.length, 0)
      assert.match(leaks[0]?.message ?? "", /fiber\(s\) of B\/c1\/g1 still running after its generation closed/)
    }))
})

describe("replay", () => {
  it("a seed always generates the same workload", () => {
    assert.deepStrictEqual(generateWorkload(42, 4), generateWorkload(42, 4))
    assert.notDeepEqual(generateWorkload(42, 4), generateWorkload(43, 4))
  })

  it.effect("a seed replays exactly, frame for frame (random ids are named by first appearance)", () =>
    Effect.gen(function*() {
      for (const seed of [11, 12, 13]) {
        const first = yield* runWorkload({ seed, traceFrames: true })
        const second = yield* runWorkload({ seed, traceFrames: true })
        assert.isAbove(first.trace.length, 100)
        assert.deepStrictEqual(second.trace, first.trace)
      }
    }))

  it("the generator is seeded and independent per label", () => {
    const a = Prng.derive(7, "agent A")
    const b = Prng.derive(7, "agent A")
    const c = Prng.derive(7, "agent B")
    const draws = (prng: Prng) => Array.from({ length: 5 }, () => prng.nextUint32())
    assert.deepStrictEqual(draws(a), draws(b))
    assert.notDeepEqual(draws(Prng.derive(7, "agent A")), draws(c))
  })
})

describe("fiber watch", () => {
  it.effect("counts fibers by owner until they end, interrupted or not", () => {
    const watch = makeFiberWatch()
    return Effect.gen(function*() {
      const scope = yield* Scope.make()
      yield* Effect.forkIn(Effect.never, scope).pipe(ownedBy("generation"))
      yield* Effect.forkIn(Effect.andThen(Effect.forkChild(Effect.never), Effect.never), scope).pipe(ownedBy("generation"))
      const stray = yield* Effect.forkChild(Effect.never).pipe(ownedBy("stray"))
      yield* Effect.yieldNow
      assert.deepStrictEqual([watch.live("generation"), watch.live("stray")], [3, 1])
      yield* Scope.close(scope, Exit.void)
      assert.strictEqual(watch.live("generation"), 0)
      assert.deepStrictEqual(watch.liveUnder(""), [["stray", 1]])
      yield* Fiber.interrupt(stray)
      assert.deepStrictEqual(watch.liveUnder(""), [])
    }).pipe(watchFibers(watch))
  })
})
