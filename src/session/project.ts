/**
 * Project scope for `list` and `status` (C-TOOL-16): `"project"` shows the
 * sessions whose cwd is this session's, or lies in the same Git repository
 * (worktrees of one repository count as one project, through their common
 * Git directory); `"all"` shows every session. The scope is only a display
 * filter: a hidden session can still be targeted.
 *
 * The repository of a cwd is found by reading the file system (`.git`
 * directories and `gitdir:` / `commondir` files), synchronously; peers share
 * this machine, so their cwds are readable paths here too.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import type { SessionInfo } from "../protocol/frames.ts"

/**
 * Which sessions `list` and `status` show.
 *
 * @category models
 * @since 0.1.0
 */
export type ListScope = "project" | "all"

/**
 * Whether a string names a scope.
 *
 * @category guards
 * @since 0.1.0
 */
export const isListScope = (value: string): value is ListScope => value === "project" || value === "all"

const readText = (file: string): string | undefined => {
  try {
    return fs.readFileSync(file, "utf8").trim()
  } catch {
    return undefined
  }
}

const realpath = (file: string): string => {
  try {
    return fs.realpathSync(file)
  } catch {
    return path.resolve(file)
  }
}

/** The common Git directory of the repository a `.git` entry belongs to, or undefined. */
const commonGitDir = (dotGit: string): string | undefined => {
  let stat: fs.Stats
  try {
    stat = fs.statSync(dotGit)
  } catch {
    return undefined
  }
  if (stat.isDirectory()) return realpath(dotGit)
  const pointer = readText(dotGit)?.match(/^gitdir:\s*(.+)$/m)?.[1]
  if (pointer === undefined) return undefined
  const gitDir = path.resolve(path.dirname(dotGit), pointer)
  const common = readText(path.join(gitDir, "commondir"))
  return realpath(common === undefined ? gitDir : path.resolve(gitDir, common))
}

/**
 * The project a cwd belongs to: its repository's common Git directory, or the
 * cwd itself outside a repository.
 *
 * @category scope
 * @since 0.1.0
 */
export const projectKey = (cwd: string): string => {
  let dir = path.resolve(cwd)
  for (;;) {
    const common = commonGitDir(path.join(dir, ".git"))
    if (common !== undefined) return `git:${common}`
    const parent = path.dirname(dir)
    if (parent === dir) return `cwd:${realpath(cwd)}`
    dir = parent
  }
}

/**
 * The sessions a scope shows, in their order; `self` is always kept.
 *
 * @category scope
 * @since 0.1.0
 */
export const inScope = (
  scope: ListScope,
  self: SessionInfo,
  sessions: ReadonlyArray<SessionInfo>
): ReadonlyArray<SessionInfo> => {
  if (scope === "all") return sessions
  const keys = new Map<string, string>()
  const keyOf = (cwd: string): string => {
    let key = keys.get(cwd)
    if (key === undefined) keys.set(cwd, key = projectKey(cwd))
    return key
  }
  const own = keyOf(self.cwd)
  return sessions.filter((session) =>
    session.id === self.id || session.cwd === self.cwd || keyOf(session.cwd) === own
  )
}
