/**
 * The spawn lock, `<intercomDir>/broker.spawn.lock` (P93, C-BRK-17/18): of
 * the clients that find no broker, only the one that creates this file
 * spawns one; the others wait for its health answer.
 *
 * The file is created exclusively and holds `<pid>\n<ms epoch>\n` in
 * canonical decimal. A lock is stale — removed, and creation tried again, up
 * to five times — when its content is unreadable or not that shape, its pid
 * is not alive, or its timestamp is more than 10 s old. One exception: an
 * empty lock less than a second old is held, not stale, because its creator
 * is between the exclusive create and the write of its content; treating it
 * as stale would let two racing clients both spawn.
 *
 * Clearing a stale lock is one step per taker: under the takeover lock,
 * `<lockFile>.takeover` (an fcntl lock, FileLock.ts: one holder at a time,
 * in this process and across processes, dropped by the kernel when its
 * holder dies), the lock is judged again, removed, and ours created. A
 * client that judged the lock stale just before another replaced it with
 * its own therefore finds that fresh lock and leaves it, instead of removing
 * it and spawning too; a client that finds the takeover lock held leaves the
 * spawn to its holder. Creating a missing lock needs no takeover lock: an
 * exclusive create cannot replace anyone's lock.
 *
 * Every age is measured against Effect's `Clock`, so a `TestClock` decides
 * what "old" means in tests.
 */
import { Clock, Data, Effect } from "effect"
import * as fs from "node:fs"
import { parseCanonicalInt, parsePositiveDecimal } from "../config/decimal.ts"
import { errorCode } from "../config/errno.ts"
import { holdFileLock } from "../config/FileLock.ts"
import { isProcessAlive } from "../config/pidFile.ts"

/** A lock older than this is stale, whoever holds it. */
const LOCK_STALE_MS = 10_000
/** An empty lock younger than this is being written by its creator, so it is held. */
const BEING_WRITTEN_MS = 1000
const LOCK_ATTEMPTS = 5

/** The spawn lock could not be created or cleared (not "someone else holds it": that is `"held"`). */
export class SpawnLockFailed extends Data.TaggedError("SpawnLockFailed")<{
  readonly path: string
  readonly cause: unknown
}> {
  override get message(): string {
    return `cannot create ${this.path}: ${String(this.cause)}`
  }
}

/** What a lock file says: who created it, and when (ms since the epoch, by the creator's clock). */
export interface SpawnLockContent {
  readonly pid: number
  readonly createdAt: number
}

/**
 * Lock-file content as `{ pid, createdAt }` when it is `<pid>\n<ms epoch>`
 * (a final newline allowed, nothing else after it), both canonical decimal;
 * else `undefined`.
 */
export const parseSpawnLock = (text: string): SpawnLockContent | undefined => {
  const [pidLine = "", stampLine = "", ...rest] = (text.endsWith("\n") ? text.slice(0, -1) : text).split("\n")
  if (rest.length > 0) return undefined
  const pid = parsePositiveDecimal(pidLine)
  const createdAt = parseCanonicalInt(stampLine)
  return pid === undefined || createdAt === undefined ? undefined : { pid, createdAt }
}

const readLock = (lockFile: string): SpawnLockContent | undefined => {
  try {
    return parseSpawnLock(fs.readFileSync(lockFile, "utf8"))
  } catch {
    return undefined
  }
}

/** Whether the lock is empty and was modified less than `BEING_WRITTEN_MS` before `now`. */
const beingWritten = (lockFile: string, now: number): boolean => {
  try {
    const stat = fs.statSync(lockFile)
    return stat.size === 0 && now - stat.mtimeMs < BEING_WRITTEN_MS
  } catch {
    return false
  }
}

/** Whether an existing lock still holds at `now` (see the module header). */
const isHeld = (lockFile: string, now: number): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    const lock = readLock(lockFile)
    const fresh = lock !== undefined && now - lock.createdAt <= LOCK_STALE_MS && (yield* isProcessAlive(lock.pid))
    return fresh || beingWritten(lockFile, now)
  })

/** Creates `lockFile` exclusively with our content: `true` if created, `false` if it exists. */
const createExclusive = (lockFile: string, now: number): Effect.Effect<boolean, SpawnLockFailed> =>
  Effect.try({
    try: () => {
      try {
        fs.writeFileSync(lockFile, `${process.pid}\n${now}\n`, { flag: "wx", mode: 0o600 })
        return true
      } catch (error) {
        if (errorCode(error) === "EEXIST") return false
        throw error
      }
    },
    catch: (cause) => new SpawnLockFailed({ path: lockFile, cause })
  })

/** The takeover lock beside `lockFile`: whoever holds it may clear a stale spawn lock (see the module header). */
const takeoverLockFile = (lockFile: string): string => `${lockFile}.takeover`

/**
 * Under the takeover lock: judges the lock again at `now` and, still stale,
 * replaces it with ours. `"retry"` when someone created a lock between the
 * removal and our create (the next attempt judges theirs); `"held"` when the
 * lock holds after all, or another client is taking it over.
 */
const takeOver = (lockFile: string, now: number): Effect.Effect<"acquired" | "held" | "retry", SpawnLockFailed> =>
  Effect.scoped(Effect.gen(function*() {
    const takeover = takeoverLockFile(lockFile)
    const taken = yield* holdFileLock(takeover, { probeGraceMs: 0 }).pipe(
      Effect.as(true),
      Effect.catchTag("FileLockHeld", () => Effect.succeed(false)),
      Effect.mapError((error) => new SpawnLockFailed({ path: takeover, cause: error.detail }))
    )
    if (!taken || (yield* isHeld(lockFile, now))) return "held"
    yield* Effect.try({
      try: () => fs.rmSync(lockFile, { force: true }),
      catch: (cause) => new SpawnLockFailed({ path: lockFile, cause })
    })
    return (yield* createExclusive(lockFile, now)) ? "acquired" : "retry"
  }))

/**
 * Tries to take the spawn lock: `"acquired"` (we created it: we spawn, then
 * `releaseSpawnLock`), or `"held"` (someone else may be spawning: wait for
 * health). Stale locks are cleared on the way, one taker at a time (the
 * takeover lock), up to five attempts.
 */
export const acquireSpawnLock = (lockFile: string): Effect.Effect<"acquired" | "held", SpawnLockFailed> =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    for (let attempt = 0; attempt < LOCK_ATTEMPTS; attempt++) {
      if (yield* createExclusive(lockFile, now)) return "acquired"
      if (yield* isHeld(lockFile, now)) return "held"
      const taken = yield* takeOver(lockFile, now)
      if (taken !== "retry") return taken
    }
    return "held"
  })

/** Removes the spawn lock if it is still ours (names this process). */
export const releaseSpawnLock = (lockFile: string): Effect.Effect<void> =>
  Effect.sync(() => {
    if (readLock(lockFile)?.pid === process.pid) fs.rmSync(lockFile, { force: true })
  })
