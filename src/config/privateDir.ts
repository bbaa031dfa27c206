/**
 * A directory private to one user, made or checked before anything private
 * goes in it: the broker's fallback socket directory (runtimeDir.ts) and the
 * CLI's compile cache (cli/compileCache.ts). Both live under a shared
 * temporary directory, where another user could have planted a symlink or a
 * directory of their own first. Synchronous and import-light: the CLI's entry
 * runs it before it loads anything heavy, and it takes `node:fs` from
 * `process.getBuiltinModule` when it runs rather than by an ES module import,
 * whose module facade for `node:fs` costs every command several ms of CPU
 * (docs/performance.md, "`intercom send`, fourth stop"). Also the client's
 * check that a socket it is about to dial is its own user's
 * (`foreignSocketProblem`).
 */
import { errorCode } from "./errno.ts"

/**
 * Creates `dir` (0700) if it is missing and checks that it is a real
 * directory owned by `uid` (any owner when `uid` is negative: no uid on this
 * platform); a group- or world-accessible mode is tightened back to 0700.
 * Returns why it cannot be used, or `undefined` when it can. Throws what the
 * file system throws (the caller says what it was for).
 *
 * @example
 * const problem = privateDirProblem(path.join(os.tmpdir(), "x-1000"), 1000)
 * if (problem !== undefined) console.error(`not using it: ${problem}`)
 */
export const privateDirProblem = (dir: string, uid: number): string | undefined => {
  const fs = process.getBuiltinModule("node:fs")
  try {
    fs.mkdirSync(dir, { mode: 0o700 })
  } catch (error) {
    if (errorCode(error) !== "EEXIST") throw error
  }
  const stat = fs.lstatSync(dir)
  if (stat.isSymbolicLink()) return "it is a symbolic link"
  if (!stat.isDirectory()) return "it is not a directory"
  if (uid >= 0 && stat.uid !== uid) return `it is owned by uid ${stat.uid}, not by this user (uid ${uid})`
  if ((stat.mode & 0o077) !== 0) fs.chmodSync(dir, 0o700)
  return undefined
}

/**
 * Why a client must not dial `socketPath` in `intercomDir`, or `undefined`
 * when it may: the directory (when it exists) or the socket file (when it
 * exists) belongs to a user other than `uid` and root. Such a user could have
 * put their own listener there, which would then receive this user's
 * messages, and could point the client's spawn lock and `broker.log` at
 * files of this user's. The broker refuses such a directory at start (it
 * cannot chmod it 0700); this is the client's side of the same rule. Root
 * (`uid` 0) is refused another user's directory too, though a broker it
 * starts could chmod it: that user writes the `config.json` there, whose
 * `brokerCommand` a spawning client runs. Any
 * owner passes when `uid` is negative (no uid on this platform). Follows a
 * symlinked directory (its target must be ours); throws what the file
 * system throws, other than a missing path.
 *
 * @example
 * const problem = foreignSocketProblem("/tmp/shared/intercom", "/tmp/shared/intercom/broker.sock", 1000)
 * // "/tmp/shared/intercom is owned by uid 1001, not by this user (uid 1000)"
 */
export const foreignSocketProblem = (intercomDir: string, socketPath: string, uid: number): string | undefined => {
  if (uid < 0) return undefined
  const fs = process.getBuiltinModule("node:fs")
  const ownerOf = (file: string, follow: boolean): number | undefined => {
    try {
      return (follow ? fs.statSync(file) : fs.lstatSync(file)).uid
    } catch (error) {
      if (errorCode(error) === "ENOENT") return undefined
      throw error
    }
  }
  // Root is refused too, as ssh refuses root a config file another user owns: that user writes the
  // config.json there, whose brokerCommand a spawning client would run as root.
  const asRoot = uid === 0
    ? "; root is refused too, since that user controls its config.json (whose brokerCommand a spawning client " +
      "runs): run the command as that user"
    : ""
  const foreign = (file: string, owner: number | undefined): string | undefined =>
    owner === undefined || owner === uid || owner === 0
      ? undefined
      : `${file} is owned by uid ${owner}, not by this user (uid ${uid})${asRoot}`
  return foreign(intercomDir, ownerOf(intercomDir, true)) ?? foreign(socketPath, ownerOf(socketPath, false))
}
