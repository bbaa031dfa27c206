/**
 * An exclusive lock on a file, held for as long as a Scope is open: one
 * holder at a time, in this process and across processes. The broker's
 * lifetime lock (LifetimeLock.ts), a workflow parent's journal
 * (workflow/ParentJournal.ts) and a pi session's client instance
 * (pi/instance.ts, whose files are removable) are its users.
 *
 * The lock is SQLite's: an exclusive transaction, never committed, on an
 * empty database, opened through `node:sqlite` (built into Node ≥ 22.5; no
 * native build). SQLite locks with POSIX record locks (fcntl), so:
 *
 * - the kernel drops the lock when the process dies, however it dies
 *   (SIGKILL included), and keeps it while the process is frozen (SIGSTOP,
 *   swap, a debugger, a long GC pause): a holder that does not answer is
 *   never mistaken for a dead one;
 * - a process loses *all* its locks on a file when it closes *any*
 *   descriptor of that file, so nothing may open the lock file except
 *   through this module (SQLite tracks its own descriptors, and tells two
 *   connections of one process apart); chmod by path is harmless;
 * - asking whether it is held (`isFileLockHeld`) takes a shared lock for a
 *   few microseconds, so taking a lock that is probed waits up to
 *   `probeGraceMs` (250 ms by default) for such a probe to finish instead of
 *   failing at once. The wait blocks the thread, so a lock nobody probes
 *   takes 0.
 *
 * Why SQLite rather than a bound socket or `flock` (Node has none): the
 * measurements are in LifetimeLock.ts's header.
 *
 * A lock file is normally kept after its holder ends: a process that opened
 * the file and waits to lock it would otherwise lock a file no path names any
 * more, while a newcomer creates and locks a new one under the same name —
 * two holders. `holdRemovableFileLock` removes its file when it lets go, and
 * makes that safe for every locker of the same file that goes through it: the
 * file is unlinked only by its holder, before it lets go, and a locker checks,
 * once it holds the lock, that the path still names the file it locked (the
 * kernel's list of holders, `/proc/locks`, names this process — as /proc
 * numbers it, `/proc/self`, which in a pid namespace whose /proc is its
 * parent's is not `process.pid` — for the inode the path names), and starts
 * again when it does not. SQLite gives no access to its descriptor, and
 * opening one of our own would drop the lock when it is closed, so the
 * kernel's list is the only check that opens nothing. On Linux a locker that
 * cannot read it (a sandbox that hides /proc) fails with `FileLockFailed`
 * rather than hold unchecked, since other lockers of the file may read it and
 * remove the file; where no system has it (macOS) nothing is removed and
 * nothing is checked.
 */
import { Data, Effect, type Scope } from "effect"
import * as fs from "node:fs"
import type { DatabaseSync } from "node:sqlite"
import { errorCode, errorMessage } from "./errno.ts"
import { requireNodeSqlite } from "./nodeSqlite.ts"

/** Who needs `node:sqlite` here, for the message where this Node.js has none. */
const LOCK_NEEDS = "The lock of an intercom file"

/**
 * A live process — maybe a frozen one, maybe this one — holds the lock.
 *
 * @category errors
 * @since 0.1.0
 */
export class FileLockHeld extends Data.TaggedError("FileLockHeld")<{ readonly path: string }> {
  override get message(): string {
    return `the lock ${this.path} is held by a live process`
  }
}

/**
 * The lock file could not be used at all (not "someone holds it": that is `FileLockHeld`).
 *
 * @category errors
 * @since 0.1.0
 */
export class FileLockFailed extends Data.TaggedError("FileLockFailed")<{
  readonly path: string
  readonly detail: string
}> {
  override get message(): string {
    return `cannot use the lock file ${this.path}: ${this.detail}`
  }
}

/** How long taking the lock waits, by default, for a probe (a shared lock held for microseconds) to let go. */
const PROBE_GRACE_MS = 250

const SQLITE_BUSY = 5

/** SQLite's primary result code of a `node:sqlite` error, if it is one. */
const sqliteCode = (error: unknown): number | undefined =>
  typeof error === "object" && error !== null && "errcode" in error && typeof error.errcode === "number"
    ? error.errcode & 0xff
    : undefined


/**
 * Opens (creating it 0600 if needed) the lock file and takes the exclusive lock; throws SQLite's error.
 * `betweenOpenAndLock` runs after the open, before the lock (a test's way into that window).
 */
const lock = (file: string, probeGraceMs: number, betweenOpenAndLock?: () => void): DatabaseSync => {
  const { DatabaseSync } = requireNodeSqlite(LOCK_NEEDS)
  const previous = process.umask(0o177)
  let db: DatabaseSync
  try {
    db = new DatabaseSync(file)
  } finally {
    process.umask(previous)
  }
  try {
    betweenOpenAndLock?.()
    db.exec(`PRAGMA busy_timeout = ${probeGraceMs}`)
    db.exec("PRAGMA journal_mode = MEMORY") // no <file>-journal beside it
    db.exec("BEGIN EXCLUSIVE") // never committed: closing the database (or dying) ends it
    // A lock file an older run left with a looser mode; only once it is known to be one (not another program's file).
    fs.chmodSync(file, 0o600)
    return db
  } catch (error) {
    db.close()
    throw error
  }
}

/**
 * Holds the exclusive lock on `file` (created 0600 if missing; its
 * directory must exist) for as long as the current Scope is open. Fails
 * with `FileLockHeld` if a live process holds it — this one included —
 * and with `FileLockFailed` if the file cannot be used (it is not a lock
 * file, or the directory is not writable). `probeGraceMs`: how long to wait
 * for an `isFileLockHeld` probe to let go (default 250 ms, blocking); 0 for
 * a lock nobody probes.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { holdFileLock } from "./FileLock.ts"
 *
 * const program = Effect.scoped(Effect.gen(function*() {
 *   yield* holdFileLock("/var/lib/engine/main.lock")
 *   // … the lock goes when the Scope closes, or with the process
 * }))
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const holdFileLock = (
  file: string,
  options: { readonly probeGraceMs?: number } = {}
): Effect.Effect<void, FileLockHeld | FileLockFailed, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.try({
      try: () => lock(file, graceOf(options.probeGraceMs)),
      catch: (error) => lockError(file, error)
    }),
    (db) => Effect.sync(() => db.close())
  ).pipe(Effect.asVoid)

/** The probe grace to use: `probeGraceMs` as whole milliseconds, at least 0; the default when unset or not finite. */
const graceOf = (probeGraceMs: number | undefined): number => {
  const grace = probeGraceMs ?? PROBE_GRACE_MS
  return Number.isFinite(grace) ? Math.max(0, Math.trunc(grace)) : PROBE_GRACE_MS
}

/** SQLite's error taking a lock, as this module's. */
const lockError = (file: string, error: unknown): FileLockHeld | FileLockFailed =>
  sqliteCode(error) === SQLITE_BUSY
    ? new FileLockHeld({ path: file })
    : new FileLockFailed({ path: file, detail: errorMessage(error) })

/** How many times a removable lock is taken again after the path turned out to name another file than the one locked. */
const REPLACED_ATTEMPTS = 5

/** A removable lock as held: the database, and whether its file is removed on release (the system could check it). */
interface RemovableHold {
  readonly db: DatabaseSync
  readonly remove: boolean
}

/**
 * Takes a removable lock (`holdRemovableFileLock`): locks, then checks that
 * the path names the file locked, and starts again when it does not (a holder
 * removed it between the open and the lock). Throws SQLite's error.
 */
const lockRemovable = (file: string, probeGraceMs: number, betweenOpenAndLock?: () => void): RemovableHold => {
  for (let attempt = 0; attempt < REPLACED_ATTEMPTS; attempt++) {
    let db: DatabaseSync
    try {
      db = lock(file, probeGraceMs, betweenOpenAndLock)
    } catch (error) {
      // Its chmod found no file: a holder removed it after the open (`lock` closed the database).
      if (errorCode(error) === "ENOENT") continue
      throw error
    }
    // Synchronous from the open to here: no other holder of this process ran meanwhile, so a lock of this
    // process on the file the path names now is this one.
    const self = procPid()
    const holders = self === undefined ? undefined : holdersOf(file)
    if (holders === undefined || self === undefined) {
      if (!CHECKS_REQUIRED) return { db, remove: false } // no kernel list here: the file stays (and is never removed here)
      db.close()
      throw new Error(
        "cannot tell whether another process removed the lock file while it was being locked: " +
          "/proc/locks or /proc/self is not readable (a /proc of another pid namespace, or none)"
      )
    }
    if (holders.includes(self)) return { db, remove: true }
    db.close()
  }
  throw new Error(`the lock file was replaced ${REPLACED_ATTEMPTS} times while it was being locked`)
}

/**
 * Whether a removable lock must be checked to be taken: on Linux, where other
 * lockers of the same file can read `/proc/locks` and so remove the file, one
 * that cannot check must not hold it. Elsewhere no locker removes it.
 */
const CHECKS_REQUIRED = process.platform === "linux"

/**
 * This process's pid as `/proc` numbers it, which is how `/proc/locks` lists
 * holders: the pid namespace of the /proc mount, not necessarily this
 * process's own (`unshare --pid` without a new /proc, some sandboxes), where
 * `process.pid` differs. Undefined without a /proc that shows this process.
 */
const procPid = (): number | undefined => {
  try {
    const pid = Number(fs.readlinkSync("/proc/self"))
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined
  } catch {
    return undefined
  }
}

/**
 * As `holdFileLock`, and the file is removed when the Scope closes — by this
 * holder, before it lets go — so a lock leaves no file behind after a clean
 * end (a process that dies leaves it, for the next holder to take). Every
 * locker of the file must take it through this function: once it holds the
 * lock it checks that the path still names the file it locked, and takes the
 * lock again when a holder removed it meanwhile (it fails with
 * `FileLockFailed` after a few such rounds). The check is the kernel's list
 * of holders (`fileLockHolders`); on Linux a locker that cannot read it
 * fails with `FileLockFailed` (another locker that can would remove the
 * file under it); where the system has none (macOS) the file is never
 * removed, which keeps the check unneeded there. Not across hosts:
 * a lock on a network file system is not seen by other hosts' processes.
 *
 * `betweenOpenAndLock` runs after each open and before its lock: for tests,
 * which put a remover in that window.
 *
 * @category constructors
 * @since 0.1.0
 */
export const holdRemovableFileLock = (
  file: string,
  options: { readonly probeGraceMs?: number; readonly betweenOpenAndLock?: () => void } = {}
): Effect.Effect<void, FileLockHeld | FileLockFailed, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.try({
      try: () => lockRemovable(file, graceOf(options.probeGraceMs), options.betweenOpenAndLock),
      catch: (error) => lockError(file, error)
    }),
    (held) =>
      Effect.sync(() => {
        if (held.remove) {
          try {
            fs.unlinkSync(file) // still holding it: a locker that opened it meanwhile sees it is gone, and starts again
          } catch {
            // gone already, or the directory is not writable: the file stays, harmless
          }
        }
        held.db.close()
      })
  ).pipe(Effect.asVoid)

/**
 * Whether a live process — possibly a frozen one — holds the lock on
 * `file`. Takes nothing and creates nothing: a missing or unusable lock
 * file is not held.
 *
 * @category getters
 * @since 0.1.0
 */
export const isFileLockHeld = (file: string): Effect.Effect<boolean> =>
  Effect.sync(() => {
    if (!fs.existsSync(file)) return false // nothing to lock: no holder has run here yet
    let db: DatabaseSync | undefined
    try {
      db = new (requireNodeSqlite(LOCK_NEEDS).DatabaseSync)(file, { readOnly: true })
      db.exec("BEGIN")
      db.prepare("SELECT count(*) FROM sqlite_master").get() // a shared lock: refused while someone holds it
      return false
    } catch (error) {
      return sqliteCode(error) === SQLITE_BUSY
    } finally {
      db?.close()
    }
  })

/**
 * Whether a live process — possibly a frozen one — holds the lock on `file`,
 * as `isFileLockHeld`, but taking no lock where the kernel's list of holders
 * says (Linux: `/proc/locks`), so a process taking the lock at that moment is
 * never refused because of this look. Elsewhere it is `isFileLockHeld`.
 * Creates nothing: a missing file is not held.
 *
 * @category getters
 * @since 0.1.0
 */
export const isFileLockHeldPassively = (file: string): Effect.Effect<boolean> =>
  Effect.suspend(() => {
    const holders = holdersOf(file)
    return holders === undefined ? isFileLockHeld(file) : Effect.succeed(holders.length > 0)
  })

/**
 * The pids that hold an exclusive (write) POSIX lock on `file`, as the
 * kernel lists them in `/proc/locks` (Linux), matched by inode number alone:
 * the only proof of *who* holds a lock, where `isFileLockHeld` says only
 * *whether*. Empty when nobody does (or the file is gone); `undefined`
 * where the system does not say in this process's pids — no `/proc/locks`
 * (macOS), or a /proc of another pid namespace than this process's (it
 * lists pids as that namespace numbers them: `unshare --pid` without a new
 * /proc) — so a caller must not take a pid from elsewhere as verified.
 * Takes no lock and opens only `/proc` (never `file`: see the module header).
 *
 * @category getters
 * @since 0.1.0
 */
export const fileLockHolders = (file: string): Effect.Effect<ReadonlyArray<number> | undefined> =>
  Effect.sync(() => procPid() === process.pid ? holdersOf(file) : undefined)

/**
 * The holders of `file`'s lock as `/proc/locks` numbers them (the /proc
 * mount's pid namespace); undefined without a readable `/proc/locks`.
 * Matched by inode number alone: the list's device is the file system's
 * (`major:minor` of its superblock), which is not always `stat`'s — a btrfs
 * subvolume reports a device of its own, an overlay may report its lower
 * layer's — so comparing it would refuse every lock there.
 */
const holdersOf = (file: string): ReadonlyArray<number> | undefined => {
  let text: string
  try {
    text = fs.readFileSync("/proc/locks", "utf8")
  } catch {
    return undefined
  }
  let inode: number
  try {
    inode = fs.statSync(file).ino
  } catch {
    return []
  }
  const holders = new Set<number>()
  for (const line of text.split("\n")) {
    // "1: POSIX  ADVISORY  WRITE 4705 fe:00:4245254 1073741824 1073742335"; a waiter's line has "->".
    const fields = line.trim().split(/\s+/)
    if (fields[1] !== "POSIX" || fields[3] !== "WRITE") continue
    const pid = Number(fields[4])
    const ino = Number((fields[5] ?? "").split(":")[2])
    if (ino === inode && Number.isSafeInteger(pid) && pid > 0) holders.add(pid)
  }
  return [...holders]
}
