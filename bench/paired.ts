/**
 * Paired comparison of two builds measured in alternating rounds
 * (`bench/ab.ts`): each round gives one reading of each build, taken minutes
 * apart at most, so the ratio within a round cancels most of what the
 * machine's load does to both. What is reported is the spread of those
 * ratios and how often the candidate was better, with the two-sided sign
 * test's p-value: on a shared 2-core machine a single run's ratio moves by
 * ±0.1 (docs/performance.md, "Where the targets stand"), so only a
 * direction that holds round after round means anything.
 */
import { maxOf, median, minOf } from "./stats.ts"

/** One round's reading of a metric on both builds. */
export interface Pair {
  readonly base: number
  readonly cand: number
}

/** What a metric's rounds say about the candidate against the base. */
export interface PairedSummary {
  /** Rounds with a finite, positive reading on both builds. */
  readonly rounds: number
  /** cand ÷ base per counted round, in round order. */
  readonly ratios: ReadonlyArray<number>
  readonly median: number
  readonly min: number
  readonly max: number
  /** Rounds in which the candidate was better (higher when `higherIsBetter`, else lower). */
  readonly better: number
  /** Rounds in which it was worse; ties count as neither. */
  readonly worse: number
  /** Two-sided sign test over the rounds that were not ties: the chance of a split this uneven if neither build were better. */
  readonly signP: number
}

/** Two-sided exact sign test: P(a split at least as uneven as `k` of `n` | p = ½). 1 when `n` is 0. */
export const signTestP = (k: number, n: number): number => {
  if (n === 0) return 1
  const tail = Math.min(k, n - k)
  let p = 0
  let c = 1 // C(n, 0)
  for (let i = 0; i <= tail; i++) {
    p += c
    c = (c * (n - i)) / (i + 1)
  }
  return Math.min(1, (2 * p) / 2 ** n)
}

/**
 * Summarizes `pairs` of one metric. A round where either build has no
 * reading (an error, a zero) is left out rather than counted.
 *
 * @example
 * pairedSummary([{ base: 100, cand: 110 }, { base: 90, cand: 95 }, { base: 120, cand: 118 }], true)
 * // { rounds: 3, median: 1.0556, better: 2, worse: 1, signP: 1, ... }
 */
export const pairedSummary = (pairs: ReadonlyArray<Pair>, higherIsBetter: boolean): PairedSummary => {
  const counted = pairs.filter((p) => Number.isFinite(p.base) && Number.isFinite(p.cand) && p.base > 0 && p.cand > 0)
  const ratios = counted.map((p) => p.cand / p.base)
  const better = counted.filter((p) => (higherIsBetter ? p.cand > p.base : p.cand < p.base)).length
  const worse = counted.filter((p) => (higherIsBetter ? p.cand < p.base : p.cand > p.base)).length
  return {
    rounds: counted.length,
    ratios,
    median: median(ratios),
    min: minOf(ratios),
    max: maxOf(ratios),
    better,
    worse,
    signP: signTestP(better, better + worse)
  }
}

/**
 * Headline metrics other than the `…PerSec` rates for which more is better:
 * the sustained run's last ¼ ÷ first ¼, the idle runs' sessions held, and
 * the replace storm's update rate achieved and threads that end on their
 * latest update.
 */
const MORE_IS_BETTER: ReadonlySet<string> = new Set(["lastOverFirstQuarter", "sessions", "achievedRate", "threadsEndingOnLatest"])

/** Whether a larger value of a bench metric is better: rates (and `MORE_IS_BETTER`'s) are, times and costs are not. */
export const higherIsBetter = (metric: string): boolean => /PerSec$/.test(metric) || MORE_IS_BETTER.has(metric)

/**
 * A caution for an A/B run on a busy machine, or `undefined`: when the
 * highest 1-minute load average seen (before and after the run) is above
 * twice the core count. At load 10–15 on the 2-core VM, the same code
 * against itself reached six rounds of six and p 0.031 in both directions
 * (docs/performance.md, "Replay block writes, twenty-ninth stop"): there a
 * sign test's p measures the load's drift between a round's two readings,
 * not the builds.
 *
 * @example
 * loadCaution([9.8, 12.1], 2) // "caution: the 1-minute load average reached 12.1 on 2 cores …"
 * loadCaution([1.2, 1.6], 2) // undefined
 */
export const loadCaution = (loads: ReadonlyArray<number>, cores: number): string | undefined => {
  const highest = maxOf(loads)
  if (!(highest > 2 * cores)) return undefined
  return `caution: the 1-minute load average reached ${highest.toFixed(1)} on ${cores} cores. At such load the same ` +
    `tree against itself has shown p 0.031; measure the noise floor (--cand = --base) or repeat on a quieter machine before calling a difference.`
}
