/**
 * Topics in the simulation (`topics-v1`): a scripted world where a
 * subscriber's revisions never go back and no publication interrupts twice,
 * the same script under two broken brokers (each caught by its invariant),
 * and random workloads with topic traffic and every fault.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { renumberInterruptingRecords, swapTopicRecords } from "../../src/testing/BrokenBuilds.ts"
import { formatSummary, KNOWN_ISSUES, soak } from "../../src/testing/Soak.ts"
import { Simulation, type SimulationConfig } from "../../src/testing/Simulation.ts"
import { runSimulation, runWorkload } from "../../src/testing/Workload.ts"

const world = (seed: number, extra: Partial<SimulationConfig> = {}): SimulationConfig => ({
  seed,
  sessions: ["A", "B", "C"],
  ...extra
})

/** B and C subscribe (C awaits releases); A publishes updates, a blocker, a decision and a release, with a broker crash between. */
const script = Effect.gen(function*() {
  const sim = yield* Simulation
  const a = sim.session("A")
  yield* sim.session("B").topic({ action: "subscribe", topic: "build" })
  yield* sim.session("C").topic({ action: "subscribe", topic: "build", awaitRelease: true })
  yield* sim.advance("1 second")
  const publish = (message: string, event: string, extra: Record<string, string> = {}) =>
    Effect.andThen(a.topic({ action: "publish", topic: "build", message, event, ...extra }), sim.advance("500 millis"))
  yield* publish("compiling", "update")
  yield* publish("tests red", "blocker")
  yield* publish("still red", "update")
  yield* publish("reverting", "decision")
  yield* sim.broker.crashFor(2_000)
  yield* sim.advance("5 seconds")
  yield* publish("green", "blocker")
  yield* publish("done with the runner", "release", { resource: "runner", ownership: "released" })
  yield* sim.advance("5 seconds")
})

const kindsOf = (violations: ReadonlyArray<{ readonly kind: string }>) => new Set(violations.map((v) => v.kind))

describe("topics in the simulation", () => {
  it.effect("subscribers are interrupted once per blocker/decision publication (C also by the release); the invariants hold", () =>
    Effect.gen(function*() {
      const report = yield* runSimulation(world(3), script)
      assert.isTrue(report.ok, report.trace.join("\n"))
      const interrupts = (name: string) =>
        report.trace.filter((line) => line.includes(`${name} ← `) && line.includes(" from A (")).length
      assert.strictEqual(interrupts("B"), 3, report.trace.join("\n"))
      assert.strictEqual(interrupts("C"), 4, report.trace.join("\n"))
    }), 60_000)

  it.effect("a broker that swaps two records of a topic is caught: topic-revision-backwards", () =>
    Effect.gen(function*() {
      const report = yield* runSimulation(world(3, { brokerFault: swapTopicRecords() }), script)
      assert.isTrue(kindsOf(report.violations).has("topic-revision-backwards"), report.trace.join("\n"))
    }), 60_000)

  it.effect("a broker that renumbers interrupting records is caught: topic-double-interrupt", () =>
    Effect.gen(function*() {
      const report = yield* runSimulation(world(3, { brokerFault: renumberInterruptingRecords() }), script)
      assert.isTrue(kindsOf(report.violations).has("topic-double-interrupt"), report.trace.join("\n"))
    }), 60_000)

  // A new generation of a host without a topic store subscribes again and is interrupted again by a
  // publication its predecessor saw, re-sent after a broker restart: topic state lasts one generation there.
  it.effect("seed 972: a publication re-sent after a broker restart may interrupt a later generation again", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 972, tolerate: KNOWN_ISSUES }, undefined, { topics: true })
      assert.isTrue(report.ok, report.trace.join("\n"))
      assert.isTrue(report.trace.some((line) => line.includes("D ← m2 from A (trigger) \"state 4\"")))
    }))

  // ParkedDrain.offerOwnAhead (`BrokerStats.offeredAhead`): the soak sums it over the runs and prints it.
  it.effect("seed 6: a reader's own items are offered ahead of its waiting head, and the soak summary prints how often and in how many runs", () =>
    Effect.gen(function*() {
      const summary = yield* soak({ from: 6, seeds: 1, topics: true, maxFailures: 1, shrink: false, config: { tolerate: KNOWN_ISSUES } })
      const printed = formatSummary(summary, 0)
      assert.strictEqual(summary.failures.length, 0, printed)
      assert.isAtLeast(summary.paths.total.offeredAhead, 1, printed)
      assert.strictEqual(summary.paths.runs.offeredAhead, 1, printed)
      assert.include(printed, `${summary.paths.total.offeredAhead} of a reader's own items offered ahead of its waiting head (1 runs)`)
    }), 60_000)

  it.effect("random workloads with topic traffic and faults: no violation over 8 seeds", () =>
    Effect.gen(function*() {
      for (let seed = 1; seed <= 8; seed++) {
        const report = yield* runWorkload({ seed, tolerate: KNOWN_ISSUES }, undefined, { topics: true, ops: 50 })
        assert.isTrue(report.ok, `seed ${seed}:\n${report.trace.join("\n")}`)
      }
    }), 300_000)
})
