/**
 * bench/run.ts stopped by a signal in the middle of a run: the target it
 * started and the temp dirs (the target's, the raw relay's script copy) are
 * gone afterwards, and its exit status is 128 + the signal's number, as a
 * shell reports a process killed by it (SIGTERM: 143; it used to exit 130,
 * SIGINT's, for every signal). The raw relay is the target: it needs no build.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schedule } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { awaitGone, spawnNode } from "../support/process.ts"

const SCRIPT = fileURLToPath(new URL("../../bench/run.ts", import.meta.url))

/** The processes whose parent is `ppid`, with their argv (from /proc). */
const childrenOf = (ppid: number): Array<{ readonly pid: number; readonly argv: ReadonlyArray<string> }> => {
  const found: Array<{ pid: number; argv: Array<string> }> = []
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8")
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) !== ppid) continue
      found.push({ pid: Number(entry), argv: fs.readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0").filter((s) => s !== "") })
    } catch {
      // gone meanwhile
    }
  }
  return found
}

describe("bench/run.ts", () => {
  it.live("SIGTERM mid-run: the target and the temp dirs are gone, and the exit status is 143", () =>
    Effect.gen(function*() {
      const out = path.join(os.tmpdir(), `bench-run-test-${process.pid}.json`)
      // storm-1k registers 1,000 sessions on the relay: seconds, so the signal comes while it runs.
      const bench = yield* spawnNode([SCRIPT, "--quick", "--only", "storm", "--targets", "raw", "--out", out])
      const relay = yield* Effect.sync(() => childrenOf(bench.pid).find((c) => c.argv[1]?.endsWith("raw-relay.mjs") === true)).pipe(
        Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (c) => c !== undefined }),
        Effect.timeout("20 seconds")
      )
      const script = relay?.argv[1] ?? ""
      const socket = relay?.argv[2] ?? ""
      assert.isTrue(fs.existsSync(script) && socket.startsWith("/tmp/ib-"), JSON.stringify(relay))
      yield* bench.kill("SIGTERM")
      const outcome = yield* bench.waitExit()
      assert.strictEqual(outcome.code, 143, bench.stderr())
      assert.match(bench.stderr(), /bench: SIGTERM, stopping child processes/)
      assert.isTrue(yield* awaitGone(relay?.pid ?? -1), "the relay was stopped")
      assert.isFalse(fs.existsSync(path.dirname(path.dirname(socket))), "the target's dir was removed")
      assert.isFalse(fs.existsSync(path.dirname(script)), "the relay script's dir was removed")
      assert.isFalse(fs.existsSync(out), "no results were written")
    }), { timeout: 60_000 })
})
