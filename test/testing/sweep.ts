/**
 * The seed sweep `npm test` runs (split over files so vitest's workers share
 * it): random workloads with faults, every invariant checked; a failing seed
 * fails the test with its shrunk workload and trace.
 */
import { assert, it } from "@effect/vitest"
import { Effect } from "effect"
import { formatSummary, KNOWN_ISSUES, soak } from "../../src/testing/Soak.ts"

export const sweep = (from: number, seeds: number) =>
  it.effect(`seeds ${from}–${from + seeds - 1}: every invariant holds`, () =>
    Effect.gen(function*() {
      const started = performance.now()
      // Known issues (known-issues.test.ts shows each) are counted, not failed.
      const summary = yield* soak({ from, seeds, maxFailures: 1, config: { tolerate: KNOWN_ISSUES } })
      const text = formatSummary(summary, performance.now() - started)
      assert.strictEqual(summary.failures.length, 0, text)
      assert.strictEqual(summary.runs, seeds)
    }), 120_000)
