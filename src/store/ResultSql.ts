/**
 * The result archive's SQLite layer: reports in the `results` table
 * (migration `0003_results`) through effect's `SqlClient`. A body is kept as
 * a BLOB of UTF-16LE code units, so every string comes back exactly (lone
 * surrogates included) and a page reads only its own bytes (`substr` on a
 * BLOB counts bytes: unit `i` is bytes `2i`, `2i + 1`). A store and its
 * retention pruning are one transaction.
 */
import { Effect, Schema } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import type { ResultSummary } from "../protocol/results.ts"
import { decodeHexColumns, hexColumn } from "./nulText.ts"
import { ResultArchiveFailed, type ResultBackend } from "./resultModel.ts"

const Row = Schema.Struct({
  ref: Schema.String,
  from_id: Schema.String,
  from_name: Schema.NullOr(Schema.String),
  group_name: Schema.String,
  title: Schema.NullOr(Schema.String),
  run: Schema.NullOr(Schema.String),
  child: Schema.NullOr(Schema.String),
  created_at: Schema.Number,
  total: Schema.Number,
  original_length: Schema.Number
})
const Rows = Schema.Array(Row)
// SQLite's substr of an empty BLOB is NULL: an empty window.
const WindowRows = Schema.Array(Schema.Struct({ ...Row.fields, window: Schema.NullOr(Schema.Uint8Array) }))
const CountRows = Schema.Array(Schema.Struct({ n: Schema.Number }))

const failed = (what: string) => (cause: unknown) =>
  new ResultArchiveFailed({ detail: `${what}: ${cause instanceof Error ? cause.message : String(cause)}` })

const decode = <S extends Schema.Decoder<unknown>>(schema: S, what: string) => (rows: unknown) =>
  Schema.decodeUnknownEffect(schema)(rows).pipe(Effect.mapError(failed(`${what} read an unexpected row`)))

const summaryOf = (row: typeof Row.Type): ResultSummary => ({
  ref: row.ref,
  from: row.from_name === null ? { id: row.from_id } : { id: row.from_id, name: row.from_name },
  group: row.group_name,
  ...(row.title === null ? {} : { title: row.title }),
  ...(row.run === null ? {} : { run: row.run }),
  ...(row.child === null ? {} : { child: row.child }),
  createdAt: row.created_at,
  total: row.total,
  originalLength: row.original_length,
  truncated: row.original_length > row.total
})

const toUnits = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, "utf16le"))
const fromUnits = (bytes: Uint8Array): string => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf16le")

/**
 * The summary's TEXT columns, selected as hex: a title, a name or a run is
 * free text that may hold NULs, which Node 22's `node:sqlite` would cut the
 * text at (nulText.ts).
 */
const TEXT_COLUMNS = ["ref", "from_id", "from_name", "group_name", "title", "run", "child"]
const COLUMNS = [...TEXT_COLUMNS.map(hexColumn), "created_at", "total", "original_length"].join(", ")
const unhex = (rows: ReadonlyArray<Readonly<Record<string, unknown>>>) =>
  rows.map((row) => decodeHexColumns(row, TEXT_COLUMNS))

/** A `ResultBackend` over `sql` (the broker's one database connection). */
export const makeSqlBackend = (sql: SqlClient): ResultBackend => ({
  durable: true,
  insert: (report, keep, notBefore) => {
    const s = report.summary
    return sql.withTransaction(Effect.gen(function*() {
      yield* sql`INSERT INTO results (ref, space, supervisor, from_id, from_name, group_name, title, run, child,
        created_at, total, original_length, body)
        VALUES (${s.ref}, ${report.space}, ${report.supervisor ?? null}, ${s.from.id}, ${s.from.name ?? null},
        ${s.group}, ${s.title ?? null}, ${s.run ?? null}, ${s.child ?? null}, ${s.createdAt}, ${s.total},
        ${s.originalLength}, ${toUnits(report.body)})`
      yield* sql`DELETE FROM results WHERE created_at < ${notBefore}`
      yield* sql`DELETE FROM results WHERE seq <= (SELECT seq FROM results ORDER BY seq DESC LIMIT 1 OFFSET ${keep})`
    })).pipe(Effect.mapError(failed("storing a result")))
  },
  list: (viewer, notBefore, offset, limit) =>
    Effect.gen(function*() {
      const where = sql`(space = ${viewer.space} OR supervisor = ${viewer.self}) AND created_at >= ${notBefore}`
      const rows = yield* sql`SELECT ${sql.literal(COLUMNS)} FROM results WHERE ${where}
        ORDER BY seq DESC LIMIT ${limit} OFFSET ${offset}`.pipe(
        Effect.mapError(failed("listing results")),
        Effect.map(unhex),
        Effect.flatMap(decode(Rows, "listing results"))
      )
      const count = yield* sql`SELECT count(*) AS n FROM results WHERE ${where}`.pipe(
        Effect.mapError(failed("counting results")),
        Effect.flatMap(decode(CountRows, "counting results"))
      )
      return { results: rows.map(summaryOf), total: count[0]?.n ?? 0 }
    }),
  window: (viewer, ref, notBefore, offset, units) =>
    sql`SELECT ${sql.literal(COLUMNS)}, substr(body, ${offset * 2 + 1}, ${units * 2}) AS window FROM results
      WHERE ref = ${ref} AND (space = ${viewer.space} OR supervisor = ${viewer.self}) AND created_at >= ${notBefore}`.pipe(
      Effect.mapError(failed("reading a result")),
      Effect.map(unhex),
      Effect.flatMap(decode(WindowRows, "reading a result")),
      Effect.map((rows) => {
        const row = rows[0]
        return row === undefined ? undefined : { summary: summaryOf(row), window: row.window === null ? "" : fromUnits(row.window) }
      })
    )
})
