/**
 * `npm run sim` as a process (`node dist/testing/sim-cli.js`; npm test builds
 * first): an unknown flag is rejected with exit 2 and says which flag, and
 * no seed runs.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"

const SIM_CLI = fileURLToPath(new URL("../../dist/testing/sim-cli.js", import.meta.url))

interface Finished {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs sim-cli with `args`; its output is read once the process has closed its pipes. */
const runSimCli = (args: ReadonlyArray<string>) =>
  Effect.callback<Finished>((resume) => {
    const child = spawn(process.execPath, [SIM_CLI, ...args], { stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => stdout += chunk)
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => stderr += chunk)
    child.once("close", (code) => resume(Effect.succeed({ code, stdout, stderr })))
    return Effect.sync(() => child.kill("SIGKILL"))
  })

describe("sim-cli process", () => {
  it.live("rejects an unknown flag with exit 2, naming it, and runs no seed", () =>
    Effect.gen(function*() {
      const { code, stdout, stderr } = yield* runSimCli(["--seeds", "1", "--bogus"])
      assert.strictEqual(code, 2)
      assert.include(stderr, "Unrecognized flag: --bogus")
      assert.notInclude(stdout, "runs:")
    }))
})
