/**
 * Durable supervisor questions (extension `questions-v1`, C-SUP-18, C-DQ):
 * the wire shapes of a question and of the question frames.
 *
 * - A bound child asks with `question_ask`; the broker saves the question
 *   before it notifies anyone and answers `question_saved` (or
 *   `question_failed`). Asking again with the same id is how a waiter
 *   re-checks after a reconnect (C-DQ-6): the broker answers with the saved
 *   state and pushes the answer or the cancellation if there is one.
 * - The broker pushes `question_answered` / `question_cancelled` to the
 *   asking child; the child confirms an answer with `question_received`,
 *   which is what makes the question `answered` (C-DQ-9).
 * - The supervisor lists (`question_list`), reads one in full
 *   (`question_get`, the full text where pi's files had questionPath and
 *   answerPath, C-DQ-14), answers (`question_answer`) and cancels
 *   (`question_stop`). Each is answered by `question_result` or
 *   `question_failed`.
 *
 * The broker grants `questions-v1` only when it keeps questions (it has a
 * question store); a client without it keeps the ordinary ask (contracts.md
 * open question 2).
 */
import { Schema } from "effect"
import * as Limits from "./limits.ts"

const RequestId = Schema.String.check(Schema.isMaxLength(Limits.MAX_ID_LENGTH))
const QuestionId = Schema.String.check(Schema.isMaxLength(Limits.MAX_ID_LENGTH))

/** A question id or run id: `[A-Za-z0-9_-]+` (C-DQ-1). */
export const QUESTION_ID_PATTERN = /^[A-Za-z0-9_-]+$/

/** The reasons that become durable questions (C-SUP-18). */
export const QuestionReasonField = Schema.Literals(["need_decision", "interview_request"])

/** The states of a question (C-DQ-2). */
export const QuestionStateField = Schema.Literals(["awaiting_input", "answer_pending", "answered", "cancelled"])

/** A question as it travels in full (`question_get`, `question_saved`). */
export const QuestionRecordWire = Schema.Struct({
  id: Schema.String,
  state: QuestionStateField,
  reason: QuestionReasonField,
  ownerId: Schema.String,
  childId: Schema.String,
  childName: Schema.String,
  message: Schema.String,
  createdAt: Schema.Finite,
  answer: Schema.optionalKey(Schema.String),
  answeredAt: Schema.optionalKey(Schema.Finite),
  deliveredAt: Schema.optionalKey(Schema.Finite),
  cancelledAt: Schema.optionalKey(Schema.Finite)
})
/** A question in full. */
export type QuestionRecordWire = typeof QuestionRecordWire.Type

/** A question as a listing shows it: previews cut at 2,048 characters and marked (C-DQ-14). */
export const QuestionSummaryWire = Schema.Struct({
  id: Schema.String,
  state: QuestionStateField,
  reason: QuestionReasonField,
  childId: Schema.String,
  childName: Schema.String,
  createdAt: Schema.Finite,
  message: Schema.String,
  messageTruncated: Schema.Boolean,
  answer: Schema.optionalKey(Schema.String),
  answerTruncated: Schema.optionalKey(Schema.Boolean),
  answeredAt: Schema.optionalKey(Schema.Finite),
  deliveredAt: Schema.optionalKey(Schema.Finite),
  cancelledAt: Schema.optionalKey(Schema.Finite)
})
/** A question summary. */
export type QuestionSummaryWire = typeof QuestionSummaryWire.Type

/** The revival an answer claimed or found claimed (C-DQ-10, C-DQ-12). */
export const RevivalWire = Schema.Struct({
  runId: Schema.String,
  childId: Schema.String,
  childName: Schema.String,
  /** True only for the answer that claimed it: that caller launches; every other one recovers by hand. */
  claimed: Schema.Boolean,
  /** The exact call that recovers an interrupted revival (C-DQ-12). */
  recover: Schema.String
})
/** A revival. */
export type RevivalWire = typeof RevivalWire.Type

/**
 * The receipt of `question_answer` / `question_stop`: the question as saved,
 * whether this call wrote it, whether it was sent to the live child, the
 * revival when the child is gone, and whether the store is durable.
 */
export const QuestionReceiptWire = Schema.Struct({
  question: QuestionRecordWire,
  saved: Schema.Boolean,
  /** The answer or cancellation was written to the live child's connection (not yet confirmed: C-DQ-9, C-WKR-16). */
  sentToChild: Schema.Boolean,
  durable: Schema.Boolean,
  revival: Schema.optionalKey(RevivalWire)
})
/** An answer or stop receipt. */
export type QuestionReceiptWire = typeof QuestionReceiptWire.Type

/** A page of questions (C-DQ-13). */
export const QuestionPageWire = Schema.Struct({
  questions: Schema.Array(QuestionSummaryWire),
  total: Schema.Int,
  offset: Schema.Int,
  limit: Schema.Int,
  nextOffset: Schema.optionalKey(Schema.Int)
})
/** A page of questions. */
export type QuestionPageWire = typeof QuestionPageWire.Type

/** `owner`: act for this supervisor session id (a CLI or another tool of the supervisor's user; never a bound child). */
const Owner = Schema.optionalKey(Schema.String.check(Schema.isMaxLength(Limits.MAX_ID_LENGTH)))

// --- client → broker --------------------------------------------------------

/** `question_ask`: a bound child's blocking question, saved before its supervisor is notified. */
export const QuestionAskFrame = Schema.Struct({
  type: Schema.tag("question_ask"),
  requestId: RequestId,
  questionId: QuestionId,
  reason: QuestionReasonField,
  text: Schema.String
})
/** A `question_ask` frame. */
export type QuestionAskFrame = typeof QuestionAskFrame.Type

/** `question_received`: the child got the answer (C-DQ-9); no reply. */
export const QuestionReceivedFrame = Schema.Struct({ type: Schema.tag("question_received"), questionId: QuestionId })
/** A `question_received` frame. */
export type QuestionReceivedFrame = typeof QuestionReceivedFrame.Type

/** `question_answer`: the owner's answer (C-DQ-4). */
export const QuestionAnswerFrame = Schema.Struct({
  type: Schema.tag("question_answer"),
  requestId: RequestId,
  questionId: QuestionId,
  text: Schema.String,
  owner: Owner
})
/** A `question_answer` frame. */
export type QuestionAnswerFrame = typeof QuestionAnswerFrame.Type

/** `question_stop`: cancel (C-DQ-11), by the owner or by the asking child. */
export const QuestionStopFrame = Schema.Struct({
  type: Schema.tag("question_stop"),
  requestId: RequestId,
  questionId: QuestionId,
  owner: Owner
})
/** A `question_stop` frame. */
export type QuestionStopFrame = typeof QuestionStopFrame.Type

/** `question_list`: one page of the owner's questions (C-DQ-13; the broker checks offset and limit). */
export const QuestionListFrame = Schema.Struct({
  type: Schema.tag("question_list"),
  requestId: RequestId,
  offset: Schema.optionalKey(Schema.Unknown),
  limit: Schema.optionalKey(Schema.Unknown),
  owner: Owner
})
/** A `question_list` frame. */
export type QuestionListFrame = typeof QuestionListFrame.Type

/** `question_get`: one question in full, for its owner or the child that asked it. */
export const QuestionGetFrame = Schema.Struct({
  type: Schema.tag("question_get"),
  requestId: RequestId,
  questionId: QuestionId,
  owner: Owner
})
/** A `question_get` frame. */
export type QuestionGetFrame = typeof QuestionGetFrame.Type

// --- broker → client --------------------------------------------------------

/** `question_result`: what a request did; exactly one of the optional fields is set, per request. */
export const QuestionResultFrame = Schema.Struct({
  type: Schema.tag("question_result"),
  requestId: Schema.String,
  /** `question_ask`, `question_get`: the saved question. */
  question: Schema.optionalKey(QuestionRecordWire),
  /** `question_answer`, `question_stop`. */
  receipt: Schema.optionalKey(QuestionReceiptWire),
  /** `question_list`. */
  page: Schema.optionalKey(QuestionPageWire),
  /** Whether the broker's store is durable (SQLite) or memory-only. */
  durable: Schema.Boolean
})
/** A `question_result` frame. */
export type QuestionResultFrame = typeof QuestionResultFrame.Type

/** `question_failed`: why a request failed (`error` is the error's tag); nothing changed. */
export const QuestionFailedFrame = Schema.Struct({
  type: Schema.tag("question_failed"),
  requestId: Schema.String,
  error: Schema.String,
  reason: Schema.String
})
/** A `question_failed` frame. */
export type QuestionFailedFrame = typeof QuestionFailedFrame.Type

/** `question_answered`: pushed to the asking child; it confirms with `question_received`. */
export const QuestionAnsweredFrame = Schema.Struct({
  type: Schema.tag("question_answered"),
  questionId: Schema.String,
  answer: Schema.String,
  answeredAt: Schema.Finite
})
/** A `question_answered` frame. */
export type QuestionAnsweredFrame = typeof QuestionAnsweredFrame.Type

/** `question_cancelled`: pushed to the asking child; its waiter ends with `Cancelled` (C-DQ-11). */
export const QuestionCancelledFrame = Schema.Struct({
  type: Schema.tag("question_cancelled"),
  questionId: Schema.String,
  cancelledAt: Schema.Finite
})
/** A `question_cancelled` frame. */
export type QuestionCancelledFrame = typeof QuestionCancelledFrame.Type
