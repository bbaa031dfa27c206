/**
 * Size: about 420 lines, one concept — the rules of a durable question (C-DQ) that both
 * stores apply, kept in one place so the SQLite and memory layers cannot
 * drift apart; mostly small pure functions and their error texts.
 *
 * Durable supervisor questions (C-DQ): the record, its state, the errors and
 * the pure rules both `QuestionStore` layers share (answer normalisation,
 * page checks, previews). Keeping the rules here means the memory layer and
 * the SQLite layer cannot disagree on what a transition allows.
 *
 * A question's state is derived, never stored (C-DQ-2): delivered →
 * `answered`; else cancelled → `cancelled`; else an answer → `answer_pending`;
 * else `awaiting_input`. Every timestamp column is written once.
 */
import { Data } from "effect"
import { shownValue } from "../protocol/shownValue.ts"
import { causeText } from "../protocol/causeText.ts"

/**
 * The states of a question (C-DQ-2).
 *
 * @category models
 * @since 0.1.0
 */
export type QuestionState = "awaiting_input" | "answer_pending" | "answered" | "cancelled"

/**
 * The blocking `contact_supervisor` reasons that become durable questions (C-SUP-18).
 *
 * @category models
 * @since 0.1.0
 */
export type QuestionReason = "need_decision" | "interview_request"

/** The reasons, as a list for decoding. */
export const QUESTION_REASONS: ReadonlyArray<QuestionReason> = ["need_decision", "interview_request"]

/**
 * One saved question. `ownerId` is the supervisor's session id (C-DQ-15);
 * the optional fields are the write-once markers of C-DQ-2/3/10.
 *
 * @category models
 * @since 0.1.0
 */
export interface QuestionRecord {
  readonly id: string
  /** The supervisor session id the question belongs to. */
  readonly ownerId: string
  /** The asking child's session id and name. */
  readonly childId: string
  readonly childName: string
  readonly reason: QuestionReason
  /** The full text the supervisor was shown. */
  readonly message: string
  readonly createdAt: number
  readonly answer?: string | undefined
  readonly answeredAt?: number | undefined
  readonly deliveredAt?: number | undefined
  readonly cancelledAt?: number | undefined
  /** When the revival `answer-<id>` was claimed (C-DQ-10). */
  readonly revivalClaimedAt?: number | undefined
}

/**
 * A new question, as the broker saves it before notifying anyone (C-SUP-18).
 *
 * @category models
 * @since 0.1.0
 */
export type NewQuestion = Pick<QuestionRecord, "id" | "ownerId" | "childId" | "childName" | "reason" | "message" | "createdAt">

/**
 * The state of a record, in C-DQ-2's order.
 *
 * @category models
 * @since 0.1.0
 */
export const stateOf = (record: QuestionRecord): QuestionState =>
  record.deliveredAt !== undefined
    ? "answered"
    : record.cancelledAt !== undefined
    ? "cancelled"
    : record.answer !== undefined
    ? "answer_pending"
    : "awaiting_input"

/**
 * Whether a question still waits for something: `awaiting_input` or `answer_pending` (C-DQ-13).
 *
 * @category models
 * @since 0.1.0
 */
export const isUnresolved = (record: QuestionRecord): boolean =>
  record.deliveredAt === undefined && record.cancelledAt === undefined

/**
 * The run id of a question's revival (C-DQ-10).
 *
 * @category models
 * @since 0.1.0
 */
export const revivalRunId = (questionId: string): string => `answer-${questionId}`

/** The longest preview of a question or answer in a listing (C-DQ-14). */
export const PREVIEW_CHARS = 2048

/** The default page size of a listing (C-DQ-13). */
export const DEFAULT_PAGE_LIMIT = 20

/** The largest page size of a listing (C-DQ-13). */
export const MAX_PAGE_LIMIT = 100

/**
 * A question as a listing shows it: previews cut at PREVIEW_CHARS, marked
 * when cut (C-DQ-14). The full text is read with `question_get`.
 *
 * @category models
 * @since 0.1.0
 */
export interface QuestionSummary {
  readonly id: string
  readonly state: QuestionState
  readonly reason: QuestionReason
  readonly childId: string
  readonly childName: string
  readonly createdAt: number
  readonly message: string
  readonly messageTruncated: boolean
  readonly answer?: string
  readonly answerTruncated?: boolean
  readonly answeredAt?: number
  readonly deliveredAt?: number
  readonly cancelledAt?: number
}

/**
 * One page of a listing (C-DQ-13): `nextOffset` only when more remain.
 *
 * @category models
 * @since 0.1.0
 */
export interface QuestionPage {
  readonly questions: ReadonlyArray<QuestionSummary>
  readonly total: number
  readonly offset: number
  readonly limit: number
  readonly nextOffset?: number
}

/**
 * A checked page request.
 *
 * @category models
 * @since 0.1.0
 */
export interface PageRequest {
  readonly offset: number
  readonly limit: number
}

const cut = (text: string): { readonly text: string; readonly truncated: boolean } =>
  text.length > PREVIEW_CHARS ? { text: text.slice(0, PREVIEW_CHARS), truncated: true } : { text, truncated: false }

/**
 * The listing form of a record (C-DQ-14).
 *
 * @category models
 * @since 0.1.0
 */
export const summaryOf = (record: QuestionRecord): QuestionSummary => {
  const message = cut(record.message)
  const answer = record.answer === undefined ? undefined : cut(record.answer)
  return {
    id: record.id,
    state: stateOf(record),
    reason: record.reason,
    childId: record.childId,
    childName: record.childName,
    createdAt: record.createdAt,
    message: message.text,
    messageTruncated: message.truncated,
    ...(answer === undefined ? {} : { answer: answer.text, answerTruncated: answer.truncated }),
    ...(record.answeredAt === undefined ? {} : { answeredAt: record.answeredAt }),
    ...(record.deliveredAt === undefined ? {} : { deliveredAt: record.deliveredAt }),
    ...(record.cancelledAt === undefined ? {} : { cancelledAt: record.cancelledAt })
  }
}

/**
 * The listing order (C-DQ-13): unresolved first, then createdAt, then id.
 *
 * @category models
 * @since 0.1.0
 */
export const listingOrder = (a: QuestionRecord, b: QuestionRecord): number => {
  const ua = isUnresolved(a) ? 0 : 1
  const ub = isUnresolved(b) ? 0 : 1
  if (ua !== ub) return ua - ub
  if (a.createdAt !== b.createdAt) return a.createdAt - b.createdAt
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0
}

/**
 * A page from its sorted slice and the total (C-DQ-13).
 *
 * @category models
 * @since 0.1.0
 */
export const pageOf = (slice: ReadonlyArray<QuestionRecord>, total: number, request: PageRequest): QuestionPage => {
  const next = request.offset + slice.length
  return {
    questions: slice.map(summaryOf),
    total,
    offset: request.offset,
    limit: request.limit,
    ...(next < total ? { nextOffset: next } : {})
  }
}

// --- errors -------------------------------------------------------------------

/**
 * No question with that id belongs to the caller (C-DQ-15: another
 * supervisor's question looks the same as none).
 *
 * @category errors
 * @since 0.1.0
 */
export class QuestionNotFound extends Data.TaggedError("QuestionNotFound")<{ readonly questionId: string }> {
  override get message(): string {
    return `No question "${this.questionId}" belongs to this supervisor session; list them with \`intercom questions\``
  }
}

/**
 * The answer was empty once trimmed (C-DQ-4).
 *
 * @category errors
 * @since 0.1.0
 */
export class EmptyAnswer extends Data.TaggedError("EmptyAnswer")<{ readonly questionId: string }> {
  override get message(): string {
    return `The answer to question ${this.questionId} is empty; write the answer text`
  }
}

/**
 * A different answer was saved first (C-DQ-4); the original stays.
 *
 * @category errors
 * @since 0.1.0
 */
export class AnswerConflict extends Data.TaggedError("AnswerConflict")<{
  readonly questionId: string
  readonly original: string
  readonly answeredAt: number
}> {
  override get message(): string {
    return `Question ${this.questionId} already has a different saved answer. The original answer was retained.`
  }
}

/**
 * The question was cancelled (C-DQ-5): a follow-up is a new message.
 *
 * @category errors
 * @since 0.1.0
 */
export class QuestionCancelled extends Data.TaggedError("QuestionCancelled")<{ readonly questionId: string }> {
  override get message(): string {
    return `Question ${this.questionId} was cancelled and cannot be answered; continue with a new follow-up message to the child instead`
  }
}

/**
 * `stop` of a question whose answer already reached the child.
 *
 * @category errors
 * @since 0.1.0
 */
export class QuestionAlreadyAnswered extends Data.TaggedError("QuestionAlreadyAnswered")<{ readonly questionId: string }> {
  override get message(): string {
    return `Question ${this.questionId} is already answered and its answer delivered; there is nothing to stop`
  }
}

/**
 * A question id taken by another child or supervisor.
 *
 * @category errors
 * @since 0.1.0
 */
export class QuestionIdTaken extends Data.TaggedError("QuestionIdTaken")<{ readonly questionId: string }> {
  override get message(): string {
    return `Question id ${this.questionId} is already used by another question; ask again with a new id`
  }
}

/**
 * A listing's `offset` or `limit` is out of range (C-DQ-13).
 *
 * @category errors
 * @since 0.1.0
 */
export class InvalidQuestionPage extends Data.TaggedError("InvalidQuestionPage")<{ readonly detail: string }> {
  override get message(): string {
    return `Invalid question listing: ${causeText(this.detail)}`
  }
}

/**
 * The store could not read or write (I/O, a broken database). Nothing was changed.
 *
 * @category errors
 * @since 0.1.0
 */
export class QuestionStoreFailure extends Data.TaggedError("QuestionStoreFailure")<{ readonly detail: string }> {
  override get message(): string {
    return `The question store failed: ${causeText(this.detail)}. Nothing was saved; check the broker's database and try again`
  }
}

/**
 * Why answering failed.
 *
 * @category errors
 * @since 0.1.0
 */
export type AnswerError = QuestionNotFound | EmptyAnswer | AnswerConflict | QuestionCancelled | QuestionStoreFailure

/**
 * Why stopping failed.
 *
 * @category errors
 * @since 0.1.0
 */
export type StopError = QuestionNotFound | QuestionAlreadyAnswered | QuestionStoreFailure

/**
 * Every question error, as it travels to a client.
 *
 * @category errors
 * @since 0.1.0
 */
export type QuestionError =
  | QuestionNotFound
  | EmptyAnswer
  | AnswerConflict
  | QuestionCancelled
  | QuestionAlreadyAnswered
  | QuestionIdTaken
  | InvalidQuestionPage
  | QuestionStoreFailure

/**
 * Checks a listing request (C-DQ-13): `limit` 1–100 (default 20), `offset` a
 * non-negative integer (default 0).
 *
 * @category validation
 * @since 0.1.0
 */
export const checkPage = (
  request: { readonly offset?: unknown; readonly limit?: unknown }
): PageRequest | InvalidQuestionPage => {
  const offset = request.offset ?? 0
  const limit = request.limit ?? DEFAULT_PAGE_LIMIT
  if (typeof offset !== "number" || !Number.isInteger(offset) || offset < 0) {
    return new InvalidQuestionPage({ detail: `offset must be a non-negative integer (got ${shownValue(offset)})` })
  }
  if (typeof limit !== "number" || !Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_LIMIT) {
    return new InvalidQuestionPage({ detail: `limit must be an integer from 1 to ${MAX_PAGE_LIMIT} (got ${shownValue(limit)})` })
  }
  return { offset, limit }
}

/**
 * What `answer` decided: `saved` is true for the call that wrote the
 * answer, false for an identical re-answer (which returns the original time).
 *
 * @category models
 * @since 0.1.0
 */
export interface AnswerOutcome {
  readonly record: QuestionRecord
  readonly saved: boolean
}

/**
 * The rule of `answer` on a record (C-DQ-4/5): the answer to write, or the
 * outcome without writing, or the refusal. `text` is already trimmed and non-empty.
 *
 * @category validation
 * @since 0.1.0
 */
export const answerDecision = (
  record: QuestionRecord,
  text: string
): "write" | AnswerOutcome | AnswerConflict | QuestionCancelled => {
  if (record.cancelledAt !== undefined) return new QuestionCancelled({ questionId: record.id })
  if (record.answer === undefined) return "write"
  // An identical answer is the same answer: the saved one, with its original time (C-DQ-4).
  if (record.answer === text) return { record, saved: false }
  return new AnswerConflict({ questionId: record.id, original: record.answer, answeredAt: record.answeredAt ?? 0 })
}

/**
 * The rule of `stop` on a record (C-DQ-11): cancel an unresolved question;
 * an already cancelled one stays as it is; an answered one is refused.
 *
 * @category validation
 * @since 0.1.0
 */
export const stopDecision = (record: QuestionRecord): "write" | "unchanged" | QuestionAlreadyAnswered =>
  record.deliveredAt !== undefined
    ? new QuestionAlreadyAnswered({ questionId: record.id })
    : record.cancelledAt !== undefined
    ? "unchanged"
    : "write"
