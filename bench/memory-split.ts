/**
 * Where a process's memory is at its peak: a preload (`node --import`) that
 * samples `process.memoryUsage()` and V8's heap spaces every 5 ms and, at
 * exit (or SIGTERM/SIGINT), writes the sample taken at the highest RSS, the
 * first sample and a 100 ms timeline to `$MEMORY_SPLIT_DIR/<pid>.json`. Without
 * `MEMORY_SPLIT_DIR` it does nothing. Used for the registration storm's
 * attribution (docs/performance.md, "Registration storm, third stop"):
 *
 *   MEMORY_SPLIT_DIR=/tmp/split node bench/scale-sockets.ts --sessions 1000 \
 *     --cmd "node --import ./bench/memory-split.ts dist/bin/intercom.mjs broker --dir {dir} --durability memory"
 *
 * Fields, in MiB: `rss`; `heap` (V8's committed heap) split into `young`
 * (new space: both semi-spaces), `old` (old and large-object spaces) and the
 * rest (code, trusted, read-only); `external` (Buffers and other memory V8 is
 * told about) with `arrayBuffers` inside it; `native` = rss − heap − external
 * (Node, libuv, the loaded code's pages, malloc). The sampler's own cost is a
 * few small objects per sample, but preloading a `.ts` file makes Node load
 * its type stripper: ≈ 20 MiB more external and native memory from the start
 * (the young and old generations are not affected). Compare runs that all
 * use it; the attribution in docs/performance.md used the same code as plain
 * JavaScript.
 */
import fs from "node:fs"
import path from "node:path"
import v8 from "node:v8"

/** One sample, in MiB (t in ms since the preload ran). */
interface Sample {
  readonly t: number
  readonly rss: number
  readonly heap: number
  readonly young: number
  readonly old: number
  readonly external: number
  readonly arrayBuffers: number
  readonly native: number
}

const mib = (bytes: number): number => Math.round(bytes / 104857.6) / 10

const sample = (started: number): Sample => {
  const usage = process.memoryUsage()
  let young = 0
  let old = 0
  for (const space of v8.getHeapSpaceStatistics()) {
    if (space.space_name === "new_space") young += space.space_size
    if (space.space_name === "old_space" || space.space_name === "large_object_space") old += space.space_size
  }
  return {
    t: Math.round(performance.now() - started),
    rss: mib(usage.rss),
    heap: mib(usage.heapTotal),
    young: mib(young),
    old: mib(old),
    external: mib(usage.external),
    arrayBuffers: mib(usage.arrayBuffers),
    native: mib(usage.rss - usage.heapTotal - usage.external)
  }
}

const dir = process.env["MEMORY_SPLIT_DIR"]
if (dir !== undefined && dir !== "") {
  const started = performance.now()
  let first: Sample | undefined
  let peak: Sample | undefined
  const timeline: Array<Sample> = []
  const timer = setInterval(() => {
    const now = sample(started)
    first ??= now
    if (peak === undefined || now.rss > peak.rss) peak = now
    const last = timeline.at(-1)
    if (last === undefined || now.t - last.t >= 100) timeline.push(now)
  }, 5)
  timer.unref()
  const write = (): void => {
    fs.mkdirSync(dir, { recursive: true })
    const argv = process.argv.slice(1).map((arg) => path.basename(arg)).join(" ")
    fs.writeFileSync(path.join(dir, `${process.pid}.json`), JSON.stringify({ argv, first, peak, timeline }))
  }
  process.on("exit", write)
  // The process's own handlers still run (and decide when it exits); this only writes what it has so far.
  for (const signal of ["SIGTERM", "SIGINT"] as const) process.on(signal, write)
}
