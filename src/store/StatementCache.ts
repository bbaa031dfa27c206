/**
 * The connection's prepared statements: a bounded least-recently-used cache
 * keyed by SQL text, owned by one `SqliteClient` connection.
 *
 * Preparing (parsing and planning) costs more than running most of the
 * broker's statements, and the same few statements run on every tick. Only
 * single statements are prepared: SQLite would silently ignore everything
 * after the first statement of a text, so such text is refused instead.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite"

/** Counters of the prepared-statement cache, for tests and diagnostics. */
export interface StatementCacheStats {
  /** Statements held now. */
  readonly size: number
  /** Most statements held. */
  readonly capacity: number
  /** Statements compiled by SQLite so far (cache misses). */
  readonly prepares: number
  /** Statements served from the cache so far. */
  readonly hits: number
}

/** A prepared statement and whether it returns rows. */
export interface Prepared {
  readonly statement: StatementSync
  /** Whether it returns rows (`SELECT`, `RETURNING`, most `PRAGMA`s). */
  readonly reader: boolean
}

/** Thrown by {@link prepareOne} for SQL text that holds more than one statement. */
export class MultipleStatements extends Error {
  constructor(sql: string) {
    super(
      `the SQL text holds more than one statement; run each statement on its own (SQLite would ignore all ` +
        `but the first): ${sql.slice(0, 200)}`
    )
  }
}

/** Whether `rest`, the text after the first statement, holds only whitespace, `;` and comments. */
const isOnlyTrivia = (rest: string): boolean =>
  rest.replace(/\/\*[\s\S]*?\*\//g, "").replace(/--[^\n]*/g, "").replace(/[\s;]/g, "").length === 0

/** Prepares `sql`, refusing text with more than one statement (throws {@link MultipleStatements}). */
export const prepareOne = (db: DatabaseSync, sql: string): Prepared => {
  const statement = db.prepare(sql)
  const source = statement.sourceSQL
  if (source.length < sql.length && sql.startsWith(source) && !isOnlyTrivia(sql.slice(source.length))) {
    throw new MultipleStatements(sql)
  }
  return { statement, reader: statement.columns().length > 0 }
}

/** The cache: `get` prepares on a miss (throwing SQLite's error), `stats` counts. */
export interface StatementCache {
  readonly get: (sql: string) => Prepared
  readonly stats: () => StatementCacheStats
}

/** A cache of at most `capacity` statements of `db`. */
export const makeStatementCache = (db: DatabaseSync, capacity: number): StatementCache => {
  const entries = new Map<string, Prepared>()
  let prepares = 0
  let hits = 0
  return {
    get(sql) {
      const cached = entries.get(sql)
      if (cached !== undefined) {
        hits++
        entries.delete(sql)
        entries.set(sql, cached)
        return cached
      }
      const prepared = prepareOne(db, sql)
      prepares++
      entries.set(sql, prepared)
      if (entries.size > capacity) {
        const oldest = entries.keys().next()
        if (oldest.done !== true) entries.delete(oldest.value)
      }
      return prepared
    },
    stats: () => ({ size: entries.size, capacity, prepares, hits })
  }
}
