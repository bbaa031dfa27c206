/**
 * Runs a Node script as a child process to its end and gives its exit code
 * and output, read once the child has closed (exited and both pipes
 * drained). Interrupting the wait kills the child.
 */
import { Effect } from "effect"
import { spawn } from "node:child_process"

/** How a child process ended, and everything it wrote. */
export interface Finished {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** `node <script> ...args` with `env` (default: this process's), run to its `close` event. */
export const runToClose = (
  script: string,
  args: ReadonlyArray<string>,
  env?: Readonly<Record<string, string>>
): Effect.Effect<Finished> =>
  Effect.callback<Finished>((resume) => {
    const child = spawn(process.execPath, [script, ...args], { env: env ?? process.env, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => stdout += chunk)
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => stderr += chunk)
    child.once("close", (code) => resume(Effect.succeed({ code, stdout, stderr })))
    return Effect.sync(() => child.kill("SIGKILL"))
  })
