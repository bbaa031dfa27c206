/**
 * Where the CLI's broker files live (P90). The rules are config's — the
 * agent dir from `config/agentDir.ts`, the socket path and its short fallback
 * from `config/socketPath.ts` — so that the CLI's broker listens exactly where
 * a client using `loadIntercomSettings` dials. This module only feeds them the
 * `--dir` flag and this process's environment, and says when this user may
 * not reach them (`checkBrokerAccess`: `broker status` and `stop` must not
 * read "permission denied" as "no broker"), when a file stands where the
 * intercom dir must be, when a `--dir` names no directory at all, and when
 * this user may not enter a directory on the way to the agent dir
 * (`checkAgentDir`: one clear error before any config is read or broker
 * spawned).
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { type Environment, type IntercomPaths, resolveAgentDir, resolveIntercomPaths } from "../config/agentDir.ts"
import { intercomDirInTheWay } from "../config/dirInTheWay.ts"
import { processSocketPlacement } from "../config/runtimeDir.ts"
import { SocketPathError, type SocketPlacement } from "../config/socketPath.ts"

// The socket-path rule and the fallback dir live in config; re-exported for the CLI's modules.
/** Every file of one agent dir's intercom runtime (see `config/agentDir.ts`). */
export type { IntercomPaths } from "../config/agentDir.ts"
export { chooseRuntimeDir, currentUid, prepareFallbackDir } from "../config/runtimeDir.ts"
export { agentDirHash, SocketPathError, socketPathLimit } from "../config/socketPath.ts"

/** What `resolveCliPaths` decides from: the `--dir` flag and this process's environment, cwd, home and socket placement. */
export interface ProcessInputs {
  /** The `--dir` flag, if given. */
  readonly dir: string | undefined
  readonly env: Environment
  readonly cwd: string
  readonly homeDir: string
  /** See `processSocketPlacement`. */
  readonly placement: SocketPlacement
}

/**
 * `resolveAgentDir` (`--dir`, else `ATOMIC_CODING_AGENT_DIR`, else
 * `PI_CODING_AGENT_DIR`, else `~/.pi/agent`) followed by `resolveIntercomPaths`.
 */
export const resolveCliPaths = (inputs: ProcessInputs): IntercomPaths | SocketPathError =>
  resolveIntercomPaths(
    resolveAgentDir({ dir: inputs.dir, env: inputs.env, cwd: inputs.cwd, homeDir: inputs.homeDir }).agentDir,
    inputs.placement
  )

/**
 * Resolves every path for this process (flag, environment, cwd, home, runtime
 * dir, uid, platform). Creates nothing.
 */
export const resolveProcessPaths = (dir: string | undefined): Effect.Effect<IntercomPaths, SocketPathError> =>
  Effect.gen(function*() {
    const env = process.env
    const result = resolveCliPaths({
      dir,
      env,
      cwd: process.cwd(),
      homeDir: os.homedir(),
      placement: yield* processSocketPlacement(env)
    })
    return result instanceof SocketPathError ? yield* result : result
  })

/**
 * This user may not reach the broker files at `path` (a directory it cannot
 * enter, or a socket it cannot write to): whether a broker runs there cannot
 * be told from here.
 *
 * @category errors
 * @since 0.1.0
 */
export class BrokerFilesInaccessible extends Data.TaggedError("BrokerFilesInaccessible")<{
  readonly path: string
  readonly agentDir: string
  readonly detail: string
}> {
  override get message(): string {
    return `Cannot access ${this.path} (${this.detail}), so whether an intercom broker runs for ${this.agentDir} cannot be told. Run the command as the user who owns ${this.agentDir} (or let this user enter it), or pass an agent dir of your own with --dir.`
  }
}

const deniedCodes: ReadonlySet<string> = new Set(["EACCES", "EPERM"])

/**
 * Fails with `BrokerFilesInaccessible` when this user is denied the intercom
 * dir (entering it) or the socket (connecting needs write permission). A
 * file that does not exist is no problem here: nothing runs there.
 */
export const checkBrokerAccess = (paths: IntercomPaths): Effect.Effect<void, BrokerFilesInaccessible> =>
  Effect.suspend(() => {
    const checks: ReadonlyArray<readonly [string, number]> = [
      [paths.intercomDir, fs.constants.X_OK],
      [paths.socketPath, fs.constants.W_OK]
    ]
    for (const [file, mode] of checks) {
      try {
        fs.accessSync(file, mode)
      } catch (error) {
        const code = error instanceof Error && "code" in error ? error.code : undefined
        if (typeof code === "string" && deniedCodes.has(code)) {
          return Effect.fail(new BrokerFilesInaccessible({ path: file, agentDir: paths.agentDir, detail: code }))
        }
      }
    }
    return Effect.void
  })

/**
 * A file (not a directory) is at `path`, where the intercom dir or a
 * directory above it must be: nothing of intercom can live there. Worded by
 * `config/dirInTheWay.ts`, as a library client's spawn says it.
 *
 * @category errors
 * @since 0.1.0
 */
export class IntercomDirNotADirectory extends Data.TaggedError("IntercomDirNotADirectory")<{
  readonly path: string
  readonly intercomDir: string
}> {
  override get message(): string {
    return intercomDirInTheWay({ intercomDir: this.intercomDir, file: this.path, otherDir: "with --dir" })
  }
}

/**
 * `--dir` names a directory that does not exist (a typo, most likely), or a
 * file (`isFile`): a client command would otherwise start a broker there that
 * no other session finds, or fail on the file. A bad invocation (exit 2).
 *
 * @category errors
 * @since 0.1.0
 */
export class NoSuchAgentDir extends Data.TaggedError("NoSuchAgentDir")<{
  readonly agentDir: string
  /** The `--dir` value as given. */
  readonly given: string
  /** This user's home directory, for the hint on a `given` that starts with `~`. */
  readonly homeDir: string
  /** A file, not a directory, is at `agentDir`. */
  readonly isFile: boolean
}> {
  override get message(): string {
    if (this.isFile) {
      return `--dir ${this.given} is a file, not a directory (${this.agentDir}). Pass the agent directory, or omit --dir for the default agent dir.`
    }
    const where = `No such directory: ${this.agentDir} (--dir).`
    if (!this.given.startsWith("~")) return `${where} Create it, or omit --dir for the default agent dir.`
    // `--dir=~/x` or a quoted '~/x': the shell left the "~" alone, and so does intercom.
    const rest = this.given.slice(1)
    const home = rest.startsWith("/") ? `${this.homeDir}${rest}` : `${this.homeDir}/…`
    return `${where} The value ${JSON.stringify(this.given)} starts with "~", which is not expanded here; if you meant your home directory, write the path out (${home}).`
  }
}

/**
 * This user may not reach the agent dir: `blocked`, a directory on the way
 * to it (or the agent dir itself), is one it may not enter (`detail`: the
 * system's code, EACCES). Every client command would fail on it, first on
 * config.json.
 *
 * @category errors
 * @since 0.1.0
 */
export class AgentDirInaccessible extends Data.TaggedError("AgentDirInaccessible")<{
  readonly agentDir: string
  readonly blocked: string
  readonly detail: string
}> {
  override get message(): string {
    const where = this.blocked === this.agentDir ? "may not enter it" : `may not enter ${this.blocked}, above it`
    return `Cannot use the agent dir ${this.agentDir}: this user ${where} (${this.detail}). Run the command as a user who may, or pass an agent dir of your own with --dir.`
  }
}

/**
 * `fs.statSync`'s answer for `file`: a directory, something else, nothing
 * there (missing, or below a file), or not to be looked at by this user
 * (`denied`: a directory above it it may not enter).
 */
const kindOf = (file: string): "directory" | "other" | "missing" | { readonly denied: string } | "unknown" => {
  try {
    return fs.statSync(file).isDirectory() ? "directory" : "other"
  } catch (error) {
    const code = error instanceof Error && "code" in error ? error.code : undefined
    if (code === "ENOENT" || code === "ENOTDIR") return "missing"
    return typeof code === "string" && deniedCodes.has(code) ? { denied: code } : "unknown"
  }
}

/**
 * Checks the agent dir of a client command before anything reads config or
 * spawns a broker: fails with `NoSuchAgentDir` when the agent dir came from
 * `--dir` (`dirFlag`, the value as given) and it does not exist or is a
 * file, and with `IntercomDirNotADirectory` when the intercom dir, or a
 * directory above it that no `--dir` named, is a file. An agent dir from the
 * environment or the default (`~/.pi/agent`) may be missing: the broker
 * creates it. Fails with `AgentDirInaccessible` when a directory on the way
 * is one this user may not enter (which one, as far as it can see).
 */
export const checkAgentDir = (
  paths: Pick<IntercomPaths, "agentDir" | "intercomDir">,
  dirFlag: string | undefined
): Effect.Effect<void, IntercomDirNotADirectory | NoSuchAgentDir | AgentDirInaccessible> =>
  Effect.suspend((): Effect.Effect<void, IntercomDirNotADirectory | NoSuchAgentDir | AgentDirInaccessible> => {
    // Upward from the intercom dir to the first thing this user may look at;
    // the code of a denied look on the way, if any.
    let denied: string | undefined
    for (let file = paths.intercomDir;; file = path.dirname(file)) {
      const kind = kindOf(file)
      if (typeof kind === "object") {
        denied = kind.denied
        if (path.dirname(file) === file) return Effect.void
        continue
      }
      // The deepest directory this user may look at, but not into.
      if (denied !== undefined && kind === "directory") {
        return Effect.fail(new AgentDirInaccessible({ agentDir: paths.agentDir, blocked: file, detail: denied }))
      }
      if (kind === "other" && file === paths.agentDir && dirFlag !== undefined) {
        return Effect.fail(new NoSuchAgentDir({ agentDir: file, given: dirFlag.trim(), homeDir: os.homedir(), isFile: true }))
      }
      if (kind === "other") return Effect.fail(new IntercomDirNotADirectory({ path: file, intercomDir: paths.intercomDir }))
      if (kind === "directory") {
        const agentDirMissing = file !== paths.intercomDir && file !== paths.agentDir
        return dirFlag !== undefined && agentDirMissing
          ? Effect.fail(new NoSuchAgentDir({ agentDir: paths.agentDir, given: dirFlag.trim(), homeDir: os.homedir(), isFile: false }))
          : Effect.void
      }
      if (kind === "unknown" || path.dirname(file) === file) return Effect.void
    }
  })

/**
 * What `broker status` and `stop` check when nothing answers, so that they
 * do not say "not running" where they could not look: no file in the
 * intercom dir's place (`checkAgentDir`), then this user's access
 * (`checkBrokerAccess`).
 */
export const checkBrokerFiles = (
  paths: IntercomPaths
): Effect.Effect<void, IntercomDirNotADirectory | BrokerFilesInaccessible> =>
  Effect.andThen(
    // An agent dir this user may not enter is said by checkBrokerAccess, in the words of "is a broker running".
    checkAgentDir(paths, undefined).pipe(Effect.catchTags({ NoSuchAgentDir: () => Effect.void, AgentDirInaccessible: () => Effect.void })),
    checkBrokerAccess(paths)
  )
