/**
 * bench/client-receive.ts's flags: a bad or unknown one fails at once, before
 * a broker is spawned, naming the flag and giving the usage (exit 2), as
 * client-send's do; `--help` prints the usage. It used to throw a stack trace
 * for a bad value and to ignore an unknown flag (`--inflight`, `--help`) and
 * run its full 80,000 messages.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { fileURLToPath } from "node:url"
import { runChild } from "../support/process.ts"

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
})
