/**
 * Size: one concept — opening the file, about 580 lines: preparing it, the
 * read-only look that decides a refusal (another program's file, a schema
 * that lacks what its records promise, the clean-close mark), the checks, the snapshot, the
 * Migrator and the migrations an earlier build
 * skipped (`fillGaps`) are the steps of one open, run in order under the same
 * busy-lock retries (`whileBusy`) and mapped to the same typed errors; split,
 * each part would need that retry and error mapping again.
 *
 * The broker's database, `<intercomDir>/intercom.db`: opened once, checked,
 * migrated, and provided as effect's `SqlClient` (plus the driver's
 * {@link SqliteBatch}) to every durable service.
 *
 * Opening fails closed. The file is created 0600 in a 0700 directory (an
 * existing file's mode is fixed to 0600); a file that is unreadable, not a
 * database, fails `PRAGMA quick_check`, is another program's database (tables
 * but no migrations table), records a migration newer than this build knows,
 * or records every migration but lacks a table or index of the schema they
 * make (`migrations/snapshot.ts`) is refused with a typed error naming the file and what to do.
 * `PRAGMA quick_check` runs only on a file not closed cleanly (no
 * {@link CLEAN_MARK}). Those checks run on a read-only connection (`SqliteClient.look`) before the
 * read-write one is opened, so a refused file is left as it was: its bytes,
 * its `-wal` (read, not copied into it) and whether a `-wal` or `-shm` exists.
 * Only a file that passes is switched to WAL mode. Only then are the pending migrations of
 * `migrations/index.ts` run by effect's `Migrator`, which records each
 * applied id in the table `effect_sql_migrations` (`migration_id`, `name`,
 * `created_at`) in the same transaction as the migration itself. A file
 * that already records this build's highest id has nothing pending, and the
 * Migrator is not started for it. A file that holds nothing yet (a broker's
 * first start in an agent dir) is given the schema of
 * `migrations/snapshot.ts` in one transaction instead, with the migrations it
 * stands for recorded as the Migrator records them; the Migrator then runs
 * only registered migrations newer than the snapshot, if any.
 *
 * "Newer schema" is judged by that table, not by `PRAGMA user_version`: the
 * highest recorded `migration_id` above the highest id registered in this
 * build means a newer effect-intercom wrote the file.
 */
import { Context, Duration, Effect, Layer, Schedule, type Scope } from "effect"
import { Migrator, SqlClient, SqlError } from "effect/sql"
import * as fs from "node:fs"
import type { DatabaseSync } from "node:sqlite"
import * as path from "node:path"
import {
  DatabaseBusy,
  DatabaseCorrupt,
  DatabaseForeign,
  DatabaseOpenFailed,
  DatabaseOpenWriteFailed,
  DatabaseTooNew,
  DatabaseUnreadable,
  DatabaseWriteFailed,
  type StoreOpenError
} from "./errors.ts"
import { type Migration, migrations as registered } from "./migrations/index.ts"
import {
  CREATE_MIGRATIONS_TABLE,
  RECORD_MIGRATION,
  type SchemaSnapshot, snapshot as buildSnapshot } from "./migrations/snapshot.ts"
import * as SqliteClient from "./SqliteClient.ts"
import { removeCheckingMark, writeCheckingMark } from "../config/checkingMark.ts"
import { SQLITE_CORRUPT, SQLITE_NOTADB, sqliteErrcode } from "./SqliteFaults.ts"

/** The table effect's `Migrator` records applied migrations in. */
export const MIGRATIONS_TABLE = "effect_sql_migrations"

/**
 * `PRAGMA application_id` of a file its broker closed cleanly: set as the
 * database closes, cleared (0) at open. A file that holds it skips the
 * full `PRAGMA quick_check` at open, which reads every page (3–11 s cold for
 * a 1–3 GB result archive, longer than a client waits for a broker to
 * start); one without it (a broker killed, a crash, a copy taken while it
 * ran, a file from before stop 45) is checked in full. ASCII "iccl".
 */
export const CLEAN_MARK = 0x6963636c

/**
 * Checkpoints the WAL into the main file (`TRUNCATE` also empties the WAL,
 * waiting up to the connection's busy timeout; `PASSIVE` never waits):
 * `true` when every frame got there. A reader holding a snapshot from before
 * the latest commit keeps the rest out; a failure counts as not landed.
 */
const checkpointAll = (sql: SqlClient.SqlClient, mode: "TRUNCATE" | "PASSIVE"): Effect.Effect<boolean> =>
  sql.unsafe<{ readonly log: number; readonly checkpointed: number }>(`PRAGMA wal_checkpoint(${mode})`).pipe(
    Effect.map((rows) => rows[0] !== undefined && rows[0].checkpointed === rows[0].log),
    Effect.orElseSucceed(() => false)
  )

/** How a checkpoint a reader kept out is tried again: from 250 ms, doubling, at most every 30 s. */
const CLEAR_RETRY = Schedule.min([Schedule.exponential("250 millis"), Schedule.spaced("30 seconds")])

/** Whether `db` holds {@link CLEAN_MARK}: its broker closed it cleanly. */
export const closedCleanly = (db: DatabaseSync): boolean =>
  db.prepare("PRAGMA application_id").get()?.["application_id"] === CLEAN_MARK

/** Options of {@link layer}. */
export interface DatabaseOptions {
  /** The database file, normally `<intercomDir>/intercom.db`. */
  readonly file: string
  /** `PRAGMA synchronous`; default `"NORMAL"` (see `SqliteClient`). */
  readonly synchronous?: SqliteClient.Synchronous | undefined
  /** The migrations to run; default: this build's registry. Tests pass their own. */
  readonly migrations?: Readonly<Record<string, Migration>> | undefined
  /**
   * The schema a new, empty file gets in one step instead of the migrations
   * it stands for; default: this build's (`migrations/snapshot.ts`) when
   * `migrations` is not given, none when it is. Tests pass their own.
   */
  readonly snapshot?: SchemaSnapshot | undefined
  /** Loads `node:sqlite` (see `SqliteClient.SqliteClientOptions`). */
  readonly loadSqlite?: (() => SqliteClient.SqliteModule | undefined) | undefined
  /**
   * How long opening waits, in all, for another process's lock on the file;
   * default {@link OPEN_BUSY_WAIT}. Past it the open fails with `DatabaseBusy`.
   */
  readonly openBusyWait?: Duration.Input | undefined
  /**
   * A file that names this process while the full `PRAGMA quick_check` runs
   * (`config/checkingMark.ts`), so that a client waiting for the broker to
   * answer waits on; the broker passes `<intercomDir>/broker.checking`. None
   * by default.
   */
  readonly checkingMark?: string | undefined
}

/**
 * How long opening the database waits for another process's lock, in all
 * (a `sqlite3` shell briefly writing, a second program reading it in
 * rollback mode). The connection's own `busy_timeout` is short
 * (`SqliteClient.DEFAULT_BUSY_TIMEOUT_MS`), so this wait is Effect retries
 * every {@link OPEN_RETRY_EVERY}, not one long wait inside SQLite.
 */
export const OPEN_BUSY_WAIT: Duration.Duration = Duration.seconds(10)

/** How often opening tries again while another process holds the file's lock. */
export const OPEN_RETRY_EVERY: Duration.Duration = Duration.millis(100)

/** The open database: the services every durable store uses. */
export type DatabaseServices = SqlClient.SqlClient | SqliteClient.SqliteBatch

/** The highest migration id in `registry`, 0 when it is empty. */
export const highestMigrationId = (registry: Readonly<Record<string, Migration>>): number => {
  let highest = 0
  for (const key of Object.keys(registry)) {
    const id = Number(/^(\d+)_/.exec(key)?.[1])
    if (Number.isSafeInteger(id) && id > highest) highest = id
  }
  return highest
}

/** The Node system error code (`EACCES`, …) of a thrown error, if any. */
const errnoCode = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "code" in error && typeof error.code === "string"
    ? error.code
    : undefined

const describe = (error: unknown): string => error instanceof Error ? error.message : String(error)

/** A file-system failure before SQLite opens the file, as a store error. */
const fileError = (file: string, error: unknown): StoreOpenError => {
  const code = errnoCode(error)
  if (code === "EACCES" || code === "EPERM" || code === "EROFS") {
    return new DatabaseUnreadable({ file, detail: describe(error) })
  }
  if (code === "ENOSPC" || code === "EDQUOT") {
    return new DatabaseOpenWriteFailed({ file, reason: "disk-full", detail: describe(error) })
  }
  return new DatabaseOpenFailed({ file, detail: describe(error) })
}

const SQLITE_PERM = 3
const SQLITE_BUSY = 5
const SQLITE_READONLY = 8
const SQLITE_CANTOPEN = 14
const SQLITE_AUTH = 23

/** SQLite's result code behind a `SqlError` from `SqliteClient`, if any. */
const sqliteCodeOf = (error: SqlError.SqlError): number | undefined => {
  const cause = error.reason.cause
  if (typeof cause !== "object" || cause === null) return undefined
  if ("errno" in cause && typeof cause.errno === "number") return cause.errno
  return sqliteErrcode(cause)
}

/**
 * Below this many bytes free, an I/O error at open is taken for a full disk.
 * SQLite reports a full disk as `SQLITE_FULL` only for the database and
 * `-wal` files; growing or mapping the `-shm` file on a full disk fails with
 * a generic `SQLITE_IOERR_SHM*` (ENOSPC behind it, which `node:sqlite` does
 * not expose), and the `-shm` needs 32 KiB, the first WAL pages more.
 */
export const FULL_DISK_BYTES = 1024 * 1024

/** The bytes free to this user on the file system holding `file`, if it can be told. */
export const freeBytesOf = (file: string): number | undefined => {
  try {
    const stats = fs.statfsSync(path.dirname(file))
    return stats.bavail * stats.bsize
  } catch {
    return undefined
  }
}

/**
 * A `SqlError` met while opening, checking or migrating `file`, as a store
 * error. A full disk or an I/O error is a {@link DatabaseOpenWriteFailed};
 * `freeBytes` (default {@link freeBytesOf}) tells an I/O error on a nearly
 * full file system for the full disk it is.
 */
export const openError = (
  file: string,
  error: SqlError.SqlError,
  freeBytes: (file: string) => number | undefined = freeBytesOf
): StoreOpenError => {
  const cause = error.reason.cause
  if (cause instanceof DatabaseCorrupt) return cause
  if (cause instanceof DatabaseWriteFailed) {
    const free = cause.reason === "io-error" ? freeBytes(cause.file) : undefined
    return free !== undefined && free < FULL_DISK_BYTES
      ? new DatabaseOpenWriteFailed({ file, reason: "disk-full", detail: `${cause.detail}; ${free} bytes free` })
      : new DatabaseOpenWriteFailed({ file, reason: cause.reason, detail: cause.detail })
  }
  const code = sqliteCodeOf(error)
  const primary = code === undefined ? undefined : code & 0xff
  const detail = error.message
  switch (primary) {
    case SQLITE_BUSY:
      return new DatabaseBusy({ file, waited: "the open's wait", detail })
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      return new DatabaseCorrupt({ file, detail })
    case SQLITE_PERM:
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_AUTH:
      return new DatabaseUnreadable({ file, detail })
    default:
      return new DatabaseOpenFailed({ file, detail })
  }
}

/**
 * Makes sure the file exists with mode 0600 (its directory created 0700 if
 * missing) and that this user may read and write it. Never opens the file
 * itself once it exists: closing any descriptor of a file drops the
 * process's SQLite (fcntl) locks on it.
 */
const prepareFile = (file: string): Effect.Effect<void, StoreOpenError> =>
  Effect.try({
    try: () => {
      const dir = path.dirname(file)
      if (!fs.existsSync(dir)) fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
      if (!fs.existsSync(file)) {
        // An empty file is an empty SQLite database; SQLite gives the -wal and -shm files its mode.
        fs.closeSync(fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL, 0o600))
      }
      const stat = fs.statSync(file)
      if (!stat.isFile()) throw new Error("it is not a regular file")
      for (const each of [file, `${file}-wal`, `${file}-shm`]) {
        if (each !== file && !fs.existsSync(each)) continue
        if ((fs.statSync(each).mode & 0o777) !== 0o600) fs.chmodSync(each, 0o600)
      }
      fs.accessSync(file, fs.constants.R_OK | fs.constants.W_OK)
      fs.accessSync(dir, fs.constants.R_OK | fs.constants.W_OK | fs.constants.X_OK)
    },
    catch: (error) => fileError(file, error)
  })

/**
 * What decides whether the file is refused, read on a read-only connection
 * (`SqliteClient.look`) in two queries, one of `sqlite_master` and one of the
 * migrations table: a new file holds no schema object at all; another
 * program's holds objects but no migrations table; an intercom database
 * records the migrations applied to it.
 */
type Found =
  | { readonly _tag: "Empty" }
  | { readonly _tag: "Foreign"; readonly objects: ReadonlyArray<string> }
  | {
    readonly _tag: "Intercom"
    /** The migration ids it records. */
    readonly recorded: ReadonlySet<number>
    /** The names of its tables and indexes. */
    readonly objects: ReadonlySet<string>
  }

const recordedIn = (db: DatabaseSync): Found => {
  const objects = db.prepare("SELECT type, name FROM sqlite_master ORDER BY type <> 'table', name").all()
  if (objects.length === 0) return { _tag: "Empty" }
  if (!objects.some((object) => object["name"] === MIGRATIONS_TABLE)) {
    return { _tag: "Foreign", objects: objects.map((object) => `${String(object["type"])} ${String(object["name"])}`) }
  }
  const ids = db.prepare(`SELECT migration_id AS id FROM ${MIGRATIONS_TABLE}`).all()
  return {
    _tag: "Intercom",
    recorded: new Set(ids.flatMap((row) => typeof row["id"] === "number" ? [row["id"]] : [])),
    objects: new Set(objects.map((object) => String(object["name"])))
  }
}

/** The highest id of `recorded`, 0 when it is empty. */
const highestOf = (recorded: ReadonlySet<number>): number => {
  let highest = 0
  for (const id of recorded) highest = Math.max(highest, id)
  return highest
}

/** The `table …` and `index …` a snapshot's statements make, as `[type, name]`. */
const objectsOf = (snapshot: SchemaSnapshot): Array<readonly [type: string, name: string]> =>
  snapshot.statements.flatMap((statement) => {
    const match = /^CREATE\s+(?:UNIQUE\s+)?(TABLE|INDEX)\s+"?([^\s"(]+)"?/i.exec(statement)
    return match?.[1] === undefined || match[2] === undefined ? [] : [[match[1].toLowerCase(), match[2]] as const]
  })

/**
 * The tables and indexes a file that records every registered migration
 * lacks: its records say its schema is `snapshot`'s, so each object the
 * snapshot makes must be there (one dropped by hand would otherwise fail
 * every later use with "no such table"). Empty when a migration is still to
 * run (it may make them), or when there is no snapshot of this registry.
 */
const missingObjects = (
  found: Extract<Found, { readonly _tag: "Intercom" }>,
  registry: Readonly<Record<string, Migration>>,
  snapshot: SchemaSnapshot | undefined
): Array<string> => {
  if (snapshot === undefined || snapshot.through !== highestMigrationId(registry)) return []
  if (migrationsOf(registry).some(({ id }) => !found.recorded.has(id))) return []
  const missing = objectsOf(snapshot).filter(([, name]) => !found.objects.has(name))
  return [...missing.filter(([type]) => type === "table"), ...missing.filter(([type]) => type !== "table")]
    .map(([type, name]) => `${type} ${name}`)
}

/**
 * Refuses a database that records a migration id above `known`; otherwise
 * the highest id it records, `undefined` when it has no migrations table,
 * or `"empty"` when it holds no schema object at all (a new file).
 */
const refuseNewer = (
  sql: SqlClient.SqlClient,
  file: string,
  known: number
): Effect.Effect<number | undefined | "empty", StoreOpenError> =>
  Effect.gen(function*() {
    const objects = yield* sql<{ readonly name: string }>`SELECT name FROM sqlite_master`
    if (objects.length === 0) return "empty"
    if (!objects.some((object) => object.name === MIGRATIONS_TABLE)) return undefined
    const rows = yield* sql<{ readonly id: number | null }>`SELECT max(migration_id) AS id FROM ${
      sql(MIGRATIONS_TABLE)
    }`
    const found = rows[0]?.id ?? 0
    if (found > known) return yield* new DatabaseTooNew({ file, found, known })
    return found
  }).pipe(Effect.catchTag("SqlError", (error) => Effect.fail(openError(file, error))))

/** The migrations of `registry` with the id and name the Migrator reads from their keys (`NNNN_name`), in id order. */
const migrationsOf = (
  registry: Readonly<Record<string, Migration>>
): Array<{ readonly id: number; readonly name: string; readonly migration: Migration }> =>
  Object.entries(registry).flatMap(([key, migration]) => {
    const match = /^(\d+)_(.+)$/.exec(key)
    return match?.[1] === undefined || match[2] === undefined ? [] : [{ id: Number(match[1]), name: match[2], migration }]
  }).sort((a, b) => a.id - b.id)

/** The `[id, name]` of each migration of `registry` up to `through`, as the Migrator reads its keys. */
export const migrationsThrough = (
  registry: Readonly<Record<string, Migration>>,
  through: number
): Array<readonly [id: number, name: string]> =>
  migrationsOf(registry).filter(({ id }) => id <= through).map(({ id, name }) => [id, name] as const)

/**
 * Gives an empty file the Migrator's table, the schema of `snapshot`, and
 * the records of the migrations of `registry` it stands for, in one
 * transaction; returns the highest id it stands for.
 */
const createFromSnapshot = (
  batch: SqliteClient.SqliteBatchService,
  file: string,
  snapshot: SchemaSnapshot,
  registry: Readonly<Record<string, Migration>>
): Effect.Effect<number, StoreOpenError> =>
  batch.transact([
    { sql: CREATE_MIGRATIONS_TABLE, rows: [[]] },
    ...snapshot.statements.map((statement) => ({ sql: statement, rows: [[]] })),
    { sql: RECORD_MIGRATION, rows: migrationsThrough(registry, snapshot.through) }
  ]).pipe(
    Effect.as(snapshot.through),
    Effect.catchTag("SqlError", (error) => Effect.fail(openError(file, error)))
  )

/** Runs the pending migrations of `registry`. */
const migrate = (
  sql: SqlClient.SqlClient,
  file: string,
  registry: Readonly<Record<string, Migration>>
): Effect.Effect<void, StoreOpenError> =>
  Migrator.make({})({ loader: Migrator.fromRecord({ ...registry }), table: MIGRATIONS_TABLE }).pipe(
    Effect.provideService(SqlClient.SqlClient, sql),
    Effect.asVoid,
    Effect.catchTags({
      SqlError: (error) => Effect.fail(openError(file, error)),
      MigrationError: (error) =>
        Effect.fail(
          error.cause !== undefined && SqlError.isSqlError(error.cause)
            ? openError(file, error.cause)
            : new DatabaseOpenFailed({
              file,
              detail: `${error.message}${error.cause === undefined ? "" : `: ${describe(error.cause)}`}`
            })
        )
    })
  )

/**
 * Runs the registered migrations an existing file skipped: ids below the
 * highest it recorded that it never ran. Effect's Migrator runs only the ids
 * above the highest recorded one, so a migration released after a higher one
 * never reaches a file written in between — as happened on 2026-12-02, when
 * `0008_owed_notices` was merged seven minutes before `0007_replay_blocks`: a
 * broker of that build recorded 1–6 and 8, and without this step every later
 * broker refused the file (`no such table: replay_blocks`). Each gap runs in
 * id order, in its own transaction with its record; one read of the
 * Migrator's table when there is none.
 */
const fillGaps = (
  sql: SqlClient.SqlClient,
  file: string,
  registry: Readonly<Record<string, Migration>>
): Effect.Effect<void, StoreOpenError> =>
  Effect.gen(function*() {
    const rows = yield* sql<{ readonly migration_id: number }>`SELECT migration_id FROM ${sql(MIGRATIONS_TABLE)}`
    const recorded = new Set(rows.map((row) => row.migration_id))
    let highest = 0
    for (const id of recorded) highest = Math.max(highest, id)
    const skipped = migrationsOf(registry).filter(({ id }) => id < highest && !recorded.has(id))
    for (const { id, migration, name } of skipped) {
      yield* sql.withTransaction(
        Effect.andThen(
          Effect.provideService(migration, SqlClient.SqlClient, sql),
          sql`INSERT INTO ${sql(MIGRATIONS_TABLE)} (migration_id, name) VALUES (${id}, ${name})`
        )
      ).pipe(
        Effect.catch((error) =>
          Effect.fail(
            SqlError.isSqlError(error)
              ? openError(file, error)
              : new DatabaseOpenFailed({ file, detail: `migration ${id} (${name}), skipped by an earlier build: ${describe(error)}` })
          )
        )
      )
    }
  }).pipe(Effect.catchTag("SqlError", (error) => Effect.fail(openError(file, error))))

/** Opens `file` as a SQLite database, checks it and migrates it; see the module header. */
const open = (
  file: string,
  label: string,
  options: Omit<DatabaseOptions, "file">
): Effect.Effect<Context.Context<DatabaseServices>, StoreOpenError, Scope.Scope> =>
  Effect.gen(function*() {
    const registry = options.migrations ?? registered
    const wait = Duration.fromInputUnsafe(options.openBusyWait ?? OPEN_BUSY_WAIT)
    // Another process's lock fails a step after the connection's short busy_timeout; the step is tried
    // again every OPEN_RETRY_EVERY for `wait` in all, so the event loop is never parked long inside SQLite.
    // Each step is safe to repeat: a failed open closes its connection, a failed transaction rolls back.
    const whileBusy = <A, R>(step: Effect.Effect<A, StoreOpenError, R>): Effect.Effect<A, StoreOpenError, R> =>
      step.pipe(
        Effect.retry({
          schedule: Schedule.spaced(OPEN_RETRY_EVERY).pipe(Schedule.upTo({ duration: wait })),
          while: (error) => error._tag === "DatabaseBusy"
        }),
        Effect.mapError((error) =>
          error._tag === "DatabaseBusy" ? new DatabaseBusy({ ...error, waited: Duration.format(wait) }) : error
        )
      )
    const known = highestMigrationId(registry)
    const snapshot = options.snapshot ?? (options.migrations === undefined ? buildSnapshot : undefined)
    // Set by the look: the file holds CLEAN_MARK, so its full check was skipped and the mark is cleared below.
    let marked = false
    if (file !== ":memory:") {
      // Whether the file is refused is decided on a read-only connection, before any pragma is set: a
      // refused file is left as it was (a leftover -wal is read, never copied into it).
      const mark = options.checkingMark
      const quickCheck = (db: DatabaseSync) => {
        marked = closedCleanly(db)
        if (!marked && mark !== undefined) writeCheckingMark(mark)
        return !marked
      }
      const found = yield* whileBusy(
        SqliteClient.look({ filename: file, loadSqlite: options.loadSqlite, quickCheck }, recordedIn).pipe(
          Effect.catchTag("SqlError", (error) => Effect.fail(openError(label, error))),
          Effect.ensuring(Effect.sync(() => mark === undefined || removeCheckingMark(mark)))
        )
      )
      if (found._tag === "Foreign") return yield* new DatabaseForeign({ file: label, objects: found.objects })
      if (found._tag === "Intercom") {
        const highest = highestOf(found.recorded)
        if (highest > known) return yield* new DatabaseTooNew({ file: label, found: highest, known })
        const missing = missingObjects(found, registry, snapshot)
        if (missing.length > 0) {
          return yield* new DatabaseCorrupt({
            file: label,
            detail: `its schema lacks ${missing.join(", ")}, though its migration records say it is up to date, ` +
              `at migration ${highest}: something outside intercom dropped or renamed them. Restore a copy if you ` +
              `have one, see "Backing up and moving" in docs/store.md`
          })
        }
      }
    }
    const { batch, damaged, sql } = yield* whileBusy(SqliteClient.make({
      filename: file,
      synchronous: options.synchronous,
      loadSqlite: options.loadSqlite
    }).pipe(Effect.catchTag("SqlError", (error) => Effect.fail(openError(label, error)))))
    const clearLanded = yield* whileBusy(Effect.gen(function*() {
      const found = yield* refuseNewer(sql, label, known)
      // A new file gets the snapshot in one step (~13 ms of CPU less than the Migrator for this build's).
      const recorded = found === "empty"
        ? snapshot === undefined ? undefined : yield* createFromSnapshot(batch, label, snapshot, registry)
        : found
      // Effect's Migrator runs the registered ids above the highest recorded one: none when they are equal.
      // Skipping it then saves every broker start after the first its cold-start cost (~5 ms of CPU).
      if (recorded === undefined || recorded < known) yield* migrate(sql, label, registry)
      if (found !== "empty" && found !== undefined) yield* fillGaps(sql, label, registry)
      // In use from now on: a broker killed before it closes leaves the file unmarked, checked in full next time.
      if (marked) {
        yield* sql.unsafe("PRAGMA application_id = 0").pipe(
          Effect.catchTag("SqlError", (error) => Effect.fail(openError(label, error)))
        )
        // The clear is in the WAL until a checkpoint: without this one, a copy of the main file alone, taken
        // while the broker runs, would still hold the mark and skip its full check. One page, once per open.
        return yield* checkpointAll(sql, "TRUNCATE")
      }
      return true
    }))
    // Closed cleanly: marked just before the connection closes (finalizers run last first), after every store's
    // last write. A mark that cannot be written (a full disk) only means a full check at the next open. A
    // connection that met a sign of damage (SQLITE_CORRUPT, SQLITE_NOTADB, an I/O error) is not marked.
    if (file !== ":memory:") {
      yield* Effect.addFinalizer(() =>
        damaged() ? Effect.void : Effect.ignore(sql.unsafe(`PRAGMA application_id = ${CLEAN_MARK}`))
      )
    }
    // A reader that held a snapshot from before the clear (a backup tool, an `sqlite3` shell) kept the
    // checkpoint from reaching the main file: tried again (PASSIVE, which never parks the event loop in SQLite's
    // busy wait), backing off, until it lands or the database closes. SQLite's own automatic checkpoints would
    // land it too, but only after WAL_AUTOCHECKPOINT_PAGES pages of writes, never on an idle broker.
    if (!clearLanded) {
      yield* Effect.forkScoped(
        checkpointAll(sql, "PASSIVE").pipe(Effect.repeat({ until: (landed) => landed, schedule: CLEAR_RETRY }))
      )
    }
    return Context.make(SqlClient.SqlClient, sql).pipe(Context.add(SqliteClient.SqliteBatch, batch))
  })

/**
 * Opens the database file (see the module header), closing it with the
 * layer. Provides `SqlClient.SqlClient` and `SqliteClient.SqliteBatch`.
 */
export const make = (options: DatabaseOptions): Effect.Effect<
  Context.Context<DatabaseServices>,
  StoreOpenError,
  Scope.Scope
> => Effect.andThen(prepareFile(options.file), open(options.file, options.file, options))

/** The database file as a layer; see {@link make}. */
export const layer = (options: DatabaseOptions): Layer.Layer<DatabaseServices, StoreOpenError> =>
  Layer.effectContext(make(options))

/**
 * A private in-memory SQLite database with every migration applied: the
 * SQLite layers' unit tests use it. Each build of the layer is a new, empty
 * database; nothing survives it.
 */
export const layerMemory: Layer.Layer<DatabaseServices, StoreOpenError> = Layer.effectContext(
  open(":memory:", "the in-memory database", {})
)

