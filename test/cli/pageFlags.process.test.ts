/**
 * `--offset` and `--limit` of `results`, `result` and `questions` out of
 * their range are bad flag values, exit 2 with the range on stderr, as a
 * value that is no number is: checked when the command line is parsed, so
 * nothing connects. Real processes of the built CLI.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { cleanEnv, runCli, tempDir } from "./support.ts"

/** Several CLI processes; the machine may be shared. */
const TIMEOUT = 60_000

const REF = "result:00000000-0000-0000-0000-000000000000"

describe("--offset and --limit out of range", () => {
  it.live("results, result and questions exit 2 naming the flag and its range", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const agentDir = path.join(root, "agent")
      fs.mkdirSync(agentDir)
      const env = cleanEnv(root)
      // Were a value to get past parsing, its command would spawn a broker: stopped with the test.
      yield* Effect.addFinalizer(() => Effect.ignore(runCli(["broker", "stop", "--dir", agentDir], env)))
      const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
        [["results", "--limit", "0"], `Invalid value for flag --limit: "0". Expected: --limit must be a whole number from 1 to 50, got 0`],
        [["results", "--offset", "-1"], `Invalid value for flag --offset: "-1". Expected: --offset must be a whole number from 0`],
        [["result", REF, "--limit", "1"], `Invalid value for flag --limit: "1". Expected: --limit must be a whole number from 2 to 100000, got 1`],
        [["questions", "--session", "s", "--limit", "101"], `Invalid value for flag --limit: "101". Expected: --limit must be an integer from 1 to 100 (got 101)`]
      ]
      for (const [args, error] of cases) {
        const result = yield* runCli([...args, "--dir", agentDir], env)
        const what = args.join(" ")
        assert.strictEqual(result.code, 2, `${what}: ${result.stderr}`)
        assert.include(result.stderr, error, what)
      }
    }), TIMEOUT)
})
