/**
 * Where the broker's runtime files live (P90), plus the short socket path used
 * when `<intercomDir>/broker.sock` would not fit in a Unix socket address.
 * The agent-dir rules themselves come from `config/agentDir.ts`, their single
 * source of truth; this module adds the socket-path fallback.
 *
 * The resolution functions are pure (inputs in, paths out) so they can be unit
 * tested; the effectful parts — choosing a usable runtime dir and preparing the
 * private fallback dir — are separate and small.
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { type Environment, intercomPaths, nonBlank, resolveAgentDir } from "../config/agentDir.ts"

/**
 * Longest socket path, in bytes, the platform accepts: `sun_path` is 108 bytes
 * on Linux and 104 on macOS/BSD, one of which is the terminating NUL.
 */
export const socketPathLimit = (platform: NodeJS.Platform): number => platform === "linux" ? 107 : 103

/** First 16 hex digits of sha256(agentDir): names the short socket of one agent dir. */
export const agentDirHash = (agentDir: string): string =>
  createHash("sha256").update(agentDir, "utf8").digest("hex").slice(0, 16)

export interface PathInputs {
  /** Absolute agent dir (see `resolveAgentDir` in config/agentDir.ts). */
  readonly agentDir: string
  /** Base for the short fallback socket (see `chooseRuntimeDir`). */
  readonly runtimeDir: string
  readonly uid: number
  /** See `socketPathLimit`. */
  readonly maxSocketBytes: number
}

export interface IntercomPaths {
  readonly agentDir: string
  /** `<agentDir>/intercom`. */
  readonly intercomDir: string
  /** `<intercomDir>/broker.pid`. */
  readonly pidFile: string
  /** `<intercomDir>/broker.sock`: where pi-intercom clients look. */
  readonly defaultSocketPath: string
  /** Where the broker listens: `defaultSocketPath`, or the short fallback. */
  readonly socketPath: string
  /** Set when `defaultSocketPath` is too long: the private dir that holds the short socket. */
  readonly fallbackDir: string | undefined
}

export class SocketPathError extends Data.TaggedError("SocketPathError")<{
  readonly reason: "TooLong" | "FallbackDirUnsafe"
  readonly path: string
  readonly detail: string
}> {
  override get message(): string {
    switch (this.reason) {
      case "TooLong":
        return `The broker socket path ${this.path} is too long for a Unix socket (${this.detail}), and so is the short fallback under the runtime dir. Use a shorter agent dir (--dir), or set XDG_RUNTIME_DIR or TMPDIR to a short directory.`
      case "FallbackDirUnsafe":
        return `Cannot use ${this.path} for the broker socket: ${this.detail}. Remove it, or set XDG_RUNTIME_DIR or TMPDIR to another directory.`
    }
  }
}

const fits = (socketPath: string, maxBytes: number): boolean => Buffer.byteLength(socketPath, "utf8") <= maxBytes

/**
 * All runtime paths of one agent dir. When `<agentDir>/intercom/broker.sock`
 * exceeds `maxSocketBytes`, the socket moves to
 * `<runtimeDir>/intercom-<uid>/<agentDirHash>.sock`; the pid file stays in the
 * intercom dir either way.
 */
export const resolvePaths = (inputs: PathInputs): IntercomPaths | SocketPathError => {
  const files = intercomPaths(inputs.agentDir)
  const defaultSocketPath = files.socketPath
  const base = {
    agentDir: files.agentDir,
    intercomDir: files.intercomDir,
    pidFile: files.pidFile,
    defaultSocketPath
  }
  if (fits(defaultSocketPath, inputs.maxSocketBytes)) {
    return { ...base, socketPath: defaultSocketPath, fallbackDir: undefined }
  }
  const fallbackDir = path.join(inputs.runtimeDir, `intercom-${inputs.uid}`)
  const socketPath = path.join(fallbackDir, `${agentDirHash(inputs.agentDir)}.sock`)
  if (!fits(socketPath, inputs.maxSocketBytes)) {
    return new SocketPathError({
      reason: "TooLong",
      path: defaultSocketPath,
      detail: `${Buffer.byteLength(defaultSocketPath, "utf8")} bytes, the limit is ${inputs.maxSocketBytes}`
    })
  }
  return { ...base, socketPath, fallbackDir }
}

const isUsableDir = (dir: string): boolean => {
  try {
    if (!fs.statSync(dir).isDirectory()) return false
    fs.accessSync(dir, fs.constants.W_OK | fs.constants.X_OK)
    return true
  } catch {
    return false
  }
}

/** `$XDG_RUNTIME_DIR` when it is an absolute, writable directory; else `os.tmpdir()`. */
export const chooseRuntimeDir = (env: Environment): Effect.Effect<string> =>
  Effect.sync(() => {
    const xdg = nonBlank(env["XDG_RUNTIME_DIR"])
    return xdg !== undefined && path.isAbsolute(xdg) && isUsableDir(xdg) ? xdg : os.tmpdir()
  })

const errorText = (error: unknown): string =>
  error instanceof Error ? ("code" in error && typeof error.code === "string" ? error.code : error.message) : String(error)

/**
 * Creates the private fallback dir (0700) if needed and checks that it is a
 * real directory owned by `uid`, not a symlink someone planted in a shared
 * tmp dir; a group/world-accessible mode is tightened back to 0700.
 */
export const prepareFallbackDir = (dir: string, uid: number): Effect.Effect<void, SocketPathError> =>
  Effect.try({
    try: () => {
      try {
        fs.mkdirSync(dir, { mode: 0o700 })
      } catch (error) {
        if (!(error instanceof Error && "code" in error && error.code === "EEXIST")) throw error
      }
      const stat = fs.lstatSync(dir)
      if (stat.isSymbolicLink()) return "it is a symbolic link"
      if (!stat.isDirectory()) return "it is not a directory"
      if (uid >= 0 && stat.uid !== uid) return `it is owned by uid ${stat.uid}, not by this user (uid ${uid})`
      if ((stat.mode & 0o077) !== 0) fs.chmodSync(dir, 0o700)
      return undefined
    },
    catch: (error) => new SocketPathError({ reason: "FallbackDirUnsafe", path: dir, detail: errorText(error) })
  }).pipe(
    Effect.flatMap((problem) =>
      problem === undefined
        ? Effect.void
        : Effect.fail(new SocketPathError({ reason: "FallbackDirUnsafe", path: dir, detail: problem }))
    )
  )

/** The current user's uid, or -1 where there is none (Windows). */
export const currentUid = (): number => process.getuid?.() ?? -1

export interface ProcessInputs {
  /** The `--dir` flag, if given. */
  readonly dir: string | undefined
  readonly env: Environment
  readonly cwd: string
  readonly homeDir: string
  readonly runtimeDir: string
  readonly uid: number
  readonly maxSocketBytes: number
}

/**
 * `resolveAgentDir` (`--dir`, else `ATOMIC_CODING_AGENT_DIR`, else
 * `PI_CODING_AGENT_DIR`, else `~/.pi/agent`) followed by `resolvePaths`.
 */
export const resolveCliPaths = (inputs: ProcessInputs): IntercomPaths | SocketPathError =>
  resolvePaths({
    agentDir: resolveAgentDir({ dir: inputs.dir, env: inputs.env, cwd: inputs.cwd, homeDir: inputs.homeDir }).agentDir,
    runtimeDir: inputs.runtimeDir,
    uid: inputs.uid,
    maxSocketBytes: inputs.maxSocketBytes
  })

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
      runtimeDir: yield* chooseRuntimeDir(env),
      uid: currentUid(),
      maxSocketBytes: socketPathLimit(process.platform)
    })
    return result instanceof SocketPathError ? yield* result : result
  })
