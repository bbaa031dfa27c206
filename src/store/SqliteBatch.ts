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
 * connection back.
 *
 * Both operations can be rewritten over any `SqlClient` (one
 * `sql.withTransaction`, one `sql.unsafe` per row), which is what they do
 * minus the cost, so the official effect driver can still replace
 * `SqliteClient.ts` (docs/store.md, "SqliteBatch").
 */
import { Context, Effect, type Semaphore } from "effect"
import type { SqlError } from "effect/sql"
import type { DatabaseSync, SQLInputValue } from "node:sqlite"
import { statementError, toSqlError } from "./SqliteFaults.ts"
import { MultipleStatements, type StatementCache, type StatementCacheStats } from "./StatementCache.ts"

/** One statement of a {@link SqliteBatchService.transact}: its SQL (`?` parameters) and the rows to run it for. */
export interface BatchStep {
  readonly sql: string
  readonly rows: ReadonlyArray<ReadonlyArray<unknown>>
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
}

/** {@link SqliteBatchService} as a service, provided next to `SqlClient.SqlClient` by `SqliteClient.layer`. */
export class SqliteBatch extends Context.Service<SqliteBatch, SqliteBatchService>()(
  "effect-intercom/store/SqliteBatch"
) {}

const isSqlInput = (value: unknown): value is SQLInputValue =>
  value === null || typeof value === "number" || typeof value === "string" || typeof value === "bigint" ||
  ArrayBuffer.isView(value)

/**
 * Parameters SQLite can bind: `undefined` binds NULL and a boolean 1 or 0,
 * like the other Effect SQLite drivers; anything else is refused (the
 * string says why). The array is copied only when something needs converting.
 */
export const bindable = (params: ReadonlyArray<unknown>): ReadonlyArray<SQLInputValue> | string => {
  if (params.every(isSqlInput)) return params
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
}

/** The {@link SqliteBatchService} of one connection. */
export const makeBatch = (connection: BatchConnection): SqliteBatchService => {
  const { cache, db, file, semaphore } = connection

  /** Runs `sql` for each row (throws SQLite's error or an `Unbindable`); the rows changed. */
  const runRows = (sql: string, rows: ReadonlyArray<ReadonlyArray<unknown>>, label: string): number => {
    let changes = 0
    const { statement } = cache.get(sql)
    for (let i = 0; i < rows.length; i++) {
      const binds = bindable(rows[i] ?? [])
      if (typeof binds === "string") throw new Unbindable(`${label}row ${i + 1}: ${binds}`)
      changes += Number(statement.run(...binds).changes)
    }
    return changes
  }

  const failure = (cause: unknown, operation: string): SqlError.SqlError => {
    if (cause instanceof Unbindable) return statementError(cause.message, "bind")
    if (cause instanceof MultipleStatements) return statementError(cause.message, "prepare")
    return toSqlError(file, cause, operation)
  }

  const runSteps = (steps: ReadonlyArray<BatchStep>): number => {
    let changes = 0
    for (let s = 0; s < steps.length; s++) {
      const step = steps[s]
      if (step !== undefined && step.rows.length > 0) {
        changes += runRows(step.sql, step.rows, steps.length > 1 ? `step ${s + 1}, ` : "")
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

  return { executeMany, transact, statementCache: Effect.sync(() => cache.stats()) }
}
