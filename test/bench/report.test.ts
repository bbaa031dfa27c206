/**
 * bench/report.ts as a process: `--help` prints the usage, and a results
 * file that is not there is reported as such, naming the command that writes
 * one (exit 2), not as a stack trace; `--help` used to be read as a file name.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { runChild } from "../support/process.ts"

const SCRIPT = fileURLToPath(new URL("../../bench/report.ts", import.meta.url))

const USAGE = "usage: node bench/report.ts [results.json]   (default: bench/results/latest.json)"

describe("bench/report.ts", () => {
  it.live("prints its usage for --help, and names a missing results file", () =>
    Effect.gen(function*() {
      const help = yield* runChild(process.execPath, [SCRIPT, "--help"])
      assert.strictEqual(help.code, 0, help.stderr)
      assert.strictEqual(help.stdout, `${USAGE}\n`)
      const missing = path.join(os.tmpdir(), `no-such-results-${process.pid}.json`)
      const run = yield* runChild(process.execPath, [SCRIPT, missing])
      assert.strictEqual(run.code, 2, run.stderr)
      assert.match(run.stderr, new RegExp(`^report: cannot read ${missing} \\(ENOENT[^\\n]*\\); \`npm run bench\` writes bench/results/latest.json\\n$`))
    }), { timeout: 30_000 })
})
