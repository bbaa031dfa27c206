/**
 * The broker's lifetime lock, `<intercomDir>/broker.lock`: one broker per
 * agent dir, by construction. A broker takes it before it listens and lets
 * it go after it has closed. The kernel drops it when the process dies,
 * however it dies (SIGKILL included), and keeps it while the process is
 * frozen (SIGSTOP, swap, a debugger, a long GC pause) — so a broker that does
 * not answer is never mistaken for a dead one and replaced, and a client
 * never starts a second broker beside it.
 *
 * The lock is SQLite's (FileLock.ts): an exclusive transaction on an empty
 * database, opened through `node:sqlite` (built into Node ≥ 22.5; no native
 * build). SQLite locks with POSIX record locks (fcntl), which have exactly
 * the two properties above; Node itself has no `flock`. Measured on Linux, Node
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
 * the one that works on macOS and that no other user can take. The lock
 * itself, and what fcntl semantics ask of everything else in the process
 * (nothing may open `broker.lock` but the lock), is FileLock.ts.
 */
import { Data, Effect, type Scope } from "effect"
import * as path from "node:path"
import { fileLockHolders, holdFileLock, isFileLockHeld } from "./FileLock.ts"
import { isProcessAlive, readPidFile } from "./pidFile.ts"

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
  return holdFileLock(file).pipe(
    Effect.mapError((error) =>
      error._tag === "FileLockHeld"
        ? new LifetimeLockHeld({ path: file })
        : new LifetimeLockFailed({ path: file, detail: error.detail })
    )
  )
}

/**
 * Whether a live process — possibly a frozen one — holds the lifetime lock
 * of `intercomDir`. Takes nothing and creates nothing: a missing or unusable
 * lock file is not held.
 */
export const isLifetimeLockHeld = (intercomDir: string): Effect.Effect<boolean> =>
  isFileLockHeld(lifetimeLockFile(intercomDir))

/**
 * Whether the kernel says `pid` holds the lifetime lock of `intercomDir`:
 * `true` or `false` on Linux (`/proc/locks`, `fileLockHolders`),
 * `undefined` where the system does not say in this process's pids (no
 * `/proc/locks`, or a /proc of another pid namespace). What turns a pid read from
 * `broker.pid` — which may be an older broker's, left behind, while the
 * holder has not written its own yet — into the holder's.
 */
export const holdsLifetimeLock = (intercomDir: string, pid: number): Effect.Effect<boolean | undefined> =>
  Effect.map(fileLockHolders(lifetimeLockFile(intercomDir)), (holders) => holders?.includes(pid))

/**
 * What `<intercomDir>/broker.pid` says of the lifetime lock's holder: the pid
 * it names (if readable), and whether that process is alive and the kernel
 * lists it as the holder (`holdsLifetimeLock`; `undefined` where the system
 * does not say). The holder writes the file only once it listens, so until
 * then it may still name an older broker, whose pid another process may have
 * by now: a message names or tells the user to signal the pid only when
 * `holds` is not `false`.
 */
export const pidFileHolder = (
  intercomDir: string
): Effect.Effect<{ readonly pid: number | undefined; readonly holds: boolean | undefined }> =>
  Effect.gen(function*() {
    const pid = yield* readPidFile(path.join(intercomDir, "broker.pid"))
    if (pid === undefined || !(yield* isProcessAlive(pid))) return { pid, holds: false }
    return { pid, holds: yield* holdsLifetimeLock(intercomDir, pid) }
  })
