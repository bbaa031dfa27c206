/**
 * Preloaded into a broker under test, never into a production broker:
 *
 *   node --expose-gc --import dist/fuzz/gcHook.js dist/bin/intercom.mjs broker --dir …
 *
 * On SIGUSR2 it forces two full garbage collections and prints one line on
 * stderr, `@@fuzz-memory {"rss":…,"heapUsed":…,"external":…,"arrayBuffers":…,"gc":true}`,
 * so the fuzzer can measure what the broker still holds after hostile
 * connections have gone (BrokerUnderTest.ts reads it). Without `--expose-gc`
 * the line says `"gc":false` and the numbers are taken without collecting.
 */
import { MEMORY_LINE } from "./memoryLine.ts"

process.on("SIGUSR2", () => {
  const collect = globalThis.gc
  collect?.()
  collect?.()
  const usage = process.memoryUsage()
  process.stderr.write(
    `${MEMORY_LINE} ${
      JSON.stringify({
        rss: usage.rss,
        heapUsed: usage.heapUsed,
        external: usage.external,
        arrayBuffers: usage.arrayBuffers,
        gc: collect !== undefined
      })
    }\n`
  )
})
