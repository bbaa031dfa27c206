/**
 * A command's agent dir checked and, when it cannot be used, reported as
 * every command reports it: `checkAgentDir`'s one line on stderr, exit 2 for
 * a `--dir` that names no directory or names a file (a bad invocation), exit
 * 1 for a file where the intercom dir or a directory above it must be and
 * for an agent dir this user may not enter. The client commands say the
 * same through their tool results (client/output.ts, `USAGE_ERRORS`); `top`,
 * `ui` and `broker` say it through here.
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import type { IntercomPaths } from "../config/agentDir.ts"
import { EXIT_FAILURE, EXIT_USAGE, ExitCode } from "./exit.ts"
import { type AgentDirInaccessible, checkAgentDir, type IntercomDirNotADirectory, type NoSuchAgentDir, resolveProcessPaths } from "./paths.ts"

/** A failure of `checkAgentDir`. */
export type AgentDirError = IntercomDirNotADirectory | NoSuchAgentDir | AgentDirInaccessible

/** Prints `error`'s message on stderr and ends the command: exit 2 for `NoSuchAgentDir`, else 1. */
export const reportAgentDirError = (error: AgentDirError): Effect.Effect<never, ExitCode> =>
  Console.error(error.message).pipe(
    Effect.andThen(Effect.fail(new ExitCode({ code: error._tag === "NoSuchAgentDir" ? EXIT_USAGE : EXIT_FAILURE })))
  )

/**
 * This process's paths for `dir` (the `--dir` flag, if given), once
 * `checkAgentDir` has passed them; a socket path that cannot be used, or an
 * agent dir that cannot, is reported (stderr) and ends the command.
 */
export const checkedProcessPaths = (dir: string | undefined): Effect.Effect<IntercomPaths, ExitCode> =>
  Effect.gen(function*() {
    const paths = yield* resolveProcessPaths(dir).pipe(
      Effect.catchTag("SocketPathError", (error) =>
        Console.error(error.message).pipe(Effect.andThen(Effect.fail(new ExitCode({ code: EXIT_FAILURE })))))
    )
    yield* checkAgentDir(paths, dir).pipe(Effect.catch(reportAgentDirError))
    return paths
  })
