/**
 * A preload for a measured process (`node --import ./bench/gc-probe.ts …`):
 * records every garbage collection V8 reports (a `gc` PerformanceObserver)
 * as wall-clock start and duration, and on SIGWINCH writes them as JSON to
 * the file named by `GC_PROBE_OUT`. `bench/ask-tail.ts` sets the variable,
 * sends the signal after its round trips and lays the collections against
 * the slow ones. Wall clock: `performance.timeOrigin + startTime`, the same
 * clock the driver stamps its round trips with.
 */
import fs from "node:fs"
import { PerformanceObserver } from "node:perf_hooks"

/** One collection: wall-clock start (ms since the epoch), pause (ms), V8's kind (1 minor, 2 major, 4 incremental, 8 weak callbacks). */
export interface GcRecord {
  readonly at: number
  readonly ms: number
  readonly kind: number
}

const out = process.env["GC_PROBE_OUT"]
if (out !== undefined) {
  const records: Array<GcRecord> = []
  const origin = performance.timeOrigin
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const detail: unknown = "detail" in e ? e.detail : undefined
      const kind = typeof detail === "object" && detail !== null && "kind" in detail && typeof detail.kind === "number" ? detail.kind : 0
      records.push({ at: origin + e.startTime, ms: e.duration, kind })
    }
  }).observe({ entryTypes: ["gc"] })
  process.on("SIGWINCH", () => {
    fs.writeFileSync(out, JSON.stringify(records))
  })
}
