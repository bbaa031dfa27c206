/**
 * The seed sweep with groups (docs/testing.md, "Groups and supervisors"):
 * sessions over two groups, a supervisor and its delegated child, supervisor
 * traffic and plain sends into the other group mixed into the usual
 * workload with faults; every invariant, `cross-group` included, must hold.
 * Its own file, so vitest's workers run it beside the standard sweep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { formatSummary, KNOWN_ISSUES, soak } from "../../src/testing/Soak.ts"

const sweep = (from: number, seeds: number) =>
  it.effect(`seeds ${from}–${from + seeds - 1} with groups: every invariant holds`, () =>
    Effect.gen(function*() {
      const started = performance.now()
      const summary = yield* soak({ from, seeds, groups: true, maxFailures: 1, config: { tolerate: KNOWN_ISSUES } })
      const text = formatSummary(summary, performance.now() - started)
      assert.strictEqual(summary.failures.length, 0, text)
      assert.strictEqual(summary.runs, seeds)
      // The sweep exercises what it claims to: refusals into the other group, and the channel both ways.
      assert.isAbove(summary.groups.refusedCrossGroup, 0, text)
      assert.isAbove(summary.groups.refusedNotFound, 0, text)
      assert.isAbove(summary.groups.repliesBack, 0, text)
    }), 120_000)

describe("simulation sweep with groups", () => {
  sweep(1, 75)
  sweep(76, 75)
})
