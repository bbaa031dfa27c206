/**
 * Exit codes of the `intercom` command:
 *
 * - 0: success, `--help`, `--version`; also after SIGINT/SIGTERM once
 *   shutdown has finished (P95).
 * - 1: the command could not do its job (broker already running, directory
 *   unusable, `broker status` found no broker, …); the reason is on stderr.
 * - 2: bad invocation (unknown flag, bad value, extra argument, missing
 *   subcommand); usage is printed.
 */
import * as Cause from "effect/Cause"
import * as Data from "effect/Data"
import * as Exit from "effect/Exit"
import * as Runtime from "effect/Runtime"
import * as CliError from "effect/cli/CliError"

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

/** The process exit code for the outcome of the main fiber. */
export const exitCodeOf = <A, E>(exit: Exit.Exit<A, E>): number => {
  if (Exit.isSuccess(exit)) return EXIT_OK
  if (Cause.hasInterruptsOnly(exit.cause)) return EXIT_OK
  const error = Cause.squash(exit.cause)
  if (error instanceof ExitCode) return error.code
  if (CliError.isCliError(error)) {
    // ShowHelp without errors: a command that needs a subcommand got none.
    return error._tag === "UserError" ? EXIT_FAILURE : EXIT_USAGE
  }
  return Runtime.getErrorExitCode(error)
}

/** `NodeRuntime.runMain` teardown: a signal ends the command with 0 rather than 130. */
export const teardown: Runtime.Teardown = (exit, onExit) => onExit(exitCodeOf(exit))
