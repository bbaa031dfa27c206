/**
 * The process side of the socket-path rule (see `socketPath.ts`): which
 * runtime dir, uid and length limit apply to this process, and preparing the
 * private fallback dir before a broker listens in it or a client dials into it.
 */
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { type Environment, nonBlank } from "./agentDir.ts"
import { errorText } from "./errno.ts"
import { privateDirProblem } from "./privateDir.ts"
import { SocketPathError, type SocketPlacement, socketPathLimit } from "./socketPath.ts"

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

/** The current user's uid, or -1 where there is none (Windows). */
export const currentUid = (): number => process.getuid?.() ?? -1

/** The placement for this process: runtime dir from `env`, this uid, this platform's limit. */
export const processSocketPlacement = (env: Environment): Effect.Effect<SocketPlacement> =>
  Effect.map(chooseRuntimeDir(env), (runtimeDir) => ({
    runtimeDir,
    uid: currentUid(),
    maxSocketBytes: socketPathLimit(process.platform)
  }))

/**
 * Creates the private fallback dir (0700) if needed and checks that it is a
 * real directory owned by `uid`, not a symlink someone planted in a shared
 * tmp dir; a group/world-accessible mode is tightened back to 0700. The
 * broker runs it before listening, a client before dialling, so that neither
 * talks through a directory another user controls.
 */
export const prepareFallbackDir = (dir: string, uid: number): Effect.Effect<void, SocketPathError> =>
  Effect.try({
    try: () => privateDirProblem(dir, uid),
    catch: (error) => new SocketPathError({ kind: "FallbackDirUnsafe", path: dir, detail: errorText(error) })
  }).pipe(
    Effect.flatMap((problem) =>
      problem === undefined
        ? Effect.void
        : Effect.fail(new SocketPathError({ kind: "FallbackDirUnsafe", path: dir, detail: problem }))
    )
  )
