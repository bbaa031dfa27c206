/**
 * The simulation with host journals (`--host-journal`, simulation/journal.ts):
 * a checkpoint that waits simulated time opens known issue 15's window (a
 * session generation closing while its message fiber is in the middle of a
 * message), and the seeds a sweep with the fix reverted failed on hold every
 * invariant. Each of the seed tests fails with the fix reverted (Inbound.ts's
 * uninterruptible admission and the client's unhandled messages): a
 * silent-loss.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { defaultHostJournal, type SimulationConfig } from "../../src/testing/Simulation.ts"
import { type Op, runWorkload } from "../../src/testing/Workload.ts"

const journaled = (seed: number, config: Omit<SimulationConfig, "seed"> = {}): SimulationConfig => ({
  seed,
  hostJournal: defaultHostJournal,
  ...config
})

describe("host journal: a generation closed while a checkpoint waits leaves the message to the next one (known issue 15)", () => {
  // Seed 12's shrunk workload, found by `--host-journal --seeds 200` with the fix reverted.
  const askThenReplace: ReadonlyArray<Op> = [
    { _tag: "Ask", after: 0, from: 3, to: 1, timeoutMs: 5000 },
    { _tag: "ReplaceGeneration", after: 0, session: 1 }
  ]
  for (const durability of ["durable", "memory"] as const) {
    it.effect(`D asks B and B replaces its generation meanwhile: B's next generation gets the ask (${durability})`, () =>
      Effect.gen(function*() {
        const report = yield* runWorkload(journaled(12, { durability, tolerate: [] }), askThenReplace)
        assert.deepStrictEqual(report.violations, [], report.trace.join("\n"))
        assert.isTrue(report.trace.some((line) => line.includes("B: journal: checkpoint of m1 interrupted")), "the window was not reached")
      }))
  }

  for (const seed of [12, 22, 48, 159]) {
    it.effect(`seed ${seed} holds every invariant with host journals`, () =>
      Effect.gen(function*() {
        const report = yield* runWorkload(journaled(seed))
        assert.deepStrictEqual(report.violations, [], report.trace.join("\n"))
      }))
  }
})
