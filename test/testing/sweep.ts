/**
 * The seed sweep `npm test` runs (split over files so vitest's workers share
 * it): random workloads with faults and pressure, every invariant checked; a
 * failing seed fails the test with its shrunk workload and trace.
 *
 * Each file's seeds run in blocks of SWEEP_BLOCK seeds, one `it` each, whose
 * vitest limit is proportional to its seeds (`blockBudget`: SEED_BUDGET_MS a
 * seed). A seed takes about 0.16 s on an idle 2-core machine, 0.3–0.6 s at a
 * load of 8, and up to 2.8 s at a load of 14 with the sweep files on three
 * workers (a 25-seed block took 23–69 s); in one run at a load of 14, 10
 * blocks ran past a flat 120 s (4.8 s a seed) and timed out without a
 * violation. A limit per seed
 * keeps that margin whatever a block's size, and still fails a block that
 * never ends (a fiber spinning without moving the TestClock). The blocks keep
 * their size: each checks what its seeds reach (pressure's admission waits and
 * read pauses), which fewer seeds might not.
 */
import { assert, it } from "@effect/vitest"
import { Effect } from "effect"
import { formatSummary, KNOWN_ISSUES, soak, type SoakOptions, type SoakSummary } from "../../src/testing/Soak.ts"

/** Seeds one `it` block of a sweep runs. */
export const SWEEP_BLOCK = 25

/**
 * The time one seed of a random-workload sweep may take in its block's limit:
 * about 60 times what it takes on an idle 2-core machine, so a block ends in
 * time at a load of 14 and more. A limit for a stuck block, not a measure of speed.
 */
export const SEED_BUDGET_MS = 10_000

/** vitest's limit for a block of `seeds` seeds taking at most `perSeedMs` each. */
export const blockBudget = (seeds: number, perSeedMs: number = SEED_BUDGET_MS): number => seeds * perSeedMs

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
      }), blockBudget(count))
  }
}

/** The standard sweep of seeds `from`…: it also reaches both branches pressure is there for (docs/testing.md, "Pressure"). */
export const sweep = (from: number, seeds: number) =>
  sweepBlocks("", from, seeds, {}, (summary, text) => {
    assert.isAbove(summary.paths.runs.admissionWaits, 0, text)
    assert.isAbove(summary.paths.runs.readPauses, 0, text)
  })
