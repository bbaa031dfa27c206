/**
 * The simulation with hosts that refuse hand-offs while busy (`--host-refusals`,
 * simulation/refusals.ts): a refused hand-off is retried (C-DLV-12), one still
 * refused when its generation closes is abandoned, and the host journal hands
 * it to the session's next generation (C-DLV-14). Seed 2 reaches all three.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { dropNthMessage } from "../../src/testing/BrokenBuilds.ts"
import { defaultHostJournal, defaultHostRefusals, type SimulationConfig } from "../../src/testing/Simulation.ts"
import { soak } from "../../src/testing/Soak.ts"
import { runWorkload } from "../../src/testing/Workload.ts"

const refusing = (seed: number): SimulationConfig => ({
  seed,
  hostJournal: { ...defaultHostJournal, refusals: defaultHostRefusals }
})

const indexOf = (trace: ReadonlyArray<string>, text: string): number => trace.findIndex((line) => line.includes(text))

describe("host refusals: a message the host refused until its generation closed reaches the next one", () => {
  it.effect("seed 2: C's host refuses m1 and m2 until C stops; C's next generation hands both over, and every invariant holds", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload(refusing(2))
      assert.deepStrictEqual(report.violations, [], report.trace.join("\n"))
      const trace = report.trace
      const refused = indexOf(trace, "C: host refused m1")
      const abandoned = indexOf(trace, "Intercom abandoned message m1")
      const next = indexOf(trace, "C generation C/c2/g2 started")
      const handed = indexOf(trace, "C ← m1 from A")
      assert.isTrue(refused >= 0 && abandoned > refused, "m1 was not refused, then abandoned")
      assert.isTrue(indexOf(trace, "Intercom abandoned message m2") > refused, "m2 was not abandoned")
      assert.isTrue(next > abandoned && handed > next, "m1 did not reach C's next generation after it was abandoned")
      assert.isTrue(indexOf(trace, "C ← m2 from A") > next, "m2 did not reach C's next generation")
    }))

  it.effect("without refusals the same seed's hosts refuse nothing and abandon nothing", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 2, hostJournal: defaultHostJournal })
      assert.strictEqual(indexOf(report.trace, "host refused"), -1)
      assert.strictEqual(indexOf(report.trace, "abandoned message"), -1)
    }))

  it.effect("seeds 1–12 hold every invariant with refusing hosts", () =>
    Effect.gen(function*() {
      const summary = yield* soak({ seeds: 12, config: { hostJournal: { ...defaultHostJournal, refusals: defaultHostRefusals } } })
      assert.deepStrictEqual(summary.failures.map((failure) => failure.description), [])
      assert.strictEqual(summary.runs, 12)
    }), 120_000) // twelve runs: about 10 s alone, three times that beside other CPU-bound files

  it.effect("a failure's replay names --host-refusals (not --host-journal) and the config with the refusals", () =>
    Effect.gen(function*() {
      // A broker that drops the first message it routes fails the run; the replay must bring the refusals back.
      const summary = yield* soak({
        seeds: 1,
        from: 2,
        shrink: false,
        config: { hostJournal: { ...defaultHostJournal, refusals: defaultHostRefusals }, brokerFault: dropNthMessage(1) }
      })
      const description = summary.failures[0]?.description ?? ""
      assert.include(description, "npm run sim -- --seed 2 --host-refusals --replay")
      assert.notInclude(description, "--host-journal")
      assert.include(description, "hostJournal: { ...defaultHostJournal, refusals: defaultHostRefusals }")
    }))
})
