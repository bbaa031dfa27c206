/**
 * The agent dir of `broker`, `top` and `ui` checked as a client command's is
 * (`checkAgentDir`), and reported in the same words and exit codes: one line
 * on stderr, exit 2 for a `--dir` that names a file (a bad invocation), exit
 * 1 for a file where the intercom dir or a directory above it must be and for
 * an agent dir this user may not enter. The client commands report the same
 * errors through their tool results (client/output.ts, `USAGE_ERRORS`).
 *
 * Unlike a client command's, a `--dir` that does not exist yet is let
 * through where it can mean something: `broker --dir a/new/deep` creates
 * it, and `ui` waits for a broker to start there; neither starts a broker
 * that a typo would hide. `top` refuses it as a client command does: it
 * never waits for a broker, so its "no broker answers" would hide the typo.
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
 * What a command does with a `--dir` that does not exist yet: `"allow"` it
 * (it may be made, or a broker started there, later), or `"refuse"` it as a
 * client command does (exit 2).
 */
export type MissingDir = "allow" | "refuse"

/**
 * `checkAgentDir(paths, dir)` with a `--dir` that does not exist yet let
 * through unless `missing` is `"refuse"`; any other failure reported
 * (`reportAgentDirError`).
 */
export const checkAgentDirOrExit = (
  paths: IntercomPaths,
  dir: string | undefined,
  missing: MissingDir = "allow"
): Effect.Effect<void, ExitCode> =>
  checkAgentDir(paths, dir).pipe(
    Effect.catchTags({
      NoSuchAgentDir: (error) => error.isFile || missing === "refuse" ? reportAgentDirError(error) : Effect.void,
      IntercomDirNotADirectory: reportAgentDirError,
      AgentDirInaccessible: reportAgentDirError
    })
  )

/**
 * This process's paths for `dir` (the `--dir` flag, if given), once
 * `checkAgentDirOrExit(paths, dir, missing)` has passed them; a socket path that cannot be used
 * is reported (stderr, exit 1) too.
 */
export const checkedProcessPaths = (dir: string | undefined, missing: MissingDir = "allow"): Effect.Effect<IntercomPaths, ExitCode> =>
  Effect.gen(function*() {
    const paths = yield* resolveProcessPaths(dir).pipe(
      Effect.catchTag("SocketPathError", (error) =>
        Console.error(error.message).pipe(Effect.andThen(Effect.fail(new ExitCode({ code: EXIT_FAILURE })))))
    )
    yield* checkAgentDirOrExit(paths, dir, missing)
    return paths
  })
