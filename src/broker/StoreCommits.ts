/**
 * The durable store's commits as numbers: how many, how many failed, and a
 * latency histogram in milliseconds. Plain counters written by the store
 * writer fiber after each commit (one per tick of traffic, never per
 * message) and read when metrics are collected (`stats-v1`, OTLP).
 */
import type { LatencyHistogram } from "../protocol/stats.ts"

/** Upper bounds (ms) of the commit latency buckets. */
export const COMMIT_LATENCY_BOUNDS_MS: ReadonlyArray<number> = [0.5, 1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500]

/** Commit counters and latency histogram (see the module header). */
export class StoreCommits {
  commits = 0
  failures = 0
  private readonly bucketCounts: Array<number> = COMMIT_LATENCY_BOUNDS_MS.map(() => 0)
  private observed = 0
  private sumMs = 0
  private maxMs = 0
  private minMs = 0

  /** One commit took `ms` and succeeded or not. */
  record(ms: number, ok: boolean): void {
    if (ok) this.commits++
    else this.failures++
    this.observed++
    this.sumMs += ms
    if (ms > this.maxMs) this.maxMs = ms
    if (this.observed === 1 || ms < this.minMs) this.minMs = ms
    const bucket = COMMIT_LATENCY_BOUNDS_MS.findIndex((bound) => ms <= bound)
    if (bucket >= 0) this.bucketCounts[bucket] = (this.bucketCounts[bucket] ?? 0) + 1
  }

  /** The latency histogram with cumulative bucket counts. */
  latency(): LatencyHistogram {
    let cumulative = 0
    return {
      count: this.observed,
      sumMs: this.sumMs,
      minMs: this.minMs,
      maxMs: this.maxMs,
      buckets: COMMIT_LATENCY_BOUNDS_MS.map((leMs, i) => {
        cumulative += this.bucketCounts[i] ?? 0
        return { leMs, count: cumulative }
      })
    }
  }
}
