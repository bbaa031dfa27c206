/**
 * A file where the intercom dir, or a directory above it, must be: finding
 * it and saying so. One wording for every place that meets it — the CLI's
 * check of a client command's agent dir (cli/paths.ts `checkAgentDir`) and a
 * library client spawning a broker (client/spawn.ts) — so that the user reads
 * the same path and the same remedy whichever way they got there. Lives in
 * config, beside the agent dir's rules, because src/client must not import
 * src/cli. Synchronous and import-light (`node:fs` from
 * `process.getBuiltinModule`, as privateDir.ts does).
 */

/**
 * The first of `dir` and its ancestors that exists but is not a directory,
 * or `undefined` when there is none (or none this user may see).
 *
 * @example
 * // /tmp/afile is a file
 * fileInTheWay("/tmp/afile/sub/intercom") // "/tmp/afile"
 */
export const fileInTheWay = (dir: string): string | undefined => {
  const fs = process.getBuiltinModule("node:fs")
  const path = process.getBuiltinModule("node:path")
  for (let current = dir;; current = path.dirname(current)) {
    try {
      return fs.statSync(current).isDirectory() ? undefined : current
    } catch {
      if (path.dirname(current) === current) return undefined
    }
  }
}

/**
 * The message for `file` standing where `intercomDir` (the intercom dir
 * itself, or a directory above it) must be: which path, and what to do.
 * `otherDir` says how this caller passes another agent dir (the CLI: "with
 * --dir").
 *
 * @example
 * intercomDirInTheWay({ intercomDir: "/a/f/intercom", file: "/a/f", otherDir: "with --dir" })
 * // "Cannot use the intercom directory /a/f/intercom: /a/f, a file above it, is in the way. Move that file out of the way, or pass another agent dir with --dir."
 */
export const intercomDirInTheWay = (
  options: { readonly intercomDir: string; readonly file: string; readonly otherDir: string }
): string => {
  const what = options.file === options.intercomDir
    ? "it is not a directory"
    : `${options.file}, a file above it, is in the way`
  return `Cannot use the intercom directory ${options.intercomDir}: ${what}. Move that file out of the way, or pass another agent dir ${options.otherDir}.`
}
