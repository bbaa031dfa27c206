/**
 * `resolveIntercomSettings` for the real process: the real environment, cwd
 * and home dir, and config files read through the `FileSystem` service
 * (`NodeServices.layer` / `NodeFileSystem.layer` in production, any in-memory
 * implementation in tests).
 */
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as fs from "node:fs"
import * as os from "node:os"
import { configFileCandidates, type Environment, resolveAgentDir } from "./agentDir.ts"
import { errorCode, errorMessage } from "./errno.ts"
import { IntercomEnvError } from "./errors.ts"
import { processSocketPlacement } from "./runtimeDir.ts"
import { ConfigFileRead } from "./configFile.ts"
import { type IntercomSettings, type IntercomSettingsResolution, resolveIntercomSettings } from "./settings.ts"
import { SocketPathError, type SocketPlacement } from "./socketPath.ts"

/** Overrides for `loadIntercomSettings`/`readIntercomSettings`; each defaults to this process's own. */
export interface LoadIntercomSettingsOptions {
  /** An explicit agent dir (e.g. a `--dir` flag); beats the environment. */
  readonly dir?: string | undefined
  /** Defaults to `process.env`. */
  readonly env?: Environment | undefined
  /** Defaults to `process.cwd()`. */
  readonly cwd?: string | undefined
  /** Defaults to `os.homedir()`. */
  readonly homeDir?: string | undefined
  /** Defaults to `processSocketPlacement(env)`: runtime dir from `env`, this uid, this platform. */
  readonly socketPlacement?: SocketPlacement | undefined
}

/** Reads one file: `Missing` when it does not exist, `Unreadable` for any other failure. */
export const readConfigFile = (path: string): Effect.Effect<ConfigFileRead, never, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    return yield* fs.readFileString(path).pipe(
      Effect.map(ConfigFileRead.text),
      Effect.catchTag("PlatformError", (error) =>
        Effect.succeed(
          error.reason._tag === "NotFound" ? ConfigFileRead.missing : ConfigFileRead.unreadable(error.message)
        ))
    )
  })

/**
 * `readConfigFile` for a caller that cannot run an Effect (the pi extension
 * factory, which pi calls synchronously): the same answers, from `node:fs`.
 * `Missing` only when the file does not exist (`ENOENT`), `Unreadable` for
 * any other failure.
 */
export const readConfigFileSync = (path: string): ConfigFileRead => {
  try {
    return ConfigFileRead.text(fs.readFileSync(path, "utf8"))
  } catch (error) {
    return errorCode(error) === "ENOENT" ? ConfigFileRead.missing : ConfigFileRead.unreadable(errorMessage(error))
  }
}

/**
 * Resolves the settings without logging or failing: the caller decides what
 * to do with `warnings` and `errors`.
 */
export const readIntercomSettings = Effect.fn("readIntercomSettings")(function*(
  options: LoadIntercomSettingsOptions = {}
): Effect.fn.Return<IntercomSettingsResolution, never, FileSystem.FileSystem> {
  const env = options.env ?? (yield* Effect.sync(() => ({ ...process.env })))
  const cwd = options.cwd ?? (yield* Effect.sync(() => process.cwd()))
  const homeDir = options.homeDir ?? (yield* Effect.sync(() => os.homedir()))
  const socketPlacement = options.socketPlacement ?? (yield* processSocketPlacement(env))
  const agentDir = resolveAgentDir({ dir: options.dir, env, cwd, homeDir })

  // Read candidates in order until one exists, exactly as the resolver will consult them.
  const reads = new Map<string, ConfigFileRead>()
  for (const path of configFileCandidates(agentDir, homeDir, cwd)) {
    const read = yield* readConfigFile(path)
    reads.set(path, read)
    if (read._tag !== "Missing") break
  }
  return resolveIntercomSettings({
    dir: options.dir,
    env,
    cwd,
    homeDir,
    socketPlacement,
    readFile: (path) => reads.get(path) ?? ConfigFileRead.missing
  })
})

/** Logs warnings (`logWarning`) and a rejected config file (`logError`). */
export const logIntercomSettingsProblems = (resolution: IntercomSettingsResolution): Effect.Effect<void> =>
  Effect.gen(function*() {
    for (const warning of resolution.warnings) yield* Effect.logWarning(warning)
    for (const error of resolution.errors) {
      if (error._tag === "IntercomConfigFileError") yield* Effect.logError(error.message)
    }
  })

/**
 * The effective settings of this process, `paths.socketPath` included (the
 * short fallback for a long agent dir, as the broker computes it). Warnings
 * and a rejected `config.json` are logged (defaults apply, C-CFG-2); an
 * invalid `…_ASK_TIMEOUT_MS` fails with `IntercomEnvError`, and an agent dir
 * with no usable socket path with `SocketPathError`: startup errors. Use it
 * to build `IntercomClient` and `IntercomSession` options (see
 * `IntercomClient` in `effect-intercom/client`).
 *
 * @example
 * ```ts
 * import { NodeServices } from "@effect/platform-node"
 * import { Effect } from "effect"
 * import { loadIntercomSettings } from "effect-intercom/config"
 *
 * const program = Effect.gen(function*() {
 *   const settings = yield* loadIntercomSettings({ dir: process.argv[2] }) // e.g. a --dir flag
 *   if (!settings.enabled) return // `"enabled": false`: never connect, never appear in `list`
 *   yield* Effect.log(`broker socket: ${settings.paths.socketPath}`)
 * }).pipe(
 *   // Startup errors; a rejected config.json was logged, and defaults apply.
 *   Effect.catchTags({
 *     IntercomEnvError: (error) => Effect.logError(error.message), // e.g. a bad PI_INTERCOM_ASK_TIMEOUT_MS
 *     SocketPathError: (error) => Effect.logError(error.message) // no usable socket path for this agent dir
 *   })
 * )
 *
 * program.pipe(Effect.provide(NodeServices.layer), Effect.runPromise)
 * ```
 */
export const loadIntercomSettings = Effect.fn("loadIntercomSettings")(function*(
  options: LoadIntercomSettingsOptions = {}
): Effect.fn.Return<IntercomSettings, IntercomEnvError | SocketPathError, FileSystem.FileSystem> {
  const resolution = yield* readIntercomSettings(options)
  yield* logIntercomSettingsProblems(resolution)
  const startupError = resolution.errors.find((error) =>
    error instanceof IntercomEnvError || error instanceof SocketPathError
  )
  if (startupError !== undefined) return yield* startupError
  return resolution.settings
})
