/**
 * Node's compile cache for the `intercom` executable: where it lives and
 * turning it on. main.ts calls `enableCompileCache` before it imports a
 * bundle, so V8 reuses the compiled code of the bundle from the last run
 * (about 50 ms of CPU per start, docs/performance.md).
 *
 * The cache is private to the user: `$NODE_COMPILE_CACHE` when set (Node's
 * own variable, used as given), else `<os.tmpdir()>/intercom-compile-cache-<uid>`,
 * created 0700 and used only while it is a real directory of this uid that
 * no one else may write. Node's default, `<tmpdir>/node-compile-cache`, is
 * shared: the first user to create it owns it, and the code cached in a
 * directory another user can write is code this process would run.
 *
 * A start never fails because of the cache: on a Node without
 * `module.enableCompileCache` (before 22.1), with
 * `NODE_DISABLE_COMPILE_CACHE` set, or when the directory cannot be made
 * private, the bundle is compiled as usual. This module is plain synchronous
 * code that loads only `node:` built-ins (and config/errno.ts), through
 * `process.getBuiltinModule` rather than ES module imports (see main.ts): it
 * runs before anything else of the command, on every start.
 */
import { errorText } from "../config/errno.ts"
import { privateDirProblem } from "../config/privateDir.ts"

/** The environment variables this module reads. */
export interface CompileCacheEnv {
  readonly [name: string]: string | undefined
}

/** What `enableCompileCache` did. */
export type CompileCacheOutcome =
  | { readonly _tag: "Enabled"; readonly directory: string }
  | { readonly _tag: "Unsupported" }
  | { readonly _tag: "Disabled" }
  | { readonly _tag: "Unavailable"; readonly directory: string; readonly reason: string }

/** `module.enableCompileCache` as Node ≥ 22.1 has it (absent before). */
export type EnableCompileCache = (directory: string) => { readonly status: number; readonly message?: string }

/** What `enableCompileCache` depends on, injectable for tests. */
export interface CompileCacheDeps {
  readonly enable: EnableCompileCache | undefined
  readonly env: CompileCacheEnv
  readonly tmpdir: string
  /** The current uid, or -1 where there is none (Windows). */
  readonly uid: number
}

const nonBlank = (value: string | undefined): string | undefined =>
  value === undefined || value.trim() === "" ? undefined : value

/** The user's own cache directory under `tmpdir` (one per uid, so users never share one). */
export const privateCacheDir = (tmpdir: string, uid: number): string =>
  process.getBuiltinModule("node:path").join(tmpdir, uid < 0 ? "intercom-compile-cache" : `intercom-compile-cache-${uid}`)

/** `$NODE_COMPILE_CACHE` when set, else `privateCacheDir`. */
export const compileCacheDir = (env: CompileCacheEnv, tmpdir: string, uid: number): string =>
  nonBlank(env["NODE_COMPILE_CACHE"]) ?? privateCacheDir(tmpdir, uid)

/**
 * Creates `dir` (0700) if needed and checks that it is a real directory
 * owned by `uid` (not a symlink someone planted in a shared tmp dir); a
 * group/world-writable or readable mode is tightened to 0700. The reason it
 * cannot be used, or `undefined` when it can.
 */
export const preparePrivateDir = (dir: string, uid: number): string | undefined => {
  try {
    return privateDirProblem(dir, uid)
  } catch (error) {
    return errorText(error)
  }
}

/** Node's `CompileCacheStatus.FAILED` (the others are ENABLED, ALREADY_ENABLED, DISABLED). */
const FAILED = 0

/**
 * Turns on Node's compile cache in the user's private directory (see the
 * module header), or leaves it off; never throws.
 *
 * @example
 * import * as nodeModule from "node:module"
 * enableCompileCache({ enable: nodeModule.enableCompileCache, env: process.env, tmpdir: os.tmpdir(), uid: process.getuid?.() ?? -1 })
 */
export const enableCompileCache = (deps: CompileCacheDeps): CompileCacheOutcome => {
  if (deps.enable === undefined) return { _tag: "Unsupported" }
  if (nonBlank(deps.env["NODE_DISABLE_COMPILE_CACHE"]) !== undefined) return { _tag: "Disabled" }
  const fromEnv = nonBlank(deps.env["NODE_COMPILE_CACHE"])
  let directory = fromEnv ?? ""
  try {
    directory = fromEnv ?? privateCacheDir(deps.tmpdir, deps.uid)
  } catch (error) {
    // A Node.js with the compile cache but without process.getBuiltinModule (22.1, 22.2).
    return { _tag: "Unavailable", directory, reason: errorText(error) }
  }
  // A directory the user named is theirs to choose; Node creates it.
  const problem = fromEnv === undefined ? preparePrivateDir(directory, deps.uid) : undefined
  if (problem !== undefined) return { _tag: "Unavailable", directory, reason: problem }
  try {
    const result = deps.enable(directory)
    return result.status === FAILED
      ? { _tag: "Unavailable", directory, reason: result.message ?? "Node could not enable it" }
      : { _tag: "Enabled", directory }
  } catch (error) {
    return { _tag: "Unavailable", directory, reason: errorText(error) }
  }
}
