/**
 * The driver's one extra beside `SqlClient`: batched writes on the
 * connection `SqliteClient` owns.
 *
 * A store that commits on every tick of traffic (the broker's `MailStore`)
 * cannot afford effect/sql's per-statement and per-transaction machinery
 * there: each statement is an Effect with its compile and semaphore round,
 * and each `withTransaction` a span, a scope and a lease. Measured on the
 * broker's ask round trip (docs/performance.md, Issue 16, "Durable"), that
 * machinery cost more CPU than SQLite's own work. So a batch runs as one
 * synchronous step on prepared statements: `transact` takes the connection's
 * semaphore once (the same one every `SqlClient` statement and transaction
 * takes, so it never runs inside another fiber's transaction), runs `BEGIN
 * IMMEDIATE`, every statement for every row, and `COMMIT`, and gives the
 * connection back. A one-row `INSERT` may insert several rows per run
 * (`BatchStep.rowsPerInsert`): the run itself (binding, stepping, its result
 * object) cost about as much again as the row.
 *
 * Both operations can be rewritten over any `SqlClient` (one
 * `sql.withTransaction`, one `sql.unsafe` per row), which is what they do
 * minus the cost, so the official effect driver can still replace
 * `SqliteClient.ts` (docs/store.md, "SqliteBatch").
 */
import { Context, Effect, type Semaphore } from "effect"
import type { SqlError } from "effect/sql"
import type { DatabaseSync, SQLInputValue } from "node:sqlite"
import { isDamage, statementError, toSqlError } from "./SqliteFaults.ts"
import { MultipleStatements, type StatementCache, type StatementCacheStats } from "./StatementCache.ts"

/** One statement of a {@link SqliteBatchService.transact}: its SQL (`?` parameters) and the rows to run it for. */
export interface BatchStep {
  readonly sql: string
  readonly rows: ReadonlyArray<ReadonlyArray<unknown>>
  /**
   * For an `INSERT … VALUES (?, …)` of one row (the tuple last in `sql`):
   * insert up to this many rows per statement run, `VALUES (…), (…), …`,
   * the rest one by one. A run per row costs about as much again as the
   * row itself (docs/performance.md, "Durable store CPU, fifth stop").
   * Rows are checked and reported one by one as without it.
   */
  readonly rowsPerInsert?: number
}

/** The batched-write operations (see the module header). */
export interface SqliteBatchService {
  /**
   * Runs the single statement `sql` (positional `?` parameters) once per
   * entry of `rows`, in one synchronous step with one prepared statement,
   * and returns the total number of rows changed. Outside a transaction it
   * opens its own, so the whole batch is stored or none of it; inside
   * `sql.withTransaction` it joins that transaction.
   */
  readonly executeMany: (
    sql: string,
    rows: ReadonlyArray<ReadonlyArray<unknown>>
  ) => Effect.Effect<number, SqlError.SqlError>
  /**
   * Runs every step, in order, in one transaction (`BEGIN IMMEDIATE` …
   * `COMMIT`), as one synchronous step holding the connection, and returns
   * the total number of rows changed. All of it is stored or none of it
   * (a failure rolls it back). Inside `sql.withTransaction` it joins that
   * transaction instead.
   */
  readonly transact: (steps: ReadonlyArray<BatchStep>) => Effect.Effect<number, SqlError.SqlError>
  /** The prepared-statement cache's counters. */
  readonly statementCache: Effect.Effect<StatementCacheStats>
  /** The database file the connection opened (`:memory:` for an in-memory one), for errors that name it. */
  readonly file: string
}

/** {@link SqliteBatchService} as a service, provided next to `SqlClient.SqlClient` by `SqliteClient.layer`. */
export class SqliteBatch extends Context.Service<SqliteBatch, SqliteBatchService>()(
  "effect-intercom/store/SqliteBatch"
) {}

const isSqlInput = (value: unknown): value is SQLInputValue =>
  value === null || typeof value === "number" || typeof value === "string" || typeof value === "bigint" ||
  ArrayBuffer.isView(value)

/** Whether every parameter binds as it is (a plain loop: `every` with a callback per parameter showed in commits). */
const allSqlInput = (params: ReadonlyArray<unknown>): params is ReadonlyArray<SQLInputValue> => {
  for (let i = 0; i < params.length; i++) if (!isSqlInput(params[i])) return false
  return true
}

/**
 * Parameters SQLite can bind: `undefined` binds NULL and a boolean 1 or 0,
 * like the other Effect SQLite drivers; anything else is refused (the
 * string says why). The array is copied only when something needs converting.
 */
export const bindable = (params: ReadonlyArray<unknown>): ReadonlyArray<SQLInputValue> | string => {
  if (allSqlInput(params)) return params
  const converted: Array<SQLInputValue> = []
  for (let i = 0; i < params.length; i++) {
    const value = params[i]
    if (isSqlInput(value)) converted.push(value)
    else if (value === undefined) converted.push(null)
    else if (typeof value === "boolean") converted.push(value ? 1 : 0)
    else {
      return `parameter ${i + 1} is ${value instanceof Date ? "a Date" : `of type ${typeof value}`}; SQLite binds ` +
        `only null, numbers, bigints, strings and byte arrays (convert it first, e.g. a Date to epoch milliseconds)`
    }
  }
  return converted
}

/** A row that cannot be bound: the batch stops before SQLite sees it. */
class Unbindable {
  readonly message: string
  constructor(message: string) {
    this.message = message
  }
}

/** What `makeBatch` needs of the connection `SqliteClient` opened. */
export interface BatchConnection {
  readonly file: string
  readonly db: DatabaseSync
  readonly cache: StatementCache
  /** The semaphore every statement and transaction of the connection takes. */
  readonly semaphore: Semaphore.Semaphore
  /** Whether the calling fiber is inside `sql.withTransaction` (it holds the connection then). */
  readonly inTransaction: Effect.Effect<boolean>
  /** Runs `effect` as its own `sql.withTransaction` (the `executeMany` fallback outside one). */
  readonly withTransaction: <A>(effect: Effect.Effect<A, SqlError.SqlError>) => Effect.Effect<A, SqlError.SqlError>
  /** A statement failed with an error that says the file may be damaged (`isDamage`). */
  readonly damaged: () => void
}

/** `sql`, an `INSERT … VALUES (…)` of one row, as the insert of `rows` rows (undefined when it has no tuple to repeat). */
export const multiRowInsert = (sql: string, rows: number): string | undefined => {
  const at = sql.toUpperCase().lastIndexOf("VALUES")
  if (at < 0) return undefined
  const tuple = sql.slice(at + "VALUES".length).trim()
  // One plain tuple of parameters and nothing after it (no nested call, no RETURNING): anything else runs row by row.
  if (!tuple.startsWith("(") || tuple.indexOf(")") !== tuple.length - 1) return undefined
  return `${sql.slice(0, at)}VALUES ${Array.from({ length: rows }, () => tuple).join(", ")}`
}

/** The {@link SqliteBatchService} of one connection. */
export const makeBatch = (connection: BatchConnection): SqliteBatchService => {
  const { cache, db, file, semaphore } = connection
  /** Multi-row texts by one-row SQL and row count, built once (the connection's own, like its statements). */
  const multiRowTexts = new Map<string, Map<number, string | undefined>>()
  const multiRowText = (sql: string, rows: number): string | undefined => {
    let bySize = multiRowTexts.get(sql)
    if (bySize === undefined) multiRowTexts.set(sql, bySize = new Map())
    if (!bySize.has(rows)) bySize.set(rows, multiRowInsert(sql, rows))
    return bySize.get(rows)
  }

  /** Inserts `rows` `per` at a time with one multi-row statement, the rest one by one; the rows changed. */
  const insertRows = (sql: string, rows: ReadonlyArray<ReadonlyArray<unknown>>, per: number, label: string): number => {
    const text = multiRowText(sql, per)
    if (text === undefined) return runRows(sql, rows, label)
    const { statement } = cache.get(text)
    const params: Array<SQLInputValue> = []
    let changes = 0
    let i = 0
    for (; i + per <= rows.length; i += per) {
      params.length = 0
      for (let j = i; j < i + per; j++) {
        const binds = bindable(rows[j] ?? [])
        if (typeof binds === "string") throw new Unbindable(`${label}row ${j + 1}: ${binds}`)
        for (let k = 0; k < binds.length; k++) params.push(binds[k]!)
      }
      changes += Number(statement.run(...params).changes)
    }
    return i === rows.length ? changes : changes + runRows(sql, rows.slice(i), label, i)
  }

  /** Runs `sql` for each row (throws SQLite's error or an `Unbindable`); the rows changed. `first`: the rows' place in their step. */
  const runRows = (sql: string, rows: ReadonlyArray<ReadonlyArray<unknown>>, label: string, first = 0): number => {
    let changes = 0
    const { statement } = cache.get(sql)
    for (let i = 0; i < rows.length; i++) {
      const binds = bindable(rows[i] ?? [])
      if (typeof binds === "string") throw new Unbindable(`${label}row ${first + i + 1}: ${binds}`)
      changes += Number(statement.run(...binds).changes)
    }
    return changes
  }

  const failure = (cause: unknown, operation: string): SqlError.SqlError => {
    if (cause instanceof Unbindable) return statementError(cause.message, "bind")
    if (cause instanceof MultipleStatements) return statementError(cause.message, "prepare")
    if (isDamage(cause)) connection.damaged()
    return toSqlError(file, cause, operation)
  }

  const runSteps = (steps: ReadonlyArray<BatchStep>): number => {
    let changes = 0
    for (let s = 0; s < steps.length; s++) {
      const step = steps[s]
      if (step !== undefined && step.rows.length > 0) {
        const label = steps.length > 1 ? `step ${s + 1}, ` : ""
        const per = step.rowsPerInsert ?? 1
        changes += per > 1 && step.rows.length >= per
          ? insertRows(step.sql, step.rows, per, label)
          : runRows(step.sql, step.rows, label)
      }
    }
    return changes
  }

  const rollback = (): void => {
    if (db.isTransaction) cache.get("ROLLBACK").statement.run()
  }

  /** BEGIN, the steps, COMMIT: synchronously, while this fiber holds the semaphore. */
  const transactNow = (steps: ReadonlyArray<BatchStep>): Effect.Effect<number, SqlError.SqlError> => {
    try {
      // Left open only by a failed ROLLBACK (below): nothing of it was committed.
      rollback()
      cache.get("BEGIN IMMEDIATE").statement.run()
    } catch (cause) {
      return Effect.fail(failure(cause, "begin"))
    }
    try {
      const changes = runSteps(steps)
      cache.get("COMMIT").statement.run()
      return Effect.succeed(changes)
    } catch (cause) {
      try {
        rollback()
      } catch {
        // The next batch rolls it back before it begins; this one failed either way.
      }
      return Effect.fail(failure(cause, "transact"))
    }
  }

  const inside = <A>(f: () => A, operation: string): Effect.Effect<A, SqlError.SqlError> =>
    Effect.suspend(() => {
      try {
        return Effect.succeed(f())
      } catch (cause) {
        return Effect.fail(failure(cause, operation))
      }
    })

  const executeMany = (text: string, rows: ReadonlyArray<ReadonlyArray<unknown>>) =>
    rows.length === 0 ? Effect.succeed(0) : Effect.flatMap(
      connection.inTransaction,
      // Inside a transaction the connection is already this fiber's; outside,
      // the batch is its own transaction (which takes the connection).
      (open) => {
        const run = inside(() => runRows(text, rows, ""), "executeMany")
        return open ? run : connection.withTransaction(run)
      }
    )

  const transact = (steps: ReadonlyArray<BatchStep>) =>
    Effect.flatMap(
      connection.inTransaction,
      (open) =>
        open
          ? inside(() => runSteps(steps), "transact")
          : semaphore.withPermit(Effect.suspend(() => transactNow(steps)))
    )

  return { executeMany, transact, statementCache: Effect.sync(() => cache.stats()), file }
}
