/**
 * What a new durable question becomes and whether it fits (C-SUP-18, C-BRK-3; split out of Questions.ts by helper
 * qs): its notification to the supervisor (`notificationOf`, `notificationText`), the name it saves for its child
 * (`childNameOf`), and the ask's size check (`questionTooLarge`) with its refusal (`QuestionTooLarge`, worded by
 * `QuestionSizeText`). Pure functions of the asking session and the frame: the Router's Questions module runs the
 * check before it queues the ask, and writes the notification; the question fiber saves the name. Kept apart from
 * Questions.ts, which owns the live question state, because none of this reads or writes it.
 */
import { Data } from "effect"
import { MAX_ASK_TIMEOUT_MS, MAX_FRAME_BYTES } from "../protocol/constants.ts"
import { namesOf } from "../protocol/delivery.ts"
import { STEER } from "../protocol/deliveryModes.ts"
import type { Message } from "../protocol/frames.ts"
import { frameBytes } from "../protocol/framing.ts"
import type { QuestionReason, QuestionRecord } from "../store/questionModel.ts"
import * as Encode from "./encode.ts"
import { answerTooLarge } from "./QuestionWorker.ts"
import { fitsFrame, longestTail, tailFieldNames } from "./RecipientFrames.ts"
import type { Session } from "./Registry.ts"

/**
 * The refusals of a new question too large (`QuestionTooLarge`'s reasons).
 *
 * @category errors
 * @since 0.1.0
 */
export const QuestionSizeText = {
  /**
   * `QuestionTooLarge`: the notification to the supervisor would be `bytes` long, `fieldBytes` of them for its
   * extension `fields` (as a supervisor granted them all is written them), over the frame limit.
   */
  notificationTooLarge: (bytes: number, fieldBytes: number, fields: ReadonlyArray<string>) =>
    `Question is too large to deliver: its notification to the supervisor (the text with how to answer it) would be ${bytes} bytes (${fieldBytes} of them for the ${
      namesOf(fields)
    } fields a supervisor may be given with it), over the ${MAX_FRAME_BYTES}-byte frame limit. Nothing was saved; ask a shorter question (put long material in a file and name its path)`,
  /**
   * `QuestionTooLarge`: with a one-character answer, the longest frame carrying the saved question and its answer
   * back (its receipt, a `question_get` or re-ask `question_result`) would be `bytes` long.
   */
  resultTooLarge: (bytes: number) =>
    `Question is too large to deliver: it must leave room for its answer, and with a one-character answer the saved question and the answer sent back (its answer receipt, a question_get or a re-ask's result, for a request id of any length allowed) would be ${bytes} bytes, over the ${MAX_FRAME_BYTES}-byte frame limit. Nothing was saved; ask a shorter question (put long material in a file and name its path)`
} as const

/**
 * A new question would not fit a frame (C-BRK-3): `reason` names the frame, its size and the limit
 * (`QuestionSizeText.notificationTooLarge` or `resultTooLarge`). Nothing was saved.
 *
 * @category errors
 * @since 0.1.0
 */
export class QuestionTooLarge extends Data.TaggedError("QuestionTooLarge")<{ readonly reason: string }> {
  override get message(): string {
    return this.reason
  }
}

/**
 * The room a new question must leave: one character, the widest as JSON text (a control character, escaped to six
 * bytes), so a question the broker saved takes any one-character answer (review revqa 1: "y" left one byte).
 */
const SHORTEST_ANSWER = "\u0001"

/**
 * A question's notification (C-SUP-18) but for its sender and stamps: the message from the child under the
 * question's id, and the extension fields it carries. `Questions.notify` writes it; `questionTooLarge` sizes it
 * before the question is queued, with the same fields.
 *
 * @category encoding
 * @since 0.1.0
 */
export const notificationOf = (record: Pick<QuestionRecord, "id" | "message" | "ownerId" | "createdAt">) => ({
  message: {
    id: record.id,
    timestamp: record.createdAt,
    expectsReply: true,
    content: { text: notificationText(record) }
  } satisfies Message,
  // As long as the edge: a supervisor that tracks pending asks keeps this one (C-DQ-16).
  askTimeoutMs: MAX_ASK_TIMEOUT_MS,
  channel: "supervisor" as const,
  delivery: STEER
})

/**
 * The name a question saves for its child (`QuestionRecord.childName`): its session's name, else its id.
 *
 * @category models
 * @since 0.1.0
 */
export const childNameOf = (session: Session): string => session.fields.name ?? session.id

/**
 * Why a question asked by `session` would not fit a frame if it is new, or undefined (`stamp`: the broker's stamp of
 * `now`). Its notification, from `session` (the send pipeline's check, `fitsFrame` with every extension field the notification carries, so any
 * supervisor's frame fits: `QuestionSizeText.notificationTooLarge`); then the frames the widest one-character answer
 * (`SHORTEST_ANSWER`, six bytes as JSON) makes of it, sized by `QuestionWorker.answerTooLarge` — an answer receipt
 * with a revival, a stop receipt, a `question_get` or re-ask `question_result`, each to the longest request id a
 * client may send, and the child's `question_answered` (`QuestionSizeText.resultTooLarge`) — so a question the broker
 * saved always takes a one-character answer by id; those frames are longer than the `question_result` answering
 * this ask. Sized with the stamp and times of now: a later stamp has as many digits. The one copy of the check;
 * the question fiber applies it only to an id the store does not hold (QuestionWorker.ts). Not re-checked for a
 * saved question's frames when its child comes back with longer session fields (a known limit, docs/protocol.md);
 * the ask carries the name and SessionInfo it was measured with (`QuestionWork`'s `childName`, `fromJson`), which the
 * fiber saves and the first notification carries, so a rename before the save is no such case (helper qs).
 *
 * @category validation
 * @since 0.1.0
 */
export const questionTooLarge = (
  session: Session,
  frame: { readonly requestId: string; readonly questionId: string; readonly reason: QuestionReason; readonly text: string },
  ownerId: string,
  now: number,
  stamp: number
): QuestionTooLarge | undefined => {
  const record = { id: frame.questionId, ownerId, message: frame.text, createdAt: now }
  const notification = notificationOf(record)
  const base = Encode.messageFrame(session.infoJson, notification.message, stamp, stamp)
  const tail = longestTail(notification)
  if (!fitsFrame(base, tail)) {
    const tailBytes = Buffer.byteLength(tail, "utf8")
    return new QuestionTooLarge({
      reason: QuestionSizeText.notificationTooLarge(frameBytes(base) + tailBytes, tailBytes, tailFieldNames(notification))
    })
  }
  // The frames a one-character answer becomes with the question whole (review revqanswer #1): a saved question
  // always takes a short answer by id. They include the `question_result` answering this ask (a question_get's,
  // to the longest request id, and with more fields).
  const answered = answerTooLarge({
    ...record,
    childId: session.id,
    childName: childNameOf(session),
    reason: frame.reason,
    answer: SHORTEST_ANSWER,
    answeredAt: now
  }, now)
  return answered === undefined ? undefined : new QuestionTooLarge({ reason: QuestionSizeText.resultTooLarge(answered.bytes) })
}

/**
 * What the supervisor reads (C-SUP-18): the child's question, then its id
 * and how to answer it — reply to this message, or the answer call.
 *
 * @category encoding
 * @since 0.1.0
 */
export const notificationText = (record: Pick<QuestionRecord, "id" | "message" | "ownerId">): string =>
  `${record.message}\n\n` +
  `[Durable question ${record.id}: it waits with no timeout and survives restarts. ` +
  `Reply to this message to answer it, or run \`intercom answer ${record.id} <answer> --session ${record.ownerId}\`; ` +
  `\`intercom stop ${record.id} --session ${record.ownerId}\` cancels it.]`
