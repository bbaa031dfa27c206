/**
 * `DeliveryMarks`: which workflow delivery steps were confirmed (C-WFD-11,
 * C-WFD-14). A mark is an opaque string the workflow layer builds — a
 * result's phase (`<delivery key>\u0000<phase>`), a lifecycle notice's
 * occurrence — and it is written only after the bus acknowledged the step,
 * so a replaced watcher, or a new process over the same database, skips what
 * was delivered and retries only what was not.
 *
 * One service, two layers, like `UndeliveredStore`: `layerSql` keeps marks
 * in the `delivery_marks` table (migration `0004_undelivered`), `layerMemory`
 * in a `DeliveryMarksMemoryState` its creator owns. Marks are only added.
 */
import { Clock, Context, Data, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { causeText } from "../protocol/causeText.ts"

/** Reading or writing a mark failed. */
export class DeliveryMarksFailed extends Data.TaggedError("DeliveryMarksFailed")<{ readonly detail: string }> {
  override get message(): string {
    return `The delivery marks failed: ${causeText(this.detail)}`
  }
}

/** The marks' operations. */
export interface DeliveryMarksService {
  /** Whether `mark` was recorded. */
  readonly has: (mark: string) => Effect.Effect<boolean, DeliveryMarksFailed>
  /** Records `mark` (again: no change). */
  readonly add: (mark: string) => Effect.Effect<void, DeliveryMarksFailed>
}

/** The marks of a memory layer. Its creator owns it. */
export class DeliveryMarksMemoryState {
  /** Every recorded mark. */
  readonly marks: Set<string> = new Set()
}

const failed = (what: string) => (cause: unknown) =>
  new DeliveryMarksFailed({ detail: `${what}: ${cause instanceof Error ? cause.message : String(cause)}` })

const Rows = Schema.Array(Schema.Struct({ n: Schema.Number }))

/**
 * The delivery marks service (see the module header).
 *
 * @category services
 * @since 0.1.0
 */
export class DeliveryMarks extends Context.Service<DeliveryMarks, DeliveryMarksService>()(
  "effect-intercom/store/DeliveryMarks"
) {
  /** Marks in `state`. */
  static readonly makeMemory = (state: DeliveryMarksMemoryState = new DeliveryMarksMemoryState()): DeliveryMarksService => ({
    has: (mark) => Effect.sync(() => state.marks.has(mark)),
    add: (mark) => Effect.sync(() => void state.marks.add(mark))
  })
  /** Marks in the `delivery_marks` table of the `SqlClient`'s database. */
  static readonly makeSql: Effect.Effect<DeliveryMarksService, never, SqlClient.SqlClient> = Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return {
      has: (mark) =>
        sql`SELECT count(*) AS n FROM delivery_marks WHERE mark = ${mark}`.pipe(
          Effect.mapError(failed("reading a delivery mark")),
          Effect.flatMap((rows) => Schema.decodeUnknownEffect(Rows)(rows).pipe(Effect.mapError(failed("reading a delivery mark")))),
          Effect.map((rows) => (rows[0]?.n ?? 0) > 0)
        ),
      add: (mark) =>
        Effect.flatMap(Clock.currentTimeMillis, (at) =>
          sql`INSERT OR IGNORE INTO delivery_marks (mark, marked_at) VALUES (${mark}, ${at})`.pipe(
            Effect.asVoid,
            Effect.mapError(failed("writing a delivery mark"))
          ))
    }
  })
  /** `makeMemory` as a Layer. */
  static readonly layerMemory = (state?: DeliveryMarksMemoryState): Layer.Layer<DeliveryMarks> =>
    Layer.sync(DeliveryMarks, () => DeliveryMarks.makeMemory(state))
  /** `makeSql` as a Layer. */
  static readonly layerSql: Layer.Layer<DeliveryMarks, never, SqlClient.SqlClient> = Layer.effect(DeliveryMarks, DeliveryMarks.makeSql)
}
