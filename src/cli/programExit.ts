/**
 * Exit codes for effect/cli's errors, for the full program (program.ts)
 * only: exit.ts, which every path loads, leaves effect/cli out so that the
 * broker and `send` fast paths do not evaluate its error classes at start.
 */
import * as CliError from "effect/cli/CliError"
import { EXIT_FAILURE, EXIT_USAGE, teardownWith } from "./exit.ts"

/** effect/cli's errors: a `UserError` (the command's own failure) is 1, a bad invocation 2. */
export const cliErrorExitCode = (error: unknown): number | undefined => {
  if (!CliError.isCliError(error)) return undefined
  // ShowHelp without errors: a command that needs a subcommand got none.
  return error._tag === "UserError" ? EXIT_FAILURE : EXIT_USAGE
}

/** `NodeRuntime.runMain` teardown of the full program: effect/cli's errors as above, a signal 0. */
export const programTeardown = teardownWith(cliErrorExitCode)
