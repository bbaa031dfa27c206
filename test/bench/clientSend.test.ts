/**
 * bench/client-send.ts as a process, with real sockets and a broker from
 * `dist/` (so `npm run build` first): a short run at each level prints a
 * well-formed line per round and every message reaches the receiver; bad
 * flags fail at once with what is wrong; the broker and its dir are gone
 * after a run, also after one interrupted by SIGINT. No figure is checked.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { fileURLToPath } from "node:url"
import { built, BUILT_CLI } from "../support/built.ts"
import { isAlive, runChild, spawnNode } from "../support/process.ts"

const SCRIPT = fileURLToPath(new URL("../../bench/client-send.ts", import.meta.url))

const HEADER =
  /^level (client|session), (\d+) messages per round, (\d+) in flight, (\d+) rounds \(\+1 warm-up\); memory broker pid (\d+) in (\/\S+)$/
const ROUND =
  /^(warm-up|round \d+): \d+ ms, \d+ msg\/s, \d+\.\d\d µs CPU per message, ack p50 \d+\.\d{3} ms p99 \d+\.\d{3} ms, received (\d+)\/(\d+)$/

/** The header's broker pid and dir, after checking the header names `level` and `messages`. */
const parseHeader = (line: string, level: string, messages: number) => {
  const header = HEADER.exec(line)
  assert.isNotNull(header, `header: ${line}`)
  assert.strictEqual(header?.[1], level)
  assert.strictEqual(Number(header?.[2]), messages)
  return { pid: Number(header?.[5]), dir: header?.[6] ?? "" }
}

describe("bench/client-send.ts", () => {
  for (const level of ["client", "session"]) {
    it.live(`--level ${level}: a line per round, every message received, the broker and its dir gone after`, () =>
      Effect.gen(function*() {
        built(BUILT_CLI) // the broker it spawns is the bundle
        const run = yield* runChild(process.execPath, [SCRIPT, "--level", level, "--messages", "300", "--inflight", "16", "--rounds", "2"])
        assert.strictEqual(run.code, 0, run.stderr)
        const lines = run.stdout.trim().split("\n")
        assert.strictEqual(lines.length, 4, run.stdout)
        const broker = parseHeader(lines[0] ?? "", level, 300)
        assert.deepStrictEqual(lines.slice(1).map((line) => ROUND.exec(line)?.slice(1)), [
          ["warm-up", "300", "300"],
          ["round 1", "300", "300"],
          ["round 2", "300", "300"]
        ])
        assert.isFalse(isAlive(broker.pid), "the broker was stopped")
        assert.isFalse(fs.existsSync(broker.dir), "its dir was removed")
      }), { timeout: 60_000 })
  }

  it.live("a bad flag fails before anything starts, saying what is wrong and how to call it; --help prints the usage", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
        [["--level", "wire"], "--level must be client or session, not wire"],
        [["--inflight", "0"], "--inflight must be an integer in 1..4096"],
        [["--messages"], "--messages needs a value"],
        [["--rate", "5"], "unknown argument --rate"]
      ]
      for (const [args, reason] of cases) {
        const run = yield* runChild(process.execPath, [SCRIPT, ...args])
        assert.strictEqual(run.code, 2, args.join(" "))
        assert.strictEqual(run.stdout, "")
        assert.strictEqual(run.stderr, `client-send: ${reason}\nusage: node bench/client-send.ts [--level client|session] [--messages N] [--inflight W] [--rounds R]\n`)
      }
      const help = yield* runChild(process.execPath, [SCRIPT, "--help"])
      assert.strictEqual(help.code, 0, help.stderr)
      assert.strictEqual(help.stdout, "usage: node bench/client-send.ts [--level client|session] [--messages N] [--inflight W] [--rounds R]\n")
    }), { timeout: 60_000 })

  it.live("interrupted by SIGINT in its warm-up round, it still stops the broker and removes its dir", () =>
    Effect.gen(function*() {
      built(BUILT_CLI) // the broker it spawns is the bundle
      // Far more messages than it sends before the signal: the warm-up round is running when it comes.
      const child = yield* spawnNode([SCRIPT, "--level", "session", "--messages", "1000000"])
      const line = yield* child.waitStdout(/^level .*\n/)
      const broker = parseHeader(line[0].trimEnd(), "session", 1_000_000)
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(broker.dir, { recursive: true, force: true })))
      assert.isTrue(isAlive(broker.pid), "the broker runs during the round")
      yield* child.kill("SIGINT")
      yield* child.waitExit()
      assert.notMatch(child.stdout(), /warm-up:/, "the warm-up round had not ended")
      assert.isFalse(isAlive(broker.pid), "the broker was stopped")
      assert.isFalse(fs.existsSync(broker.dir), "its dir was removed")
    }), { timeout: 60_000 })
})
