/**
 * The `SqlClient` over `node:sqlite`: pragmas, the prepared-statement cache,
 * rows, transactions and savepoints, the batch path, and its faults (disk
 * full, a missing node:sqlite, parameters SQLite cannot bind).
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { SqlClient } from "effect/sql"
import * as path from "node:path"
import { DatabaseWriteFailed, SqliteUnavailable, writeFailureOf } from "../../src/store/errors.ts"
import * as SqliteClient from "../../src/store/SqliteClient.ts"
import { tempDir } from "./support.ts"

/** A client over a new file in a temp dir, with a table `t(id INTEGER PRIMARY KEY, v TEXT)`. */
const fileClient = (options: Partial<SqliteClient.SqliteClientOptions> = {}) =>
  Effect.gen(function*() {
    const dir = yield* tempDir
    const filename = path.join(dir, "intercom.db")
    const client = yield* SqliteClient.make({ filename, ...options })
    yield* client.sql`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)`
    return { ...client, filename }
  })

const ids = (sql: SqlClient.SqlClient) =>
  Effect.map(sql<{ readonly id: number }>`SELECT id FROM t ORDER BY id`, (rows) => rows.map((row) => row.id))

class Boom {
  readonly _tag = "Boom"
}

describe("SqliteClient", () => {
  it.effect("opens in WAL mode with synchronous=NORMAL, foreign keys on and a busy timeout", () =>
    Effect.gen(function*() {
      const { sql } = yield* fileClient()
      const [journal] = yield* sql<{ journal_mode: string }>`PRAGMA journal_mode`
      const [sync] = yield* sql<{ synchronous: number }>`PRAGMA synchronous`
      const [fk] = yield* sql<{ foreign_keys: number }>`PRAGMA foreign_keys`
      const [busy] = yield* sql<{ timeout: number }>`PRAGMA busy_timeout`
      assert.strictEqual(journal?.journal_mode, "wal")
      assert.strictEqual(sync?.synchronous, 1) // NORMAL
      assert.strictEqual(fk?.foreign_keys, 1)
      // Short: SQLite waits for another process's lock on the event loop (DEFAULT_BUSY_TIMEOUT_MS).
      assert.strictEqual(busy?.timeout, 100)
    }))

  it.live("a commit while another process holds the write lock fails as busy at once, and succeeds once it is released", () =>
    Effect.gen(function*() {
      const { filename, sql } = yield* fileClient()
      const sqlite = SqliteClient.loadNodeSqlite()
      if (sqlite === undefined) return
      const other = yield* Effect.acquireRelease(
        Effect.sync(() => new sqlite.DatabaseSync(filename)),
        (db) => Effect.sync(() => db.close())
      )
      other.exec("BEGIN IMMEDIATE")
      const [took, attempt] = yield* Effect.timed(Effect.result(sql.withTransaction(sql`INSERT INTO t (id, v) VALUES (1, 'a')`)))
      assert.strictEqual(attempt._tag, "Failure")
      if (attempt._tag === "Failure") assert.strictEqual(attempt.failure.reason._tag, "LockTimeoutError")
      // The busy timeout was 5 s: every such attempt parked the event loop that long.
      assert.isBelow(Duration.toMillis(took), 2_000)
      other.exec("COMMIT")
      yield* sql.withTransaction(sql`INSERT INTO t (id, v) VALUES (1, 'a')`)
      assert.deepStrictEqual(yield* ids(sql), [1])
    }))

  it.effect("synchronous=FULL when asked", () =>
    Effect.gen(function*() {
      const { sql } = yield* fileClient({ synchronous: "FULL" })
      const [sync] = yield* sql<{ synchronous: number }>`PRAGMA synchronous`
      assert.strictEqual(sync?.synchronous, 2)
    }))

  it.effect("reuses a prepared statement for the same SQL text and evicts the least recently used", () =>
    Effect.gen(function*() {
      const { batch, sql } = yield* fileClient({ statementCacheSize: 2 })
      const before = yield* batch.statementCache
      for (const v of ["a", "b", "c"]) yield* sql`INSERT INTO t (v) VALUES (${v})`
      const after = yield* batch.statementCache
      assert.strictEqual(after.prepares - before.prepares, 1)
      assert.strictEqual(after.hits - before.hits, 2)

      yield* sql`SELECT 1 AS one`
      yield* sql`SELECT 2 AS two` // evicts the INSERT (capacity 2)
      const full = yield* batch.statementCache
      assert.strictEqual(full.size, 2)
      yield* sql`INSERT INTO t (v) VALUES (${"d"})`
      const again = yield* batch.statementCache
      assert.strictEqual(again.prepares - full.prepares, 1, "an evicted statement is prepared again")
    }))

  it.effect("returns rows as plain objects with numbers, and bigints under SafeIntegers", () =>
    Effect.gen(function*() {
      const { sql } = yield* fileClient()
      const [row] = yield* sql<{ n: number; s: string }>`SELECT 42 AS n, 'x' AS s`
      assert.deepStrictEqual(row, { n: 42, s: "x" })
      assert.strictEqual(Object.getPrototypeOf(row), Object.prototype)
      const [big] = yield* sql<{ n: bigint }>`SELECT 9007199254740993 AS n`.pipe(
        Effect.provideService(SqlClient.SafeIntegers, true)
      )
      assert.strictEqual(big?.n, 9007199254740993n)
    }))

  it.effect("binds undefined as NULL and booleans as 1/0, and refuses a Date with a clear error", () =>
    Effect.gen(function*() {
      const { sql } = yield* fileClient()
      const [row] = yield* sql<{ a: null; b: number }>`SELECT ${undefined} AS a, ${true} AS b`
      assert.deepStrictEqual(row, { a: null, b: 1 })
      const error = yield* Effect.flip(sql`SELECT ${new Date(0)} AS d`)
      assert.include(error.message, "parameter 1 is a Date")
    }))

  it.effect("refuses SQL text holding several statements instead of running only the first", () =>
    Effect.gen(function*() {
      const { sql } = yield* fileClient()
      const error = yield* Effect.flip(sql.unsafe("INSERT INTO t (v) VALUES ('a'); INSERT INTO t (v) VALUES ('b')"))
      assert.include(error.message, "more than one statement")
      assert.deepStrictEqual(yield* ids(sql), [])
      yield* sql.unsafe("INSERT INTO t (v) VALUES ('a'); -- trailing comment")
      assert.deepStrictEqual(yield* ids(sql), [1])
    }))

  it.effect("withTransaction commits on success and rolls back on failure", () =>
    Effect.gen(function*() {
      const { sql } = yield* fileClient()
      yield* sql.withTransaction(sql`INSERT INTO t (id, v) VALUES (1, 'kept')`)
      yield* sql.withTransaction(
        Effect.andThen(sql`INSERT INTO t (id, v) VALUES (2, 'dropped')`, Effect.fail(new Boom()))
      ).pipe(Effect.flip)
      assert.deepStrictEqual(yield* ids(sql), [1])
    }))

  it.effect("a nested transaction is a savepoint: its failure undoes only its own writes", () =>
    Effect.gen(function*() {
      const { sql } = yield* fileClient()
      yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql`INSERT INTO t (id, v) VALUES (1, 'outer')`
        yield* sql.withTransaction(
          Effect.andThen(sql`INSERT INTO t (id, v) VALUES (2, 'inner')`, Effect.fail(new Boom()))
        ).pipe(Effect.flip)
        yield* sql.withTransaction(sql`INSERT INTO t (id, v) VALUES (3, 'inner ok')`)
      }))
      assert.deepStrictEqual(yield* ids(sql), [1, 3])
    }))

  it.effect("transactions of concurrent fibers do not interleave", () =>
    Effect.gen(function*() {
      const { sql } = yield* fileClient()
      // Each transaction reads the count and writes count+1; interleaving would write a duplicate id.
      const step = sql.withTransaction(Effect.gen(function*() {
        const [row] = yield* sql<{ n: number }>`SELECT count(*) AS n FROM t`
        yield* Effect.yieldNow
        yield* sql`INSERT INTO t (id, v) VALUES (${(row?.n ?? 0) + 1}, 'x')`
      }))
      yield* Effect.all(Array.from({ length: 20 }, () => step), { concurrency: "unbounded" })
      assert.deepStrictEqual(yield* ids(sql), Array.from({ length: 20 }, (_, i) => i + 1))
    }))

  it.effect("executeMany runs one prepared statement for every row, as one transaction", () =>
    Effect.gen(function*() {
      const { batch, sql } = yield* fileClient()
      yield* sql.withTransaction(Effect.void) // prepares BEGIN IMMEDIATE and COMMIT
      const before = yield* batch.statementCache
      const rows = Array.from({ length: 500 }, (_, i) => [i + 1, `v${i}`])
      const changes = yield* batch.executeMany("INSERT INTO t (id, v) VALUES (?, ?)", rows)
      assert.strictEqual(changes, 500)
      assert.strictEqual((yield* batch.statementCache).prepares - before.prepares, 1)
      assert.strictEqual((yield* ids(sql)).length, 500)
      assert.strictEqual(yield* batch.executeMany("INSERT INTO t (id, v) VALUES (?, ?)", []), 0)

      // A failing row (duplicate id) stores nothing of its batch.
      const error = yield* Effect.flip(batch.executeMany("INSERT INTO t (id, v) VALUES (?, ?)", [[1000, "a"], [1, "dup"]]))
      assert.strictEqual(error.reason._tag, "UniqueViolation")
      assert.strictEqual((yield* ids(sql)).length, 500)
    }))

  it.effect("executeMany inside withTransaction joins it and rolls back with it", () =>
    Effect.gen(function*() {
      const { batch, sql } = yield* fileClient()
      yield* sql.withTransaction(Effect.gen(function*() {
        yield* batch.executeMany("INSERT INTO t (id, v) VALUES (?, ?)", [[1, "a"], [2, "b"]])
        return yield* Effect.fail(new Boom())
      })).pipe(Effect.flip)
      assert.deepStrictEqual(yield* ids(sql), [])
      yield* sql.withTransaction(batch.executeMany("INSERT INTO t (id, v) VALUES (?, ?)", [[1, "a"], [2, "b"]]))
      assert.deepStrictEqual(yield* ids(sql), [1, 2])
    }))

  it.effect("transact runs every step in one transaction; a failing step stores nothing, and the next one commits", () =>
    Effect.gen(function*() {
      const { batch, sql } = yield* fileClient()
      const insert = "INSERT INTO t (id, v) VALUES (?, ?)"
      const changes = yield* batch.transact([
        { sql: insert, rows: [[1, "a"], [2, "b"]] },
        { sql: "DELETE FROM t WHERE id = ?", rows: [[1]] },
        { sql: insert, rows: [] }
      ])
      assert.strictEqual(changes, 3)
      assert.deepStrictEqual(yield* ids(sql), [2])

      // Step 2 fails (a duplicate id): step 1's rows are rolled back with it.
      const duplicate = yield* Effect.flip(batch.transact([{ sql: insert, rows: [[3, "c"]] }, { sql: insert, rows: [[2, "dup"]] }]))
      assert.strictEqual(duplicate.reason._tag, "UniqueViolation")
      // A row SQLite cannot bind is refused before it runs, naming the step, the row and the parameter.
      const unbindable = yield* Effect.flip(batch.transact([{ sql: insert, rows: [[3, "c"]] }, { sql: insert, rows: [[4, new Date(0)]] }]))
      assert.include(unbindable.message, "step 2, row 1: parameter 2 is a Date")
      assert.deepStrictEqual(yield* ids(sql), [2])
      yield* batch.transact([{ sql: insert, rows: [[3, "c"]] }])
      assert.deepStrictEqual(yield* ids(sql), [2, 3])
    }))

  it.effect("transact inserts rowsPerInsert rows per statement, in their order, the rest one by one; a bad row is named by its place", () =>
    Effect.gen(function*() {
      const { batch, sql } = yield* fileClient()
      const insert = "INSERT INTO t (v) VALUES (?)"
      const rows = Array.from({ length: 37 }, (_, i) => [`v${i + 1}`])
      yield* batch.transact([{ sql: "DELETE FROM t WHERE id = ?", rows: [[0]] }]) // BEGIN and COMMIT prepared
      const before = yield* batch.statementCache
      assert.strictEqual(yield* batch.transact([{ sql: insert, rows, rowsPerInsert: 16 }]), 37)
      // Two statements prepared: the 16-row insert (run twice) and the one-row insert (the last 5 rows).
      assert.strictEqual((yield* batch.statementCache).prepares - before.prepares, 2)
      const stored = yield* sql<{ readonly v: string }>`SELECT v FROM t ORDER BY id`
      assert.deepStrictEqual(stored.map((row) => row.v), rows.map(([v]) => v), "appended in the order listed")
      // Fewer rows than one statement's worth: one by one.
      assert.strictEqual(yield* batch.transact([{ sql: insert, rows: [["w1"], ["w2"]], rowsPerInsert: 16 }]), 2)
      // A row that cannot be bound is named by its place in the step, inside a chunk or after; nothing is stored.
      for (const bad of [20, 35]) {
        const withBad = rows.map((row, i) => i + 1 === bad ? [new Date(0)] : row)
        const refused = yield* Effect.flip(batch.transact([{ sql: insert, rows: withBad, rowsPerInsert: 16 }]))
        assert.include(refused.message, `row ${bad}: parameter 1 is a Date`)
      }
      assert.strictEqual((yield* sql<{ readonly n: number }>`SELECT COUNT(*) AS n FROM t`)[0]?.n, 39)
    }))

  it("multiRowInsert repeats the one-row tuple; SQL with no tuple after VALUES is left to run row by row", () => {
    assert.strictEqual(
      SqliteClient.multiRowInsert("INSERT INTO t (id, v)\n  VALUES (?, ?)", 3),
      "INSERT INTO t (id, v)\n  VALUES (?, ?), (?, ?), (?, ?)"
    )
    assert.strictEqual(SqliteClient.multiRowInsert("DELETE FROM t WHERE id = ?", 3), undefined)
    assert.strictEqual(SqliteClient.multiRowInsert("INSERT INTO t (v) VALUES (json(?))", 3), undefined)
    assert.strictEqual(SqliteClient.multiRowInsert("INSERT INTO t SELECT * FROM u WHERE v = 'VALUES'", 3), undefined)
  })

  it.effect("transact never runs inside another fiber's open transaction, and joins its own fiber's", () =>
    Effect.gen(function*() {
      const { batch, sql } = yield* fileClient()
      const insert = "INSERT INTO t (id, v) VALUES (?, ?)"
      // Another fiber's transaction yields while open; transact waits for it instead of committing its half.
      const other = sql.withTransaction(Effect.gen(function*() {
        yield* sql`INSERT INTO t (id, v) VALUES (1, 'other')`
        yield* Effect.yieldNow
        yield* Effect.yieldNow
        return yield* Effect.fail(new Boom())
      })).pipe(Effect.flip)
      yield* Effect.all([other, batch.transact([{ sql: insert, rows: [[2, "batch"]] }])], { concurrency: "unbounded" })
      assert.deepStrictEqual(yield* ids(sql), [2], "the other transaction rolled back alone")
      // Inside withTransaction it joins: rolled back with the transaction.
      yield* sql.withTransaction(Effect.andThen(
        batch.transact([{ sql: insert, rows: [[3, "joined"]] }]),
        Effect.fail(new Boom())
      )).pipe(Effect.flip)
      assert.deepStrictEqual(yield* ids(sql), [2])
    }))

  it.effect("a full disk (SQLITE_FULL) fails the write with DatabaseWriteFailed naming the file; nothing is stored", () =>
    Effect.gen(function*() {
      const { filename, sql } = yield* fileClient()
      yield* sql`INSERT INTO t (id, v) VALUES (1, 'before')`
      const [pages] = yield* sql<{ page_count: number }>`PRAGMA page_count`
      yield* sql.unsafe(`PRAGMA max_page_count = ${pages?.page_count ?? 0}`)
      const big = "x".repeat(64 * 1024)
      const error = yield* Effect.flip(
        sql.withTransaction(sql`INSERT INTO t (id, v) VALUES (2, ${big})`)
      )
      const failure = writeFailureOf(error)
      assert.instanceOf(failure, DatabaseWriteFailed)
      assert.strictEqual(failure?.reason, "disk-full")
      assert.include(error.message, filename)
      assert.include(error.message, "disk is full")
      assert.deepStrictEqual(yield* ids(sql), [1])
    }))

  it.effect("without node:sqlite, make fails with SqliteUnavailable naming the Node version", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(SqliteClient.make({ filename: ":memory:", loadSqlite: () => undefined }))
      assert.instanceOf(error, SqliteUnavailable)
      assert.include(error.message, process.version)
      assert.include(error.message, "Upgrade Node.js")
    }))
})
