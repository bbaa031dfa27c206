/**
 * Exit codes of the `intercom` command:
 *
 * - 0: success, `--help`, `--version`; also after SIGINT/SIGTERM (and
 *   SIGHUP, `hangupAsTerminate`) once shutdown has finished (P95).
 * - 1: the command could not do its job (broker already running, directory
 *   unusable, `broker status` found no broker, …); the reason is on stderr.
 * - 2: bad invocation (unknown flag, bad value, extra argument, missing
 *   subcommand); usage is printed. effect/cli's errors are mapped to it in
 *   programExit.ts, which only the full program loads: this module is part of
 *   every fast path (broker, send), and effect/cli's error classes cost the
 *   broker's start several ms of Schema building (docs/performance.md).
 */
import * as Cause from "effect/Cause"
import * as Data from "effect/Data"
import * as Exit from "effect/Exit"
import * as Runtime from "effect/Runtime"

/** Exit code 0: success. */
export const EXIT_OK = 0
/** Exit code 1: the command could not do its job; the reason is on stderr. */
export const EXIT_FAILURE = 1
/** Exit code 2: bad invocation; usage is printed. */
export const EXIT_USAGE = 2

/**
 * Ends the command with `code`. Whatever had to be said was already printed,
 * so the runtime does not report it again.
 */
export class ExitCode extends Data.TaggedError("ExitCode")<{ readonly code: number }> {
  override readonly [Runtime.errorReported] = false
  override readonly [Runtime.errorExitCode] = this.code
}

/** A program's own exit code for an error it knows (e.g. effect/cli's), or `undefined`. */
export type ErrorExitCode = (error: unknown) => number | undefined

const noOwnCodes: ErrorExitCode = () => undefined

/**
 * The process exit code for the outcome of the main fiber; `codeOf` gives
 * the code of errors a program knows beyond `ExitCode`.
 */
export const exitCodeOf = <A, E>(exit: Exit.Exit<A, E>, codeOf: ErrorExitCode = noOwnCodes): number => {
  if (Exit.isSuccess(exit)) return EXIT_OK
  if (Cause.hasInterruptsOnly(exit.cause)) return EXIT_OK
  const error = Cause.squash(exit.cause)
  if (error instanceof ExitCode) return error.code
  return codeOf(error) ?? Runtime.getErrorExitCode(error)
}

/** A `NodeRuntime.runMain` teardown with `exitCodeOf(exit, codeOf)`: a signal ends the command with 0 rather than 130. */
export const teardownWith = (codeOf: ErrorExitCode): Runtime.Teardown => (exit, onExit) =>
  onExit(exitCodeOf(exit, codeOf))

/** `NodeRuntime.runMain` teardown of the fast paths and tools: a signal ends the command with 0 rather than 130. */
export const teardown: Runtime.Teardown = teardownWith(noOwnCodes)

/**
 * Makes SIGHUP (the terminal closed) end this process as SIGTERM does:
 * `NodeRuntime.runMain` handles only SIGINT and SIGTERM, and Node's default
 * for SIGHUP kills the process (exit 129) without its cleanup (a watch's
 * control socket left behind, a session not unregistered). Each SIGHUP is
 * turned into a SIGTERM to this process, so runMain's own handler interrupts
 * the main fiber, finalizers run, and the command exits 0. Call it once,
 * before `runMain`, in a process's entry (program.ts, clientEntry.ts,
 * brokerEntry.ts).
 */
export const hangupAsTerminate = (): void => {
  process.on("SIGHUP", () => process.kill(process.pid, "SIGTERM"))
}
