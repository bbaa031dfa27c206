/**
 * The seed sweep `npm test` runs (split over files so vitest's workers share
 * it): random workloads with faults and pressure, every invariant checked; a
 * failing seed fails the test with its shrunk workload and trace.
 *
 * Each file's seeds run in blocks of SWEEP_BLOCK seeds, one `it` each with
 * its own budget (BLOCK_BUDGET_MS): a block takes about 4 s on an idle 2-core
 * machine, so it still ends in its budget at a load of 10 and more, where 125
 * seeds in one `it` took longer than 120 s. Every seed still runs, in the same
 * total time.
 */
import { assert, it } from "@effect/vitest"
import { Effect } from "effect"
import { formatSummary, KNOWN_ISSUES, soak, type SoakOptions, type SoakSummary } from "../../src/testing/Soak.ts"

/** Seeds one `it` block of a sweep runs. */
export const SWEEP_BLOCK = 25

/** The time one block may take (vitest's timeout for it). */
export const BLOCK_BUDGET_MS = 120_000

/** The blocks of `seeds` seeds from `from`: `[first seed, count]`, at most `size` seeds each. */
export const blocksOf = (from: number, seeds: number, size = SWEEP_BLOCK): ReadonlyArray<readonly [number, number]> => {
  const blocks: Array<readonly [number, number]> = []
  for (let first = from; first < from + seeds; first += size) blocks.push([first, Math.min(size, from + seeds - first)])
  return blocks
}

/**
 * One `it` per block of the seeds `from`…`from + seeds - 1`: every invariant
 * holds (known issues counted, not failed), and `check`, if given, holds of
 * the block's summary.
 */
export const sweepBlocks = (
  label: string,
  from: number,
  seeds: number,
  options: Omit<SoakOptions, "from" | "seeds"> = {},
  check?: (summary: SoakSummary, text: string) => void
) => {
  for (const [first, count] of blocksOf(from, seeds)) {
    it.effect(`seeds ${first}–${first + count - 1}${label}: every invariant holds`, () =>
      Effect.gen(function*() {
        const started = performance.now()
        // Known issues (known-issues.test.ts shows each) are counted, not failed.
        const summary = yield* soak({ maxFailures: 1, config: { tolerate: KNOWN_ISSUES }, ...options, from: first, seeds: count })
        const text = formatSummary(summary, performance.now() - started)
        assert.strictEqual(summary.failures.length, 0, text)
        assert.strictEqual(summary.runs, count)
        check?.(summary, text)
      }), BLOCK_BUDGET_MS)
  }
}

/** The standard sweep of seeds `from`…: it also reaches both branches pressure is there for (docs/testing.md, "Pressure"). */
export const sweep = (from: number, seeds: number) =>
  sweepBlocks("", from, seeds, {}, (summary, text) => {
    assert.isAbove(summary.paths.runs.admissionWaits, 0, text)
    assert.isAbove(summary.paths.runs.readPauses, 0, text)
  })
