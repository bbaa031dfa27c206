/**
 * `QuestionStore`: the durable supervisor questions (C-DQ) as a service, with
 * two layers:
 *
 * - `layerSql`: rows of the `questions` table (migration 0002) over effect's
 *   `SqlClient`. Every marker column (`answer`, `delivered_at`,
 *   `cancelled_at`, `revival_claimed_at`) is written by one conditional
 *   `UPDATE … WHERE <column> IS NULL` inside a transaction, so of concurrent
 *   answers, deliveries, cancellations or revival claims exactly one wins
 *   (C-DQ-3); the others read what won.
 * - `layerMemory` / `makeMemory(state)`: the same rules over a plain Map,
 *   each operation one synchronous step; the `MemoryQuestions` state can be
 *   made outside a broker and outlive it, as a disk would.
 *
 * The broker is the only user (one fiber, Questions.ts); a question belongs
 * to its supervisor's session id (C-DQ-15) and is never removed by age
 * (C-DQ-16). The rules themselves live in `questionModel.ts`.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import { hexColumn, textOfHex } from "./nulText.ts"
import {
  type AnswerError,
  answerDecision,
  type AnswerOutcome,
  EmptyAnswer,
  isUnresolved,
  listingOrder,
  type NewQuestion,
  type PageRequest,
  pageOf,
  type QuestionPage,
  type QuestionReason,
  type QuestionRecord,
  QuestionIdTaken,
  QuestionNotFound,
  QuestionStoreFailure,
  type StopError,
  stopDecision
} from "./questionModel.ts"

/**
 * What `stop` decided: `cancelled` is true for the call that wrote the cancellation.
 *
 * @category models
 * @since 0.1.0
 */
export interface StopOutcome {
  readonly record: QuestionRecord
  readonly cancelled: boolean
}

/**
 * The operations on saved questions. `ownerId` arguments are the caller's
 * supervisor session id: a question of another owner is `QuestionNotFound`.
 *
 * @category models
 * @since 0.1.0
 */
export interface QuestionStoreService {
  /** True for the SQLite layer: receipts say "durable", else "memory-only". */
  readonly durable: boolean
  /**
   * Saves a new question (C-SUP-18), or returns the saved one with that id
   * when the same child asks again (`created: false`). An id used by another
   * child or owner is `QuestionIdTaken`.
   */
  readonly ask: (
    question: NewQuestion
  ) => Effect.Effect<{ readonly record: QuestionRecord; readonly created: boolean }, QuestionIdTaken | QuestionStoreFailure>
  /** The saved question, whoever owns it (the broker checks who may see it). */
  readonly get: (id: string) => Effect.Effect<QuestionRecord | undefined, QuestionStoreFailure>
  /** Saves an answer once (C-DQ-4/5): trimmed, non-empty, identical re-answers return the original. */
  readonly answer: (
    input: { readonly id: string; readonly ownerId: string; readonly text: string; readonly at: number }
  ) => Effect.Effect<AnswerOutcome, AnswerError>
  /** Marks the saved answer delivered to the child (C-DQ-9); true for the one call that did. */
  readonly deliver: (id: string, at: number) => Effect.Effect<boolean, QuestionStoreFailure>
  /**
   * Cancels an unresolved question (C-DQ-11). `by` is its owner, or the
   * asking child (a waiter that was aborted).
   */
  readonly stop: (
    input: { readonly id: string; readonly by: string; readonly at: number }
  ) => Effect.Effect<StopOutcome, StopError>
  /** Claims the revival `answer-<id>` once (C-DQ-10); true for the one call that did. */
  readonly claimRevival: (id: string, at: number) => Effect.Effect<boolean, QuestionStoreFailure>
  /** One page of the owner's questions (C-DQ-13; the request is already checked). */
  readonly list: (ownerId: string, page: PageRequest) => Effect.Effect<QuestionPage, QuestionStoreFailure>
  /** The owner's unresolved questions, oldest first: re-notified when the supervisor comes back (C-DQ-6). */
  readonly unresolvedOf: (ownerId: string) => Effect.Effect<ReadonlyArray<QuestionRecord>, QuestionStoreFailure>
  /** The unresolved questions a child asked: for a needs-attention notice (C-DQ-17). */
  readonly unresolvedFrom: (childId: string) => Effect.Effect<ReadonlyArray<QuestionRecord>, QuestionStoreFailure>
}

/**
 * The question store service.
 *
 * @category services
 * @since 0.1.0
 */
export class QuestionStore extends Context.Service<QuestionStore, QuestionStoreService>()(
  "effect-intercom/store/QuestionStore"
) {}

const sameAsker = (saved: QuestionRecord, question: NewQuestion): boolean =>
  saved.ownerId === question.ownerId && saved.childId === question.childId

// --- memory -------------------------------------------------------------------

/**
 * The memory layer's state: made once, it may outlive a broker (a simulated crash keeps it).
 *
 * @category models
 * @since 0.1.0
 */
export interface MemoryQuestions {
  readonly records: Map<string, QuestionRecord>
}

/**
 * A fresh, empty memory state.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeMemoryState = (): MemoryQuestions => ({ records: new Map() })

/**
 * The store over a memory state: each operation reads and writes in one
 * synchronous step, which is what makes it write-once under concurrency.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeMemory = (state: MemoryQuestions): QuestionStoreService => {
  const { records } = state
  const owned = (id: string, ownerId: string) => {
    const record = records.get(id)
    return record === undefined || record.ownerId !== ownerId ? undefined : record
  }
  return {
    durable: false,
    ask: (question) =>
      Effect.suspend((): Effect.Effect<{ readonly record: QuestionRecord; readonly created: boolean }, QuestionIdTaken> => {
        const saved = records.get(question.id)
        if (saved === undefined) {
          records.set(question.id, question)
          return Effect.succeed({ record: question, created: true })
        }
        return sameAsker(saved, question)
          ? Effect.succeed({ record: saved, created: false })
          : Effect.fail(new QuestionIdTaken({ questionId: question.id }))
      }),
    get: (id) => Effect.sync(() => records.get(id)),
    answer: ({ at, id, ownerId, text }) =>
      Effect.suspend((): Effect.Effect<AnswerOutcome, AnswerError> => {
        const record = owned(id, ownerId)
        if (record === undefined) return Effect.fail(new QuestionNotFound({ questionId: id }))
        const answer = text.trim()
        if (answer === "") return Effect.fail(new EmptyAnswer({ questionId: id }))
        const decision = answerDecision(record, answer)
        if (decision !== "write") return "_tag" in decision ? Effect.fail(decision) : Effect.succeed(decision)
        const next = { ...record, answer, answeredAt: at }
        records.set(id, next)
        return Effect.succeed({ record: next, saved: true })
      }),
    deliver: (id, at) =>
      Effect.sync(() => {
        const record = records.get(id)
        if (record === undefined || record.answer === undefined) return false
        if (record.deliveredAt !== undefined || record.cancelledAt !== undefined) return false
        records.set(id, { ...record, deliveredAt: at })
        return true
      }),
    stop: ({ at, by, id }) =>
      Effect.suspend((): Effect.Effect<StopOutcome, StopError> => {
        const record = records.get(id)
        if (record === undefined || (record.ownerId !== by && record.childId !== by)) {
          return Effect.fail(new QuestionNotFound({ questionId: id }))
        }
        const decision = stopDecision(record)
        if (typeof decision !== "string") return Effect.fail(decision)
        if (decision === "unchanged") return Effect.succeed({ record, cancelled: false })
        const next = { ...record, cancelledAt: at }
        records.set(id, next)
        return Effect.succeed({ record: next, cancelled: true })
      }),
    claimRevival: (id, at) =>
      Effect.sync(() => {
        const record = records.get(id)
        if (record === undefined || record.revivalClaimedAt !== undefined) return false
        records.set(id, { ...record, revivalClaimedAt: at })
        return true
      }),
    list: (ownerId, page) =>
      Effect.sync(() => {
        const mine = [...records.values()].filter((record) => record.ownerId === ownerId).sort(listingOrder)
        return pageOf(mine.slice(page.offset, page.offset + page.limit), mine.length, page)
      }),
    unresolvedOf: (ownerId) =>
      Effect.sync(() =>
        [...records.values()].filter((record) => record.ownerId === ownerId && isUnresolved(record)).sort(listingOrder)
      ),
    unresolvedFrom: (childId) =>
      Effect.sync(() =>
        [...records.values()].filter((record) => record.childId === childId && isUnresolved(record)).sort(listingOrder)
      )
  }
}

/**
 * A memory store with a fresh state.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerMemory: Layer.Layer<QuestionStore> = Layer.sync(QuestionStore, () => makeMemory(makeMemoryState()))

/**
 * A memory store over a given state (the simulation keeps it across a broker crash).
 *
 * @category layers
 * @since 0.1.0
 */
export const layerMemoryWith = (state: MemoryQuestions): Layer.Layer<QuestionStore> =>
  Layer.succeed(QuestionStore, makeMemory(state))

// --- SQLite -------------------------------------------------------------------

/** A `questions` row as SQLite returns it, selected with {@link COLUMNS}: its TEXT columns are hex. */
interface Row {
  readonly id: string
  readonly owner_id: string
  readonly child_id: string
  readonly child_name: string
  readonly reason: string
  readonly message: string
  readonly created_at: number
  readonly answer: string | null
  readonly answered_at: number | null
  readonly delivered_at: number | null
  readonly cancelled_at: number | null
  readonly revival_claimed_at: number | null
}

const reasonOf = (reason: string): QuestionReason => reason === "interview_request" ? "interview_request" : "need_decision"

/**
 * A row's columns, its TEXT ones as hex: the message, the answer, the child's
 * name and the ids are free text that may hold NULs, which Node 22's
 * `node:sqlite` would cut the text at (nulText.ts).
 */
const COLUMNS = [
  "hex(id) AS id",
  "hex(owner_id) AS owner_id",
  "hex(child_id) AS child_id",
  "hex(child_name) AS child_name",
  "hex(reason) AS reason",
  "hex(message) AS message",
  "created_at",
  hexColumn("answer"),
  "answered_at",
  "delivered_at",
  "cancelled_at",
  "revival_claimed_at"
].join(", ")

/** The record of a row selected with {@link COLUMNS} (its TEXT columns in hex). */
const recordOf = (row: Row): QuestionRecord => ({
  id: textOfHex(row.id),
  ownerId: textOfHex(row.owner_id),
  childId: textOfHex(row.child_id),
  childName: textOfHex(row.child_name),
  reason: reasonOf(textOfHex(row.reason)),
  message: textOfHex(row.message),
  createdAt: Number(row.created_at),
  answer: row.answer === null ? undefined : textOfHex(row.answer),
  answeredAt: row.answered_at === null ? undefined : Number(row.answered_at),
  deliveredAt: row.delivered_at === null ? undefined : Number(row.delivered_at),
  cancelledAt: row.cancelled_at === null ? undefined : Number(row.cancelled_at),
  revivalClaimedAt: row.revival_claimed_at === null ? undefined : Number(row.revival_claimed_at)
})

const failure = (error: SqlError) => new QuestionStoreFailure({ detail: error.message })

/** Unresolved first, then createdAt, then id (C-DQ-13), as SQL. */
const ORDER = "CASE WHEN delivered_at IS NULL AND cancelled_at IS NULL THEN 0 ELSE 1 END, created_at, id"

/**
 * The store over the broker's `SqlClient` (the `questions` table of migration 0002).
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeSql: Effect.Effect<QuestionStoreService, never, SqlClient> = Effect.gen(function*() {
  const sql = yield* SqlClient
  const read = (id: string) =>
    Effect.map(sql<Row>`SELECT ${sql.literal(COLUMNS)} FROM questions WHERE id = ${id}`, (rows) => rows[0] === undefined ? undefined : recordOf(rows[0]))
  /** One write-once marker: true when this statement wrote it. */
  const mark = (statement: Effect.Effect<ReadonlyArray<unknown>, SqlError>) =>
    Effect.map(statement, (rows) => rows.length > 0)
  const tx = <A, E>(effect: Effect.Effect<A, E | SqlError>): Effect.Effect<A, E | QuestionStoreFailure> =>
    sql.withTransaction(effect).pipe(
      Effect.mapError((error): E | QuestionStoreFailure => isSqlError(error) ? failure(error) : error)
    )

  const service: QuestionStoreService = {
    durable: true,
    ask: (question) =>
      tx(Effect.gen(function*() {
        const inserted = yield* mark(sql`INSERT INTO questions
          (id, owner_id, child_id, child_name, reason, message, created_at)
          VALUES (${question.id}, ${question.ownerId}, ${question.childId}, ${question.childName},
                  ${question.reason}, ${question.message}, ${question.createdAt})
          ON CONFLICT (id) DO NOTHING RETURNING id`)
        if (inserted) return { record: question, created: true }
        const saved = yield* read(question.id)
        if (saved === undefined || !sameAsker(saved, question)) {
          return yield* Effect.fail(new QuestionIdTaken({ questionId: question.id }))
        }
        return { record: saved, created: false }
      })),
    get: (id) => read(id).pipe(Effect.mapError(failure)),
    answer: ({ at, id, ownerId, text }) =>
      tx(Effect.gen(function*() {
        const record = yield* read(id)
        if (record === undefined || record.ownerId !== ownerId) return yield* Effect.fail(new QuestionNotFound({ questionId: id }))
        const answer = text.trim()
        if (answer === "") return yield* Effect.fail(new EmptyAnswer({ questionId: id }))
        const decision = answerDecision(record, answer)
        if (decision !== "write") return "_tag" in decision ? yield* Effect.fail(decision) : decision
        const won = yield* mark(sql`UPDATE questions SET answer = ${answer}, answered_at = ${at}
          WHERE id = ${id} AND answer IS NULL AND cancelled_at IS NULL RETURNING id`)
        const now = yield* read(id)
        if (won && now !== undefined) return { record: now, saved: true }
        // Lost a race the read above could not see (another connection): decide on what won.
        const after = now === undefined ? undefined : answerDecision(now, answer)
        if (after === undefined || after === "write") return yield* Effect.fail(new QuestionNotFound({ questionId: id }))
        return "_tag" in after ? yield* Effect.fail(after) : after
      })),
    deliver: (id, at) =>
      tx<boolean, never>(mark(sql`UPDATE questions SET delivered_at = ${at}
        WHERE id = ${id} AND answer IS NOT NULL AND delivered_at IS NULL AND cancelled_at IS NULL RETURNING id`)),
    stop: ({ at, by, id }) =>
      tx(Effect.gen(function*() {
        const record = yield* read(id)
        if (record === undefined || (record.ownerId !== by && record.childId !== by)) {
          return yield* Effect.fail(new QuestionNotFound({ questionId: id }))
        }
        const decision = stopDecision(record)
        if (typeof decision !== "string") return yield* Effect.fail(decision)
        if (decision === "unchanged") return { record, cancelled: false }
        const won = yield* mark(sql`UPDATE questions SET cancelled_at = ${at}
          WHERE id = ${id} AND cancelled_at IS NULL AND delivered_at IS NULL RETURNING id`)
        const now = (yield* read(id)) ?? record
        return { record: now, cancelled: won }
      })),
    claimRevival: (id, at) =>
      tx<boolean, never>(mark(sql`UPDATE questions SET revival_claimed_at = ${at}
        WHERE id = ${id} AND revival_claimed_at IS NULL RETURNING id`)),
    list: (ownerId, page) =>
      Effect.gen(function*() {
        const counted = yield* sql<{ readonly total: number }>`SELECT count(*) AS total FROM questions WHERE owner_id = ${ownerId}`
        const rows = yield* sql<Row>`SELECT ${sql.literal(COLUMNS)} FROM questions WHERE owner_id = ${ownerId}
          ORDER BY ${sql.literal(ORDER)} LIMIT ${page.limit} OFFSET ${page.offset}`
        return pageOf(rows.map(recordOf), Number(counted[0]?.total ?? 0), page)
      }).pipe(Effect.mapError(failure)),
    unresolvedOf: (ownerId) =>
      sql<Row>`SELECT ${sql.literal(COLUMNS)} FROM questions WHERE owner_id = ${ownerId}
        AND delivered_at IS NULL AND cancelled_at IS NULL ORDER BY created_at, id`.pipe(
        Effect.map((rows) => rows.map(recordOf)),
        Effect.mapError(failure)
      ),
    unresolvedFrom: (childId) =>
      sql<Row>`SELECT ${sql.literal(COLUMNS)} FROM questions WHERE child_id = ${childId}
        AND delivered_at IS NULL AND cancelled_at IS NULL ORDER BY created_at, id`.pipe(
        Effect.map((rows) => rows.map(recordOf)),
        Effect.mapError(failure)
      )
  }
  return service
})

/**
 * The SQLite store, over the broker's `SqlClient` (migrations already run).
 *
 * @category layers
 * @since 0.1.0
 */
export const layerSql: Layer.Layer<QuestionStore, never, SqlClient> = Layer.effect(QuestionStore, makeSql)
