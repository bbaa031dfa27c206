/**
 * Per-row cost of writing to the broker's database, the three ways a store
 * can commit (see docs/store.md):
 *
 *   npx node bench/store-batch.ts [--rows N] [--reps N]
 *
 * - `sql` per row, one transaction: `sql.withTransaction(forEach(rows, sql\`INSERT …\`))`
 * - `executeMany`, one transaction: `SqliteBatch.executeMany(text, rows)`
 * - one transaction per row (autocommit), for scale
 * - ticks: 64 rows per `executeMany` commit, synchronous NORMAL vs FULL (the fsync per commit)
 *
 * Each measurement opens a fresh database file in a temp dir; the value is
 * the median over reps, in microseconds per row.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import * as Database from "../src/store/Database.ts"
import type { Migration } from "../src/store/migrations/index.ts"
import { SqliteBatch, type Synchronous } from "../src/store/SqliteClient.ts"
import { median } from "./stats.ts"

const arg = (name: string, fallback: number): number => {
  const at = process.argv.indexOf(name)
  const value = at === -1 ? undefined : Number(process.argv[at + 1])
  return value !== undefined && Number.isFinite(value) ? value : fallback
}
const ROWS = arg("--rows", 10_000)
const REPS = arg("--reps", 5)
const TICK = 64

const schema: Record<string, Migration> = {
  "0001_bench": Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`CREATE TABLE mail (id INTEGER PRIMARY KEY, sender TEXT NOT NULL, recipient TEXT NOT NULL, body TEXT NOT NULL)`)
}

const body = "x".repeat(200)
const rows = (n: number): Array<[number, string, string, string]> =>
  Array.from({ length: n }, (_, i) => [i + 1, "alice", "bob", body])

/** Microseconds per row of `work` over a fresh database. */
const measure = (
  synchronous: Synchronous,
  n: number,
  work: Effect.Effect<void, unknown, SqlClient.SqlClient | SqliteBatch>
): Promise<number> => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "intercom-store-bench-"))
  const layer = Database.layer({ file: path.join(dir, "intercom.db"), synchronous, migrations: schema })
  const timed = Effect.gen(function*() {
    const start = performance.now()
    yield* work
    return ((performance.now() - start) * 1000) / n
  })
  return Effect.runPromise(Effect.scoped(Effect.flatMap(Layer.build(layer), (context) => Effect.provide(timed, context))))
    .finally(() => fs.rmSync(dir, { recursive: true, force: true }))
}

const perRowSql = (n: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(Effect.forEach(rows(n), ([id, sender, recipient, text]) =>
      sql`INSERT INTO mail (id, sender, recipient, body) VALUES (${id}, ${sender}, ${recipient}, ${text})`, {
      discard: true
    })))

const INSERT = "INSERT INTO mail (id, sender, recipient, body) VALUES (?, ?, ?, ?)"

const batch = (n: number) =>
  Effect.gen(function*() {
    const b = yield* SqliteBatch
    yield* b.executeMany(INSERT, rows(n))
  })

const autocommit = (n: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.forEach(rows(n), ([id, sender, recipient, text]) =>
      sql`INSERT INTO mail (id, sender, recipient, body) VALUES (${id}, ${sender}, ${recipient}, ${text})`, {
      discard: true
    }))

const ticks = (n: number) =>
  Effect.gen(function*() {
    const b = yield* SqliteBatch
    const all = rows(n)
    yield* Effect.forEach(
      Array.from({ length: Math.ceil(n / TICK) }, (_, i) => all.slice(i * TICK, (i + 1) * TICK)),
      (tick) => b.executeMany(INSERT, tick),
      { discard: true }
    )
  })

type Work = (n: number) => Effect.Effect<void, unknown, SqlClient.SqlClient | SqliteBatch>

const cases: ReadonlyArray<readonly [string, Synchronous, number, Work]> = [
  ["sql per row, one transaction", "NORMAL", ROWS, perRowSql],
  ["executeMany, one transaction", "NORMAL", ROWS, batch],
  ["one transaction per row", "NORMAL", Math.min(ROWS, 2000), autocommit],
  [`executeMany, ${TICK} rows per commit, NORMAL`, "NORMAL", ROWS, ticks],
  [`executeMany, ${TICK} rows per commit, FULL`, "FULL", Math.min(ROWS, 2000), ticks]
]

console.log(`node ${process.version}, ${os.cpus().length} cpus, ${REPS} reps, median µs per row`)
for (const [name, synchronous, n, work] of cases) {
  const samples: Array<number> = []
  for (let rep = 0; rep < REPS; rep++) samples.push(await measure(synchronous, n, work(n)))
  console.log(`${name.padEnd(44)} ${median(samples).toFixed(2).padStart(8)} µs/row  (${n} rows)`)
}
