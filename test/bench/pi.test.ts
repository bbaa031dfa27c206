/**
 * bench/pi.ts's flags: a bad `--reps` fails at once (exit 2, naming it, with
 * the usage) before pi's modules load or a dir is made; `--help` prints the
 * usage. `--reps x` used to run with NaN reps and print NaN medians.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { fileURLToPath } from "node:url"
import { runChild } from "../support/process.ts"

const SCRIPT = fileURLToPath(new URL("../../bench/pi.ts", import.meta.url))

const USAGE = "usage: node bench/pi.ts [--reps N]   (N cold loads of each variant, default 15; first actions: max(3, N/2))"

describe("bench/pi.ts", () => {
  it.live("refuses a bad --reps and prints its usage for --help", () =>
    Effect.gen(function*() {
      const bad = yield* runChild(process.execPath, [SCRIPT, "--reps", "x"])
      assert.strictEqual(bad.stderr, "bench:pi: --reps must be an integer in 1..1000\n")
      assert.strictEqual(bad.code, 2)
      assert.strictEqual(bad.stdout, "")
      const help = yield* runChild(process.execPath, [SCRIPT, "--help"])
      assert.strictEqual(help.code, 0, help.stderr)
      assert.strictEqual(help.stdout, `${USAGE}\n`)
    }), { timeout: 30_000 })
})
