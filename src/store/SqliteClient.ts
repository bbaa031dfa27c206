/**
 * Effect's `SqlClient` over Node's built-in `node:sqlite`: the broker's one
 * connection to its database.
 *
 * It owns one `DatabaseSync` and everything tied to it: the semaphore that
 * lends the connection to one fiber at a time (`SqlClient.makeSqliteAcquirers`;
 * a transaction keeps it until it ends) and a bounded cache of prepared
 * statements keyed by their SQL text. Closing the scope closes the database.
 *
 * At open it sets `journal_mode = WAL`, `synchronous` (`NORMAL` by default),
 * `busy_timeout` and `foreign_keys = ON`. With WAL and `synchronous = NORMAL`
 * a committed transaction survives the process dying at any moment
 * (`kill -9`, a crash): SQLite has written it to the `-wal` file before
 * `COMMIT` returns. It may not survive a power loss or a kernel crash, which
 * can take the last transactions the OS had not yet flushed; `FULL` adds an
 * fsync per commit to cover those too, at a cost per commit.
 *
 * The service it provides is the plain `SqlClient.SqlClient`, so the official
 * Effect driver can replace it when one ships for Effect 4. The one extra,
 * `SqliteBatch` (SqliteBatch.ts), runs prepared statements for many parameter
 * rows, or a whole transaction, in a single step (no Effect, span or semaphore
 * round per row); it is written so that it can be reimplemented over any
 * `SqlClient` (one transaction, one statement per row) if the driver is swapped.
 *
 * Errors are effect's `SqlError` (see `SqliteFaults`: disk full and I/O
 * errors carry a `DatabaseWriteFailed`; a `PRIMARY KEY` conflict is a
 * `UniqueViolation`). The statement cache is `StatementCache`.
 *
 * `look` opens a file read-only instead, to check it without changing it
 * (`Database.ts` decides with it whether a file is refused).
 *
 * Integers read back as JavaScript numbers (`SqlClient.SafeIntegers` switches
 * a fiber to bigints), rows are plain objects.
 */
import { Context, Effect, Layer, type Scope, Semaphore, Stream } from "effect"
import { Reactivity } from "effect/reactivity"
import { SqlClient, SqlError, Statement } from "effect/sql"
import type { SqlConnection } from "effect/sql"
import * as fs from "node:fs"
import type { DatabaseSync, SQLInputValue } from "node:sqlite"
import * as NodeSqlite from "../config/nodeSqlite.ts"
import { DatabaseCorrupt, SqliteUnavailable } from "./errors.ts"
import { isDamage, statementError, toSqlError } from "./SqliteFaults.ts"
import { bindable, makeBatch, SqliteBatch, type SqliteBatchService } from "./SqliteBatch.ts"
import { makeStatementCache, MultipleStatements, type Prepared, prepareOne } from "./StatementCache.ts"

/** The `node:sqlite` module (src/config/nodeSqlite.ts). */
export type SqliteModule = NodeSqlite.SqliteModule

/**
 * `node:sqlite`, loaded without Node 22's one-time experimental warning;
 * `undefined` when Node has no such module (src/config/nodeSqlite.ts).
 */
export const loadNodeSqlite = NodeSqlite.loadNodeSqlite

/** Pages written to the WAL before SQLite checkpoints it into the database file (and fsyncs both). */
export const WAL_AUTOCHECKPOINT_PAGES = 10_000

/** What a WAL file is cut back to after a checkpoint. */
export const WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024

/** `PRAGMA synchronous`: `NORMAL` survives a process crash, `FULL` also a power loss (an fsync per commit). */
export type Synchronous = "NORMAL" | "FULL"

/** Options of {@link make} and {@link layer}. */
export interface SqliteClientOptions {
  /** The database file, or `":memory:"` for a private in-memory database. */
  readonly filename: string
  /** Default `"NORMAL"`: durable against a process crash or `kill -9`, not against power loss. */
  readonly synchronous?: Synchronous | undefined
  /**
   * How long a statement waits for another process's lock; default
   * {@link DEFAULT_BUSY_TIMEOUT_MS}. SQLite waits synchronously, on the
   * broker's event loop, so this is kept short and callers retry instead.
   */
  readonly busyTimeoutMs?: number | undefined
  /** Prepared statements kept, least recently used evicted first; default 256. */
  readonly statementCacheSize?: number | undefined
  /** Loads `node:sqlite`; returns `undefined` when this Node.js has none. Tests inject a missing module here. */
  readonly loadSqlite?: (() => SqliteModule | undefined) | undefined
}

/** The statement cache's counters, as {@link SqliteBatchService.statementCache} reports them. */
export type { StatementCacheStats } from "./StatementCache.ts"

/** The batched writes (`SqliteBatch.ts`), provided beside `SqlClient.SqlClient`. */
export { type BatchStep, multiRowInsert, SqliteBatch, type SqliteBatchService } from "./SqliteBatch.ts"

/** The name this driver reports as `SqlClient.driver`. */
export const DRIVER = "node-sqlite-builtin"

/**
 * The connection's `busy_timeout`: how long a statement waits, inside SQLite
 * and so with the broker's event loop parked, for another process's lock.
 * 100 ms rides out a brief lock (a `sqlite3` one-off write, another
 * connection's checkpoint) and parks the loop at most that long per attempt:
 * the store writer retries a failed commit every second (StoreWriter.ts), so
 * while another process holds the write lock the broker's other connections
 * lose at most a tenth of its time; 5 s (SQLite tools' usual value) stalled
 * every connection 5 s per attempt. Opening waits longer, by Effect retries
 * (`Database.OPEN_BUSY_WAIT`).
 */
export const DEFAULT_BUSY_TIMEOUT_MS = 100
const DEFAULT_STATEMENT_CACHE_SIZE = 256

/** Rows as plain objects (node:sqlite returns null-prototype ones). */
const plainRows = (rows: ReadonlyArray<Record<string, unknown>>): Array<Record<string, unknown>> => {
  const out = new Array<Record<string, unknown>>(rows.length)
  for (let i = 0; i < rows.length; i++) out[i] = { ...rows[i] }
  return out
}

/**
 * Opens the database and builds the `SqlClient` and its {@link SqliteBatch}
 * over it; the scope closes the database. Fails with `SqliteUnavailable` when
 * Node has no `node:sqlite`, and with the open's `SqlError` (e.g. the file is
 * not a database) otherwise.
 */
export const make = (
  options: SqliteClientOptions
): Effect.Effect<
  {
    readonly sql: SqlClient.SqlClient
    readonly batch: SqliteBatchService
    /** Whether a statement has met an error saying the file may be damaged (corrupt, not a database, I/O). */
    readonly damaged: () => boolean
  },
  SqliteUnavailable | SqlError.SqlError,
  Scope.Scope
> =>
  Effect.gen(function*() {
    const file = options.filename
    const sqlite = (options.loadSqlite ?? loadNodeSqlite)()
    if (sqlite === undefined) return yield* new SqliteUnavailable({ nodeVersion: process.version })

    const db = yield* Effect.acquireRelease(
      Effect.try({
        try: () => openDatabase(sqlite, options),
        catch: (cause) => toSqlError(file, cause, "open")
      }),
      (db) =>
        Effect.sync(() => {
          if (db.isOpen) db.close()
        })
    )

    const cache = makeStatementCache(db, Math.max(1, options.statementCacheSize ?? DEFAULT_STATEMENT_CACHE_SIZE))
    /** Whether a statement met an error saying the file may be damaged (`isDamage`): set, never cleared. */
    const health = { damaged: false }

    /** Runs `sql` once; `f` reads the result while the statement is bound (all synchronous). */
    const run = <A>(
      sql: string,
      params: ReadonlyArray<unknown>,
      prepared: boolean,
      f: (statement: Prepared, binds: ReadonlyArray<SQLInputValue>, safeIntegers: boolean) => A
    ): Effect.Effect<A, SqlError.SqlError> =>
      Effect.withFiber((fiber) => {
        const binds = bindable(params)
        if (typeof binds === "string") return Effect.fail(statementError(binds, "bind"))
        try {
          const statement = prepared ? cache.get(sql) : prepareOne(db, sql)
          return Effect.succeed(f(statement, binds, fiber.getRef(SqlClient.SafeIntegers)))
        } catch (cause) {
          if (cause instanceof MultipleStatements) return Effect.fail(statementError(cause.message, "prepare"))
          if (isDamage(cause)) health.damaged = true
          return Effect.fail(toSqlError(file, cause, "execute"))
        }
      })

    const rows = (
      { reader, statement }: Prepared,
      binds: ReadonlyArray<SQLInputValue>,
      safeIntegers: boolean
    ): ReadonlyArray<Record<string, unknown>> => {
      if (!reader) {
        statement.run(...binds)
        return []
      }
      statement.setReadBigInts(safeIntegers)
      return plainRows(statement.all(...binds))
    }

    const raw = (prepared: Prepared, binds: ReadonlyArray<SQLInputValue>, safeIntegers: boolean): unknown => {
      if (prepared.reader) return rows(prepared, binds, safeIntegers)
      const result = prepared.statement.run(...binds)
      return { changes: result.changes, lastInsertRowid: result.lastInsertRowid }
    }

    const values = (
      { reader, statement }: Prepared,
      binds: ReadonlyArray<SQLInputValue>,
      safeIntegers: boolean
    ): ReadonlyArray<ReadonlyArray<unknown>> => {
      if (!reader) {
        statement.run(...binds)
        return []
      }
      statement.setReadBigInts(safeIntegers)
      statement.setReturnArrays(true)
      try {
        const out: Array<ReadonlyArray<unknown>> = []
        for (const row of statement.all(...binds)) out.push(Array.isArray(row) ? row : Object.values(row))
        return out
      } finally {
        statement.setReturnArrays(false)
      }
    }

    const connection: SqlConnection.Connection = {
      execute: (sql, params, transformRows) =>
        transformRows === undefined
          ? run(sql, params, true, rows)
          : Effect.map(run(sql, params, true, rows), transformRows),
      executeRaw: (sql, params) => run(sql, params, true, raw),
      executeValues: (sql, params) => run(sql, params, true, values),
      executeValuesUnprepared: (sql, params) => run(sql, params, false, values),
      executeUnprepared: (sql, params, transformRows) =>
        transformRows === undefined
          ? run(sql, params, false, rows)
          : Effect.map(run(sql, params, false, rows), transformRows),
      executeStream: (sql, params, transformRows) =>
        Stream.unwrap(Effect.map(
          transformRows === undefined
            ? run(sql, params, true, rows)
            : Effect.map(run(sql, params, true, rows), transformRows),
          Stream.fromIterable
        ))
    }

    const semaphore = yield* Semaphore.make(1)
    const acquirers = SqlClient.makeSqliteAcquirers({
      connection: Effect.succeed(connection),
      semaphore,
      isTransaction: () => db.isTransaction
    })

    const sql = yield* SqlClient.make({
      ...acquirers,
      compiler: Statement.makeCompilerSqlite(),
      driver: DRIVER,
      spanAttributes: [["db.system.name", "sqlite"]],
      // IMMEDIATE takes the write lock at BEGIN, so busy_timeout covers a
      // transaction that reads before it writes (no SQLITE_BUSY mid-way).
      beginTransaction: "BEGIN IMMEDIATE",
      prepareTransactionControls: true,
      releaseSavepoint: (name) => `RELEASE SAVEPOINT ${name}`
    }).pipe(Effect.provideServiceEffect(Reactivity.Reactivity, Reactivity.make))

    const batch = makeBatch({
      file,
      db,
      cache,
      semaphore,
      inTransaction: Effect.map(Effect.serviceOption(sql.transactionService), (open) => open._tag === "Some"),
      withTransaction: sql.withTransaction,
      damaged: () => {
        health.damaged = true
      }
    })
    return { sql, batch, damaged: () => health.damaged }
  })

/** Opens the file and applies the connection's pragmas; throws node:sqlite's error. */
const openDatabase = (sqlite: SqliteModule, options: SqliteClientOptions): DatabaseSync => {
  const db = new sqlite.DatabaseSync(options.filename, {
    enableForeignKeyConstraints: true,
    timeout: Math.max(0, Math.trunc(options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS)),
    readBigInts: false,
    // Refuses SQL that can corrupt the file on purpose (writable_schema and the like).
    defensive: true
  })
  try {
    db.exec("PRAGMA foreign_keys = ON")
    // The first read of the file: fails on one that is not a database (`look` checks it before, read-only).
    const journal = db.prepare("PRAGMA journal_mode = WAL").get()?.["journal_mode"]
    // SQLite keeps the old mode, silently, where WAL cannot work (e.g. a network file system).
    if (journal !== "wal" && journal !== "memory") {
      throw new Error(`cannot use write-ahead logging here (journal_mode stays ${String(journal)}); ` +
        `put the agent dir on a local file system`)
    }
    db.exec(`PRAGMA synchronous = ${options.synchronous ?? "NORMAL"}`)
    // With NORMAL the only fsyncs are a checkpoint's, on the connection's (the event loop's) time.
    // Checkpointing every 10,000 pages instead of SQLite's 1,000 makes them a tenth as frequent; the
    // WAL is cut back to 64 MiB after each (docs/store.md, "What a write costs").
    db.exec(`PRAGMA wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`)
    db.exec(`PRAGMA journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`)
    return db
  } catch (error) {
    db.close()
    throw error
  }
}

/** Options of {@link look}. */
export interface LookOptions {
  /** The database file. */
  readonly filename: string
  /** How long a read waits for another process's lock; default {@link DEFAULT_BUSY_TIMEOUT_MS}. */
  readonly busyTimeoutMs?: number | undefined
  /** Loads `node:sqlite` (see {@link SqliteClientOptions.loadSqlite}). */
  readonly loadSqlite?: (() => SqliteModule | undefined) | undefined
  /**
   * Whether to run `PRAGMA quick_check`, asked of the open connection first;
   * default: always. `Database.ts` skips it for a file its broker closed
   * cleanly (`Database.CLEAN_MARK`).
   */
  readonly quickCheck?: ((db: DatabaseSync) => boolean) | undefined
}

/** `file`'s `-wal` and `-shm` files that do not exist now. */
const missingSideFiles = (file: string): Array<string> =>
  [`${file}-wal`, `${file}-shm`].filter((side) => !fs.existsSync(side))

/**
 * Looks at an existing database file without changing it: opens it
 * read-only, runs `PRAGMA quick_check` unless `options.quickCheck` says not
 * to (every page is read; a file that is not a database fails with
 * `SQLITE_NOTADB`, a damaged one with a `SqlError` whose cause is a
 * `DatabaseCorrupt`), runs `read` on the connection, and
 * closes it. Nothing is written to the file or to a leftover `-wal`, which is
 * read as part of the database, never copied into it; no pragma is set.
 *
 * A read-only connection to a WAL database creates the `-wal` (empty) and
 * `-shm` files when they are missing, and cannot remove them when it closes
 * (the last read-write connection's close does); those it created are
 * removed once it is closed, a `-wal` only while it is still empty. The
 * `-shm` is SQLite's index of the `-wal`, rebuilt from it when needed; a
 * `-shm` that existed may be rewritten by the look, as by any reader.
 */
export const look = <A>(
  options: LookOptions,
  read: (db: DatabaseSync) => A
): Effect.Effect<A, SqliteUnavailable | SqlError.SqlError> =>
  Effect.gen(function*() {
    const file = options.filename
    const sqlite = (options.loadSqlite ?? loadNodeSqlite)()
    if (sqlite === undefined) return yield* new SqliteUnavailable({ nodeVersion: process.version })
    return yield* Effect.try({
      try: () => {
        const missing = missingSideFiles(file)
        const db = new sqlite.DatabaseSync(file, {
          readOnly: true,
          timeout: Math.max(0, Math.trunc(options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS)),
          readBigInts: false,
          defensive: true
        })
        try {
          if (options.quickCheck?.(db) ?? true) {
            const problems = db.prepare("PRAGMA quick_check").all().flatMap((row) => Object.values(row).map(String))
            if (problems.length !== 1 || problems[0] !== "ok") {
              throw new DatabaseCorrupt({ file, detail: `PRAGMA quick_check: ${problems.slice(0, 3).join("; ")}` })
            }
          }
          return read(db)
        } finally {
          db.close()
          for (const side of missing) {
            try {
              if (fs.existsSync(side) && (side.endsWith("-shm") || fs.statSync(side).size === 0)) fs.rmSync(side)
            } catch {
              // Best effort: a side file left behind holds nothing, and must not hide the look's own outcome.
            }
          }
        }
      },
      catch: (cause) => toSqlError(file, cause, "open")
    })
  })

/**
 * `SqlClient.SqlClient` and {@link SqliteBatch} over one `node:sqlite`
 * connection to `options.filename`, closed with the layer.
 */
export const layer = (
  options: SqliteClientOptions
): Layer.Layer<SqlClient.SqlClient | SqliteBatch, SqliteUnavailable | SqlError.SqlError> =>
  Layer.effectContext(
    Effect.map(make(options), ({ batch, sql }) =>
      Context.make(SqlClient.SqlClient, sql).pipe(Context.add(SqliteBatch, batch)))
  )
