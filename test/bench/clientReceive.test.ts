/**
 * bench/client-receive.ts's flags: a bad or unknown one fails at once, before
 * a broker is spawned, naming the flag and giving the usage (exit 2), as
 * client-send's do; `--help` prints the usage. It used to throw a stack trace
 * for a bad value and to ignore an unknown flag (`--inflight`, `--help`) and
 * run its full 80,000 messages.
 *
 * Stdout closed under it (`| head`) used to kill it with an uncaught EPIPE,
 * outside the Effect: the broker it had spawned kept running and its temp dir
 * stayed. The Scope's finalizers now stop the broker and remove the dir then
 * too. Needs dist/ (`npm run build`): the client spawns the built broker.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { built, BUILT_CLI } from "../support/built.ts"
import { childEnv, runChild, spawnChild } from "../support/process.ts"

const SCRIPT = fileURLToPath(new URL("../../bench/client-receive.ts", import.meta.url))

const USAGE = "usage: node bench/client-receive.ts [--level session|client] [--messages N] [--rounds R]"

describe("bench/client-receive.ts", () => {
  it.live("a bad flag fails before anything starts, saying what is wrong and how to call it; --help prints the usage", () =>
    Effect.gen(function*() {
      // One bad flag: each run loads the client and the session from src/ (about a second).
      const bad = yield* runChild(process.execPath, [SCRIPT, "--messages", "x"])
      assert.strictEqual(bad.stderr, `client-receive: --messages must be an integer in 1..10000000\n${USAGE}\n`)
      assert.strictEqual(bad.code, 2)
      assert.strictEqual(bad.stdout, "")
      const help = yield* runChild(process.execPath, [SCRIPT, "--help"])
      assert.strictEqual(help.code, 0)
      assert.strictEqual(help.stdout, `${USAGE}\n`)
    }), { timeout: 60_000 })

  it.live("stops its broker and removes its temp dir when stdout closes under it (EPIPE)", () =>
    Effect.gen(function*() {
      built(BUILT_CLI) // the broker it spawns is the bundle
      const root = fs.mkdtempSync(path.join(os.tmpdir(), "recv-epipe-"))
      // Processes whose command line names the root: the broker this test's bench spawned (its --dir).
      const brokers = () =>
        fs.readdirSync("/proc").filter((pid) => /^\d+$/.test(pid)).filter((pid) => {
          try {
            return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(`--dir\0${root}`)
          } catch {
            return false
          }
        })
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          // Only if the test failed: the broker left behind, by its pid, then the root.
          for (const pid of brokers()) process.kill(Number(pid), "SIGKILL")
          fs.rmSync(root, { recursive: true, force: true })
        })
      )
      const bench = yield* spawnChild(
        process.execPath,
        [SCRIPT, "--level", "client", "--messages", "20000", "--rounds", "100"],
        { env: childEnv({ TMPDIR: root }) }
      )
      yield* bench.waitStdout(/^level client, 20000 messages per round/m)
      assert.lengthOf(fs.readdirSync(root).filter((name) => name.startsWith("intercom-recv-")), 1)
      // Rounds of 20,000 messages (two million in all): the bench does not finish (and remove its dir) before the check above on a
      // loaded machine, as 100 rounds of 100 did. The reader goes away: the next round's line meets a closed pipe.
      bench.child.stdout?.destroy()
      const outcome = yield* bench.waitExit()
      assert.deepStrictEqual(fs.readdirSync(root).filter((name) => name.startsWith("intercom-recv-")), [], bench.stderr())
      assert.deepStrictEqual(brokers(), [], "the broker still runs")
      assert.strictEqual(outcome.code, 1, bench.stderr())
      assert.include(bench.stderr(), "client-receive: stdout closed (EPIPE); the broker was stopped and its dir removed")
    }).pipe(Effect.scoped), { timeout: 30_000 })
})
