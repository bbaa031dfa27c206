/**
 * `UndeliveredStore`: the undelivered area of the workflow layer (C-WFD-12).
 * A result (or notice) whose delivery gave up after its capped retries is
 * kept here with where it was going, why it failed and how often it was
 * tried, and the caller logs the entry's `location`. It owns those entries:
 * it only adds and reads, never updates or deletes, so nothing kept here is
 * lost by age and nothing here is retried on its own.
 *
 * One service, two layers, like `ResultArchive`: `layerSql` keeps entries in
 * a database through effect's `SqlClient` (migration `0004_undelivered`; give
 * it the database file so the location names it), `layerMemory` in an
 * `UndeliveredMemoryState` its creator owns (a simulation keeps it across a
 * simulated crash, as a disk would).
 */
import { Clock, Context, Data, Effect, Layer, Random, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { decodeHexColumns } from "./nulText.ts"
import { causeText } from "../protocol/causeText.ts"

/** What a delivery that gave up hands over. */
export interface UndeliveredInput {
  /** The workflow run the payload belongs to. */
  readonly run: string
  /** Where it was going (a session id or name). */
  readonly target: string
  /** What it is: a run's `result`, or a `notice`. */
  readonly kind: "result" | "notice"
  /** The payload as it would have been sent. */
  readonly body: string
  /** The last failure, as the delivery port said it. */
  readonly reason: string
  /** How many attempts were made. */
  readonly attempts: number
}

/** A kept entry. */
export interface UndeliveredEntry extends UndeliveredInput {
  /** `undelivered-<UUID>`. */
  readonly id: string
  /** When it was kept (Clock time, ms). */
  readonly keptAt: number
  /** Where a person finds it: the database file and row, or the memory area. */
  readonly location: string
}

/** The store could not keep or read an entry. */
export class UndeliveredStoreFailed extends Data.TaggedError("UndeliveredStoreFailed")<{ readonly detail: string }> {
  override get message(): string {
    return `The undelivered area failed: ${causeText(this.detail)}`
  }
}

/** The undelivered area's operations. */
export interface UndeliveredStoreService {
  /** True for the SQLite layer (kept across restarts). */
  readonly durable: boolean
  /** Keeps `input`; returns the entry with its id and location. */
  readonly keep: (input: UndeliveredInput) => Effect.Effect<UndeliveredEntry, UndeliveredStoreFailed>
  /** Every kept entry, oldest first; only those of `run` when given. */
  readonly list: (run?: string) => Effect.Effect<ReadonlyArray<UndeliveredEntry>, UndeliveredStoreFailed>
}

/** The entries of a memory area, oldest first. Its creator owns it. */
export class UndeliveredMemoryState {
  /** Entries in the order they were kept. */
  readonly entries: Array<UndeliveredEntry> = []
}

const hex = (byte: number) => byte.toString(16).padStart(2, "0")

/** A fresh `undelivered-<UUID>` from the Random service (seeded tests get the same ones). */
export const newUndeliveredId: Effect.Effect<string> = Effect.gen(function*() {
  const bytes: Array<number> = []
  for (let i = 0; i < 16; i++) bytes.push(yield* Random.nextIntBetween(0, 255))
  bytes[6] = (bytes[6]! & 0x0f) | 0x40
  bytes[8] = (bytes[8]! & 0x3f) | 0x80
  const h = bytes.map(hex).join("")
  return `undelivered-${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
})

const stamp = (input: UndeliveredInput, location: (id: string) => string) =>
  Effect.gen(function*() {
    const id = yield* newUndeliveredId
    const keptAt = yield* Clock.currentTimeMillis
    return { ...input, id, keptAt, location: location(id) } satisfies UndeliveredEntry
  })

const memoryLocation = (id: string) => `the memory-only undelivered area (lost when this process ends), entry ${id}`

const sqlLocation = (file: string) => (id: string) => `${file}, table undelivered, id ${id}`

const Row = Schema.Struct({
  id: Schema.String,
  run: Schema.String,
  target: Schema.String,
  kind: Schema.Literals(["result", "notice"]),
  body: Schema.String,
  reason: Schema.String,
  attempts: Schema.Number,
  kept_at: Schema.Number
})
const Rows = Schema.Array(Row)

/**
 * The TEXT columns, selected as hex: the payload, the failure and the names
 * are free text that may hold NULs, which Node 22's `node:sqlite` would cut
 * the text at (nulText.ts).
 */
const TEXT_COLUMNS = ["id", "run", "target", "kind", "body", "reason"]
const SELECT_COLUMNS = [...TEXT_COLUMNS.map((column) => `hex(${column}) AS ${column}`), "attempts", "kept_at"].join(", ")

const failed = (what: string) => (cause: unknown) =>
  new UndeliveredStoreFailed({ detail: `${what}: ${cause instanceof Error ? cause.message : String(cause)}` })

/**
 * The undelivered area service (see the module header).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { UndeliveredStore } from "effect-intercom/workflow"
 *
 * const program = Effect.gen(function*() {
 *   const area = yield* UndeliveredStore
 *   const entry = yield* area.keep({ run: "run-3", target: "planner", kind: "result", body: "done", reason: "Session not found", attempts: 6 })
 *   yield* Effect.logWarning(`kept at ${entry.location}`)
 * }).pipe(Effect.provide(UndeliveredStore.layerMemory()))
 * ```
 *
 * @category services
 * @since 0.1.0
 */
export class UndeliveredStore extends Context.Service<UndeliveredStore, UndeliveredStoreService>()(
  "effect-intercom/store/UndeliveredStore"
) {
  /** A memory-only area over `state`. */
  static readonly makeMemory = (state: UndeliveredMemoryState = new UndeliveredMemoryState()): UndeliveredStoreService => ({
    durable: false,
    keep: (input) => Effect.tap(stamp(input, memoryLocation), (entry) => Effect.sync(() => state.entries.push(entry))),
    list: (run) => Effect.sync(() => state.entries.filter((entry) => run === undefined || entry.run === run))
  })
  /**
   * A durable area in the database of the `SqlClient` (migration
   * `0004_undelivered` applied); `file` names the database in locations.
   */
  static readonly makeSql = (file: string): Effect.Effect<UndeliveredStoreService, never, SqlClient.SqlClient> =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const location = sqlLocation(file)
      const toEntry = (row: typeof Row.Type): UndeliveredEntry => ({
        id: row.id,
        run: row.run,
        target: row.target,
        kind: row.kind,
        body: row.body,
        reason: row.reason,
        attempts: row.attempts,
        keptAt: row.kept_at,
        location: location(row.id)
      })
      return {
        durable: true,
        keep: (input) =>
          Effect.gen(function*() {
            const entry = yield* stamp(input, location)
            yield* sql`INSERT INTO undelivered (id, run, target, kind, body, reason, attempts, kept_at)
              VALUES (${entry.id}, ${entry.run}, ${entry.target}, ${entry.kind}, ${entry.body}, ${entry.reason},
              ${entry.attempts}, ${entry.keptAt})`.pipe(Effect.mapError(failed("keeping an undelivered payload")))
            return entry
          }),
        list: (run) =>
          (run === undefined
            ? sql`SELECT ${sql.literal(SELECT_COLUMNS)} FROM undelivered ORDER BY seq`
            : sql`SELECT ${sql.literal(SELECT_COLUMNS)} FROM undelivered WHERE run = ${run} ORDER BY seq`)
            .pipe(
              Effect.mapError(failed("listing the undelivered area")),
              Effect.map((rows) => rows.map((row) => decodeHexColumns(row, TEXT_COLUMNS))),
              Effect.flatMap((rows) =>
                Schema.decodeUnknownEffect(Rows)(rows).pipe(Effect.mapError(failed("the undelivered area holds an unexpected row")))
              ),
              Effect.map((rows) => rows.map(toEntry))
            )
      }
    })
  /** `makeMemory` as a Layer. */
  static readonly layerMemory = (state?: UndeliveredMemoryState): Layer.Layer<UndeliveredStore> =>
    Layer.sync(UndeliveredStore, () => UndeliveredStore.makeMemory(state))
  /** `makeSql` as a Layer. */
  static readonly layerSql = (file: string): Layer.Layer<UndeliveredStore, never, SqlClient.SqlClient> =>
    Layer.effect(UndeliveredStore, UndeliveredStore.makeSql(file))
}
