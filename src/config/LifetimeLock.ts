/**
 * The broker's lifetime lock, `<intercomDir>/broker.lock`: one broker per
 * agent dir, by construction. A broker takes it before it listens and lets
 * it go after it has closed. The kernel drops it when the process dies,
 * however it dies (SIGKILL included), and keeps it while the process is
 * frozen (SIGSTOP, swap, a debugger, a long GC pause) — so a broker that does
 * not answer is never mistaken for a dead one and replaced, and a client
 * never starts a second broker beside it.
 *
 * The lock is SQLite's: an exclusive transaction on an empty database,
 * opened through `node:sqlite` (built into Node ≥ 22.5; no native build).
 * SQLite locks with POSIX record locks (fcntl), which have exactly the two
 * properties above; Node itself has no `flock`. Measured on Linux, Node
 * 24.21, two loaded cores, against the other candidate, a Linux
 * abstract-namespace Unix socket bound for the broker's lifetime:
 *
 * |                       | SQLite (chosen)                  | abstract socket                        |
 * |-----------------------|----------------------------------|----------------------------------------|
 * | load the module       | 0.9–1.5 ms, sync                 | none (`net` is loaded anyway)          |
 * | acquire               | 1.2–1.7 ms, sync (open + BEGIN)  | 3–5 ms, async (listen)                 |
 * | release               | 1.6–4.6 ms (close)               | 0.15 ms                                |
 * | holder SIGSTOPped     | held                             | held                                   |
 * | holder SIGKILLed      | free at once                     | free at once                           |
 * | macOS                 | yes (fcntl)                      | no: Linux only                         |
 * | who can block it      | only this user (0700 dir, 0600)  | any local user can bind the name first |
 * | containers            | shared by all that share the dir | one per network namespace              |
 *
 * Both fit the 150 ms spawn → health budget (bench/ `startup`); SQLite is
 * the one that works on macOS and that no other user can take. Two things
 * follow from fcntl semantics:
 *
 * - A process loses *all* its locks on a file when it closes *any*
 *   descriptor of that file. Nothing in a broker may open `broker.lock`
 *   except through SQLite (which tracks its own descriptors); chmod by path
 *   is harmless.
 * - Asking whether the lock is held (`isLifetimeLockHeld`) takes a shared
 *   lock for a few microseconds, so taking the lock waits up to
 *   `PROBE_GRACE_MS` for such a probe to finish instead of failing at once.
 */
import { Data, Effect, type Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import type { DatabaseSync } from "node:sqlite"

/** `<intercomDir>/broker.lock`. */
export const lifetimeLockFile = (intercomDir: string): string => path.join(intercomDir, "broker.lock")

/** A live process — maybe a frozen one — holds the lock: a broker of this agent dir is running. */
export class LifetimeLockHeld extends Data.TaggedError("LifetimeLockHeld")<{ readonly path: string }> {
  override get message(): string {
    return `${this.path} is held by a running broker`
  }
}

/** The lock file could not be used at all (not "someone holds it": that is `LifetimeLockHeld`). */
export class LifetimeLockFailed extends Data.TaggedError("LifetimeLockFailed")<{
  readonly path: string
  readonly detail: string
}> {
  override get message(): string {
    return `Cannot use the broker lock ${this.path}: ${this.detail}. If no broker runs for this agent dir, remove the file.`
  }
}

/** How long taking the lock waits for a client's probe (a shared lock held for microseconds) to let go. */
const PROBE_GRACE_MS = 250

const SQLITE_BUSY = 5

/** SQLite's primary result code of a `node:sqlite` error, if it is one. */
const sqliteCode = (error: unknown): number | undefined =>
  typeof error === "object" && error !== null && "errcode" in error && typeof error.errcode === "number"
    ? error.errcode & 0xff
    : undefined

const describe = (error: unknown): string => error instanceof Error ? error.message : String(error)

/**
 * `node:sqlite`, loaded synchronously and without the one-time
 * "ExperimentalWarning: SQLite is an experimental feature" line that Node 22
 * prints on stderr when the module is first loaded (a broker's stderr is its
 * log, a client's is its user's terminal). Other warnings pass through.
 */
const loadSqlite = (): typeof import("node:sqlite") => {
  const emitWarning = process.emitWarning
  process.emitWarning = (warning: string | Error, ...rest: Array<unknown>): void => {
    if (String(warning).includes("SQLite is an experimental feature")) return
    Reflect.apply(emitWarning, process, [warning, ...rest])
  }
  try {
    return process.getBuiltinModule("node:sqlite")
  } finally {
    process.emitWarning = emitWarning
  }
}

/** Opens (creating it 0600 if needed) the lock file and takes the exclusive lock; throws SQLite's error. */
const lock = (file: string): DatabaseSync => {
  const { DatabaseSync } = loadSqlite()
  const previous = process.umask(0o177)
  let db: DatabaseSync
  try {
    db = new DatabaseSync(file)
  } finally {
    process.umask(previous)
  }
  try {
    fs.chmodSync(file, 0o600) // a lock file an older run left with a looser mode
    db.exec(`PRAGMA busy_timeout = ${PROBE_GRACE_MS}`)
    db.exec("PRAGMA journal_mode = MEMORY") // no broker.lock-journal beside it
    db.exec("BEGIN EXCLUSIVE") // never committed: closing the database (or dying) ends it
    return db
  } catch (error) {
    db.close()
    throw error
  }
}

/**
 * Holds the lifetime lock of `intercomDir` for as long as the current Scope
 * is open. Fails with `LifetimeLockHeld` if a live process (running or
 * frozen) holds it, `LifetimeLockFailed` if the file cannot be used.
 *
 * @example
 * ```ts
 * yield* holdLifetimeLock(intercomDir).pipe(
 *   Effect.catchTag("LifetimeLockHeld", () => Effect.fail(new AlreadyRunning()))
 * )
 * // … listen; the lock goes when the Scope closes, or with the process
 * ```
 */
export const holdLifetimeLock = (
  intercomDir: string
): Effect.Effect<void, LifetimeLockHeld | LifetimeLockFailed, Scope.Scope> => {
  const file = lifetimeLockFile(intercomDir)
  return Effect.acquireRelease(
    Effect.try({
      try: () => lock(file),
      catch: (error) =>
        sqliteCode(error) === SQLITE_BUSY
          ? new LifetimeLockHeld({ path: file })
          : new LifetimeLockFailed({ path: file, detail: describe(error) })
    }),
    (db) => Effect.sync(() => db.close())
  ).pipe(Effect.asVoid)
}

/**
 * Whether a live process — possibly a frozen one — holds the lifetime lock
 * of `intercomDir`. Takes nothing and creates nothing: a missing or unusable
 * lock file is not held.
 */
export const isLifetimeLockHeld = (intercomDir: string): Effect.Effect<boolean> =>
  Effect.sync(() => {
    const file = lifetimeLockFile(intercomDir)
    if (!fs.existsSync(file)) return false // nothing to lock: no broker has run here yet
    let db: DatabaseSync | undefined
    try {
      db = new (loadSqlite().DatabaseSync)(file, { readOnly: true })
      db.exec("BEGIN")
      db.prepare("SELECT count(*) FROM sqlite_master").get() // a shared lock: refused while a broker holds it
      return false
    } catch (error) {
      return sqliteCode(error) === SQLITE_BUSY
    } finally {
      db?.close()
    }
  })
