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
 *
 * It also ends the broker with its fuzzer: the fuzzer gives the broker a
 * stdin pipe it never writes (and its temp dir in `EIFZ_DIR`), and when that
 * pipe ends — the fuzzer is gone, however it went, SIGKILL and out-of-memory
 * included — the hook sends the broker SIGTERM and removes the temp dir as
 * the broker exits. The broker runs in its own process group with
 * `--idle-exit never`, so without this a fuzzer killed outright left it
 * running for good.
 */
import * as fs from "node:fs"
import { FUZZ_DIR_ENV, MEMORY_LINE } from "./memoryLine.ts"

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

/** Set by BrokerUnderTest.ts: the temp dir the fuzzer made for this broker (its stdin is the fuzzer's pipe). */
const fuzzDir = process.env[FUZZ_DIR_ENV]
if (fuzzDir !== undefined && fuzzDir !== "") {
  // The fuzzer holds the other end of stdin: its end is the fuzzer's exit. Nobody else removes the temp dir then.
  const orphaned = () => {
    process.once("exit", () => fs.rmSync(fuzzDir, { recursive: true, force: true }))
    process.kill(process.pid, "SIGTERM")
  }
  process.stdin.once("end", orphaned)
  process.stdin.once("error", orphaned)
  process.stdin.resume()
}
