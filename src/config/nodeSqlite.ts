/**
 * Loading `node:sqlite`, the one SQLite this project uses (the agent dir's
 * locks, FileLock.ts; the durable store, src/store/SqliteClient.ts): once,
 * synchronously, without the one-time "ExperimentalWarning: SQLite is an
 * experimental feature" line Node 22 prints on stderr when the module is
 * first loaded (a broker's stderr is its log, a client's its user's
 * terminal), and with a message that says what to do where this Node.js has
 * no such module. No Effect import: the locks load it on the CLI's paths.
 */

/**
 * The `node:sqlite` module.
 *
 * @category models
 * @since 0.1.0
 */
export type SqliteModule = typeof import("node:sqlite")

/**
 * `node:sqlite`, or `undefined` when this Node.js has no such module (before
 * 22.5, 22.5–22.12 without `--experimental-sqlite`, or a Node with no
 * `process.getBuiltinModule`). Other warnings than SQLite's pass through.
 *
 * @category loading
 * @since 0.1.0
 */
export const loadNodeSqlite = (): SqliteModule | undefined => {
  const emitWarning = process.emitWarning
  process.emitWarning = (warning: string | Error, ...rest: Array<unknown>): void => {
    if (String(warning).includes("SQLite is an experimental feature")) return
    Reflect.apply(emitWarning, process, [warning, ...rest])
  }
  try {
    return typeof process.getBuiltinModule === "function" ? process.getBuiltinModule("node:sqlite") : undefined
  } catch {
    return undefined
  } finally {
    process.emitWarning = emitWarning
  }
}

/**
 * What to tell a user whose Node.js has no `node:sqlite`, for `what` (the
 * part that needs it: "The durable store", "The agent dir's lock").
 *
 * @category messages
 * @since 0.1.0
 */
export const sqliteMissingMessage = (what: string, nodeVersion: string): string =>
  `${what} needs node:sqlite, which this Node.js (${nodeVersion}) does not provide. ` +
  `Upgrade Node.js to 22.19 or later, the versions effect-intercom supports.`

/**
 * `node:sqlite` from `load`, or an Error saying which Node.js lacks it and
 * what to do (`sqliteMissingMessage`) — for synchronous callers that turn a
 * thrown error into their own typed failure, as FileLock's do. Before, such a
 * caller on Node 20 died with "Cannot destructure property 'DatabaseSync'".
 *
 * @example
 * ```ts
 * import { requireNodeSqlite } from "./nodeSqlite.ts"
 *
 * const { DatabaseSync } = requireNodeSqlite("The agent dir's lock")
 * ```
 *
 * @category loading
 * @since 0.1.0
 */
export const requireNodeSqlite = (
  what: string,
  load: () => SqliteModule | undefined = loadNodeSqlite,
  nodeVersion: string = process.version
): SqliteModule => {
  const sqlite = load()
  if (sqlite === undefined) throw new Error(sqliteMissingMessage(what, nodeVersion))
  return sqlite
}
