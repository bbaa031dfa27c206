/**
 * A preload for a measured process (`node --import ./bench/memory-probe.ts …`):
 * on SIGWINCH it collects garbage when it can (`--expose-gc`) and writes
 * `process.memoryUsage()` and V8's heap spaces as JSON to the file named by
 * `MEMORY_PROBE_OUT`. `bench/scale-sockets.ts --memory` reads it, to split
 * the broker's RSS into JS heap, external memory and the rest.
 */
import fs from "node:fs"
import v8 from "node:v8"

const out = process.env["MEMORY_PROBE_OUT"]
if (out !== undefined) {
  process.on("SIGWINCH", () => {
    const gc: unknown = Reflect.get(globalThis, "gc")
    if (typeof gc === "function") gc()
    const spaces = v8.getHeapSpaceStatistics().map((s) => ({
      space: s.space_name,
      used: s.space_used_size,
      committed: s.physical_space_size
    }))
    fs.writeFileSync(out, JSON.stringify({ memory: process.memoryUsage(), spaces }))
  })
}
