/**
 * Size: about 475 lines, past the ~400 guideline: one concept, the question fiber; its answer sizing
 * (`hollowFrames`, `answerTooLarge`, `answerRoom`/`answerOverRoom` the send stage uses, and the refusals' `roomLeft`/`shorterAnswer`) is the part to move out next.
 *
 * The broker's question fiber: the one owner of durable question state
 * changes (C-DQ-3). It takes `QuestionWork` from the Router's Questions
 * module one item at a time, reads and writes the QuestionStore, and then,
 * in one synchronous step, touches routing state and writes frames through
 * `Questions` (never the other way round: the Router never runs SQL).
 *
 * Order is what the contracts need: a question is saved before its
 * supervisor is notified (C-SUP-18); an answer is saved before it is pushed
 * to the child, and the question becomes `answered` only when the child
 * confirms (C-DQ-9); if the child has exited, the answer claims the revival
 * once (C-DQ-10) and the receipt carries the exact call to recover it (C-DQ-12).
 *
 * An answer by id is size-checked here, where the saved question's text is known,
 * before it is saved (C-BRK-3, helper qanswer): every frame that carries it
 * — its receipt, the child's `question_answered`, and a later `question_get`,
 * re-ask `question_result` or stop receipt with the question and the answer
 * whole — must fit 1 MiB with the longest request id a client may send, else
 * the answerer is refused `AnswerTooLarge` and nothing is saved. Before, such
 * an answer was saved and the writer's guard dropped those frames. A new
 * question is sized by the same check with a one-character answer, and a
 * refusal that leaves the question waiting opens its edge again (helper fixqa). A live reply is
 * sized by the send stage against `answerRoom`, the room the same frames leave (helper qsize).
 */
import { Data, Effect, Queue } from "effect"
import { MAX_FRAME_BYTES } from "../protocol/constants.ts"
import { frameBytes } from "../protocol/framing.ts"
import { MAX_ID_LENGTH } from "../protocol/limits.ts"
import type { QuestionRecordWire, QuestionReceiptWire, RevivalWire } from "../protocol/questions.ts"
import { answerDecision, isUnresolved, type QuestionRecord, revivalRunId, stateOf } from "../store/questionModel.ts"
import type { QuestionStoreService } from "../store/QuestionStore.ts"
import { fitPage } from "./QuestionPages.ts"
import type { Questions, QuestionWork } from "./Questions.ts"
import type { Session } from "./Registry.ts"

/**
 * A question as it travels in full.
 *
 * @category encoding
 * @since 0.1.0
 */
export const recordWire = (record: QuestionRecord): QuestionRecordWire => ({
  id: record.id,
  state: stateOf(record),
  reason: record.reason,
  ownerId: record.ownerId,
  childId: record.childId,
  childName: record.childName,
  message: record.message,
  createdAt: record.createdAt,
  ...(record.answer === undefined ? {} : { answer: record.answer }),
  ...(record.answeredAt === undefined ? {} : { answeredAt: record.answeredAt }),
  ...(record.deliveredAt === undefined ? {} : { deliveredAt: record.deliveredAt }),
  ...(record.cancelledAt === undefined ? {} : { cancelledAt: record.cancelledAt })
})

/**
 * A `question_result` answering request `requestId` with `fields` (a
 * question, a receipt or a page). Questions.ts sizes an ask's answer with it
 * before the question is queued.
 *
 * @category encoding
 * @since 0.1.0
 */
export const questionResultFrame = (requestId: string, fields: object, durable: boolean): string =>
  JSON.stringify({ type: "question_result", requestId, ...fields, durable })

/**
 * The exact call that recovers a revival that was claimed but may not have
 * launched (C-DQ-12): the `QuestionReviver` port's `revive` with the saved
 * question's ids.
 *
 * @category encoding
 * @since 0.1.0
 */
export const recoverCall = (record: Pick<QuestionRecord, "id" | "childId" | "childName">): string =>
  `revive(${JSON.stringify({ runId: revivalRunId(record.id), questionId: record.id, childId: record.childId, childName: record.childName })})`

const answeredFrame = (record: QuestionRecord): string =>
  JSON.stringify({ type: "question_answered", questionId: record.id, answer: record.answer, answeredAt: record.answeredAt })

/** The revival an answer's receipt carries when the child has exited (C-DQ-10, C-DQ-12). */
const revivalOf = (record: QuestionRecord, claimed: boolean): RevivalWire => ({
  runId: revivalRunId(record.id),
  childId: record.childId,
  childName: record.childName,
  claimed,
  recover: recoverCall(record)
})

/**
 * An answer would make a frame over the 1 MiB limit (C-BRK-3): `bytes` is
 * the longest frame it would be written in, `room` how many bytes (as JSON
 * text) the question leaves any answer. Nothing was saved, unless `same`:
 * the identical answer was saved before (from a reply to the notification,
 * which a broker before helper qsize did not size) and nothing changed.
 *
 * @category errors
 * @since 0.1.0
 */
export class AnswerTooLarge extends Data.TaggedError("AnswerTooLarge")<{
  readonly questionId: string
  readonly bytes: number
  readonly room: number
  readonly same: boolean
}> {
  override get message(): string {
    const what = `with question ${this.questionId} it would make a frame of ${this.bytes} bytes (the question and the answer whole, as its receipt or a later question_get carries them), over the ${MAX_FRAME_BYTES}-byte frame limit; ${
      roomLeft(this.questionId, this.room)
    }`
    return this.same
      ? `Answer is too large to deliver: ${what}. This same answer was already saved (from a reply to the notification); nothing changed`
      : `Answer is too large to deliver: ${what}. Nothing was saved; ${shorterAnswer(this.questionId, this.room, "answer")}`
  }
}

/**
 * What a refusal of an answer too large (`AnswerTooLarge`, Questions' live reply refusal) says of the room question
 * `questionId` leaves any answer: at most `room` bytes as JSON text, or none — a question saved by a broker before
 * the ask's size check may leave none.
 *
 * @category errors
 * @since 0.1.0
 */
export const roomLeft = (questionId: string, room: number): string =>
  room > 0
    ? `question ${questionId} leaves room for an answer of at most ${room} bytes as JSON text`
    : `question ${questionId} leaves no room for any answer (it was saved before the ask's size check)`

/**
 * What such a refusal tells the supervisor to do: `verb` ("answer", "reply") shorter while question `questionId`
 * leaves room (`roomLeft`); else no answer can fit, so stop the question and have the child ask it again shorter.
 *
 * @category errors
 * @since 0.1.0
 */
export const shorterAnswer = (questionId: string, room: number, verb: string): string =>
  room > 0
    ? `${verb} shorter, or put long material in a file and name its path`
    : `stop question ${questionId} (question_stop) and have the child ask it again shorter, with long material in a file it names`

/** The longest request id a client may send, each character written as a six-byte JSON escape (`\u0001`). */
const WIDEST_REQUEST_ID = "\u0001".repeat(MAX_ID_LENGTH)

/** The bytes of `text` as a JSON string, without its two quotes. */
const escapedBytes = (text: string): number => Buffer.byteLength(JSON.stringify(text), "utf8") - 2

/**
 * One JSON-escaped UTF-16 unit is at most six bytes (`\u0001`, a lone surrogate `\udXXX`; a pair is four bytes for
 * two units), so `text` takes at most `ESCAPE_MAX * text.length` bytes in a frame: the cheap bound of `answerTooLarge`.
 */
const ESCAPE_MAX = 6

/**
 * The frames that carry `answered`'s answer, both texts "": `withQuestion`, the longest that carry the question too
 * (an answer receipt with a revival, a `question_get` or re-ask `question_result` confirmed, a stop receipt, each to
 * `WIDEST_REQUEST_ID`, `durable: false`; once its child confirmed it, no revival nor stop receipt: none is written,
 * review revqa 2), and `alone`, the child's `question_answered`. A frame's bytes are these plus the texts' escaped
 * bytes: JSON.stringify writes a string field as the string's own JSON, whatever is around it.
 */
const hollowFrames = (answered: QuestionRecord, at: number) => {
  const hollow: QuestionRecord = { ...answered, message: "", answer: "", answeredAt: answered.answeredAt ?? at }
  const confirmed = answered.deliveredAt !== undefined
  const revival = confirmed ? {} : { revival: revivalOf(hollow, false) }
  const carrying = [
    questionResultFrame(WIDEST_REQUEST_ID, {
      receipt: { question: recordWire(hollow), saved: false, sentToChild: false, durable: false, ...revival }
    }, false),
    questionResultFrame(WIDEST_REQUEST_ID, { question: recordWire({ ...hollow, deliveredAt: at }) }, false),
    ...(confirmed ? [] : [questionResultFrame(WIDEST_REQUEST_ID, {
      receipt: { question: recordWire({ ...hollow, cancelledAt: at }), saved: false, sentToChild: false, durable: false }
    }, false)])
  ]
  let withQuestion = 0
  for (const frame of carrying) withQuestion = Math.max(withQuestion, frameBytes(frame))
  return { withQuestion, alone: frameBytes(answeredFrame(hollow)) }
}

/**
 * Why `answered` — a saved question with an answer, at `at` — would make a frame over 1 MiB, or undefined: the
 * longest frame that carries its answer (`hollowFrames`: an answer receipt with a revival — an identical re-answer's,
 * `saved` and `claimed` false —, a stop receipt, a `question_get` or re-ask `question_result` of it confirmed, each
 * to the longest request id a client may send, and the child's `question_answered`). Exact: a frame's bytes are its
 * hollow bytes plus the escaped bytes of the question and the answer. Cheap where it can be: when even six bytes per
 * character of both texts fit (`ESCAPE_MAX`), neither text is stringified; else each once. The same check sizes a
 * new question with a one-character answer (QuestionSize.questionTooLarge), so a question the broker saved always takes a short
 * answer. Later times (`deliveredAt`, `cancelledAt`) are sized with `at`: a time with more digits later (past the
 * year 2286 in epoch ms) would be longer (docs/protocol.md, known limits).
 *
 * @category validation
 * @since 0.1.0
 */
export const answerTooLarge = (answered: QuestionRecord, at: number, same = false): AnswerTooLarge | undefined => {
  const answer = answered.answer ?? ""
  const { alone, withQuestion } = hollowFrames(answered, at)
  if (Math.max(withQuestion, alone) + ESCAPE_MAX * (answered.message.length + answer.length) <= MAX_FRAME_BYTES) {
    return undefined
  }
  const shell = Math.max(withQuestion + escapedBytes(answered.message), alone)
  const widest = shell + escapedBytes(answer)
  return widest <= MAX_FRAME_BYTES
    ? undefined
    : new AnswerTooLarge({ questionId: answered.id, bytes: widest, room: MAX_FRAME_BYTES - shell, same })
}

/**
 * How many bytes, as JSON text, the notified question `question` (no answer yet) leaves any answer: what
 * `answerTooLarge` would name as its `room`, with the same frames and the same times (`at`). Questions.notify keeps
 * it with the notice, so the send stage sizes the supervisor's live reply without the question's text (helper qsize).
 * Stringifies the question's text once.
 *
 * @category validation
 * @since 0.1.0
 */
export const answerRoom = (question: QuestionRecord, at: number): number => {
  const { alone, withQuestion } = hollowFrames(question, at)
  return MAX_FRAME_BYTES - Math.max(withQuestion + escapedBytes(question.message), alone)
}

/**
 * Why an answer `text` (as the store saves it, trimmed) to question `questionId`, which leaves `room` bytes
 * (`answerRoom`), would make a frame over 1 MiB, or undefined: `AnswerTooLarge` with the frame's size. Cheap when
 * six bytes a character fit (`ESCAPE_MAX`); else the text is trimmed and stringified once.
 *
 * @category validation
 * @since 0.1.0
 */
export const answerOverRoom = (questionId: string, room: number, text: string): AnswerTooLarge | undefined => {
  if (ESCAPE_MAX * text.length <= room) return undefined
  const bytes = escapedBytes(text.trim())
  return bytes <= room
    ? undefined
    : new AnswerTooLarge({ questionId, bytes: MAX_FRAME_BYTES - room + bytes, room, same: false })
}

const cancelledFrame = (record: QuestionRecord): string =>
  JSON.stringify({ type: "question_cancelled", questionId: record.id, cancelledAt: record.cancelledAt })

/**
 * Runs the question fiber until its Scope closes. Failures of one item are
 * answered to its caller (`question_failed`) or logged; they never stop the fiber.
 *
 * @category constructors
 * @since 0.1.0
 */
export const runQuestionWorker = (
  questions: Questions,
  store: QuestionStoreService,
  work: Queue.Queue<QuestionWork>
): Effect.Effect<never> => {
  const durable = store.durable
  const result = (session: Session, requestId: string, fields: object) =>
    Effect.sync(() => questions.write(session, questionResultFrame(requestId, fields, durable)))
  const failed = (session: Session, requestId: string, error: { readonly _tag: string; readonly message: string }) =>
    Effect.sync(() =>
      questions.write(session, JSON.stringify({ type: "question_failed", requestId, error: error._tag, reason: error.message }))
    )

  /**
   * C-BRK-3 for a new question only: fails with the ask's `tooLarge` when the store does not hold its id, so nothing
   * is saved. An id the store holds goes on to `store.ask` whatever the ask's text or its session's fields now: the
   * same child's re-ask (C-DQ-6) is answered from the saved record, another's is `QuestionIdTaken`. One read, on a
   * refused ask only.
   */
  const refusalOfNew = (item: Extract<QuestionWork, { readonly _tag: "Ask" }>) => {
    const tooLarge = item.tooLarge
    return tooLarge === undefined
      ? Effect.void
      : Effect.flatMap(store.get(item.questionId), (saved) => saved === undefined ? Effect.fail(tooLarge) : Effect.void)
  }

  const handle = (item: QuestionWork): Effect.Effect<void> => {
    switch (item._tag) {
      case "Ask":
        return Effect.andThen(refusalOfNew(item), store.ask({
          id: item.questionId,
          ownerId: item.ownerId,
          childId: item.session.id,
          // As the ask was sized (QuestionSize.questionTooLarge): a rename since is not the question's (helper qs).
          childName: item.childName,
          reason: item.reason,
          message: item.text,
          createdAt: item.at
        })).pipe(
          Effect.matchEffect({
            onFailure: (error) => failed(item.session, item.requestId, error),
            onSuccess: ({ record }) =>
              Effect.andThen(
                result(item.session, item.requestId, { question: recordWire(record) }),
                Effect.sync(() => {
                  // Saved first (C-SUP-18); only now is anyone told. The child waits only on a question still
                  // unresolved (C-DQ-13): one stopped, or answered and confirmed, asked again is told so and over —
                  // waiting on it kept its id taken (a send under it refused) until the child left (helper oneid2).
                  if (isUnresolved(record)) questions.wait(record.id, item.session)
                  const state = stateOf(record)
                  if (state === "awaiting_input") questions.notify(record, undefined, item.fromJson)
                  else if (state === "cancelled") questions.write(item.session, cancelledFrame(record))
                  else questions.write(item.session, answeredFrame(record))
                })
              )
          }),
          // After `wait`: a send under an unresolved question's id is refused throughout (Questions' `asking`, then `waiters`).
          Effect.ensuring(Effect.sync(() => questions.asked(item.session, item.questionId)))
        )
      case "Received":
        return store.get(item.questionId).pipe(
          Effect.flatMap((record) =>
            // Only the asking child confirms, and only its confirmation lets go of the waiter.
            record === undefined || record.childId !== item.session.id
              ? Effect.void
              : Effect.andThen(store.deliver(record.id, item.at), Effect.sync(() => questions.forget(record.id)))
          ),
          Effect.catch((error) => Effect.logWarning(`Question ${item.questionId}: ${error.message}`))
        )
      case "Answer":
        return answer(item)
      case "Stop":
        return store.stop({ id: item.questionId, by: item.by, at: item.at }).pipe(
          Effect.matchEffect({
            onFailure: (error) => failed(item.session, item.requestId, error),
            onSuccess: ({ cancelled, record }) =>
              Effect.suspend(() => {
                const waiter = questions.waiterOf(record.id)
                const sent = cancelled && waiter !== undefined && waiter !== item.session
                if (cancelled) {
                  // C-DQ-11: the live waiter is aborted.
                  if (sent) questions.write(waiter, cancelledFrame(record))
                  questions.forget(record.id)
                }
                const receipt: QuestionReceiptWire = { question: recordWire(record), saved: cancelled, sentToChild: sent, durable }
                return result(item.session, item.requestId, { receipt })
              })
          })
        )
      case "List":
        return store.list(item.ownerId, item.page).pipe(
          Effect.matchEffect({
            onFailure: (error) => failed(item.session, item.requestId, error),
            // C-BRK-3: cut before the summary that would take the frame past 1 MiB (helper qsize).
            onSuccess: (page) =>
              Effect.sync(() =>
                questions.write(item.session, fitPage(page, (fitted) => questionResultFrame(item.requestId, { page: fitted }, durable)))
              )
          })
        )
      case "Get":
        return store.get(item.questionId).pipe(
          Effect.matchEffect({
            onFailure: (error) => failed(item.session, item.requestId, error),
            onSuccess: (record) =>
              record === undefined || (record.ownerId !== item.ownerId && record.childId !== item.session.id)
                ? failed(item.session, item.requestId, {
                  _tag: "QuestionNotFound",
                  message: `No question "${item.questionId}" belongs to this session; list them with \`intercom questions\``
                })
                : result(item.session, item.requestId, { question: recordWire(record) })
          })
        )
      case "SupervisorBack":
        return store.unresolvedOf(item.session.id).pipe(
          Effect.flatMap((records) =>
            Effect.sync(() => {
              for (const record of records) {
                if (stateOf(record) === "awaiting_input") questions.notify(record, item.session)
              }
            })
          ),
          Effect.catch((error) => Effect.logWarning(`Questions of ${item.session.id}: ${error.message}`))
        )
    }
  }

  const answer = (item: Extract<QuestionWork, { readonly _tag: "Answer" }>): Effect.Effect<void> =>
    item.session === undefined
      ? Effect.ensuring(saveAnswer(item), Effect.sync(() => questions.replied(item.questionId)))
      : saveAnswer(item)

  /**
   * C-BRK-3: a `question_answer` whose answer would be written in a frame over 1 MiB (`answerTooLarge`, with the
   * saved question's text) is refused before it is saved. An answer the store would write is sized, and an identical
   * re-answer too: its receipt carries the saved answer, which was not sized if a live reply saved it before helper
   * qsize (review revqanswer #4; refused `same`, nothing changed). A conflicting or cancelled one is refused as ever.
   * A notified supervisor's live reply (`sized`) is not sized here: the send stage sized it against the same room
   * before it reached the child (Questions.replyTooLarge, `answerRoom`). A reply with no notice here (a base
   * supervisor's, Questions.unnotifiedAnswer) had no room to be sized against: it is sized here as a
   * `question_answer` is, after it was delivered or queued, and one too large is not saved (logged by `refuse`; qbase2).
   */
  const refusalOf = (item: Extract<QuestionWork, { readonly _tag: "Answer" }>) =>
    item.sized
      ? Effect.succeed(undefined)
      : Effect.map(store.get(item.questionId), (record) => {
        if (record === undefined || record.ownerId !== item.ownerId) return undefined
        const text = item.text.trim()
        if (text === "") return undefined
        const decision = answerDecision(record, text)
        if (decision === "write") return answerTooLarge({ ...record, answer: text, answeredAt: item.at }, item.at)
        return "saved" in decision ? answerTooLarge(record, item.at, true) : undefined
      })

  const saveAnswer = (item: Extract<QuestionWork, { readonly _tag: "Answer" }>): Effect.Effect<void> =>
    refusalOf(item).pipe(
      Effect.matchEffect({
        onFailure: (error) => refuse(item, error),
        onSuccess: (refusal) => refusal === undefined ? writeAnswer(item) : refuse(item, refusal)
      })
    )

  /**
   * An answer not saved: its caller is told, or, for a live reply, the broker logs it. A `question_answer` closed
   * the question's edge when it arrived (Questions.onAnswer, so no live reply races it); a refusal that leaves the
   * question waiting — empty, too large, not found, the store failed — opens it again (`Questions.reopen`, review
   * revqanswer #2), so the supervisor's reply to the notification it holds still answers. `AnswerConflict`,
   * `QuestionCancelled` and an identical answer's `AnswerTooLarge` do not: the question waits for no answer.
   */
  const refuse = (
    item: Extract<QuestionWork, { readonly _tag: "Answer" }>,
    error: { readonly _tag: string; readonly message: string }
  ): Effect.Effect<void> => {
    if (item.session === undefined || item.requestId === undefined) {
      return Effect.logWarning(`A reply to question ${item.questionId} was not saved as its answer: ${error.message}`)
    }
    const waits = error._tag !== "AnswerConflict" && error._tag !== "QuestionCancelled" &&
      !(error instanceof AnswerTooLarge && error.same)
    const closed = waits ? item.closed : undefined
    const written = failed(item.session, item.requestId, error)
    // Opened again before the refusal is written (docs/protocol.md "Answering by id").
    return closed === undefined ? written : Effect.andThen(Effect.sync(() => questions.reopen(closed)), written)
  }

  const writeAnswer = (item: Extract<QuestionWork, { readonly _tag: "Answer" }>): Effect.Effect<void> =>
    store.answer({ id: item.questionId, ownerId: item.ownerId, text: item.text, at: item.at }).pipe(
      Effect.matchEffect({
        onFailure: (error) => refuse(item, error),
        onSuccess: ({ record, saved }) =>
          Effect.gen(function*() {
            const pending = stateOf(record) === "answer_pending"
            const waiter = questions.waiterOf(record.id)
            let sent = false
            let revival: RevivalWire | undefined
            // Every edge of it closes, so a later reply is refused as one to a settled question: each found by the
            // question's id too — one restored at a durable broker's start (helper fixqs3; review revfixqs2 D2), one
            // under another session key of its child (review rrsq probe 2).
            if (pending) questions.close(record.id)
            if (pending && waiter !== undefined) {
              // A live reply already reached the child as the reply itself; anything else is pushed.
              if (item.session !== undefined) questions.write(waiter, answeredFrame(record))
              sent = true
            } else if (pending && !questions.isPresent(record.childId)) {
              // C-DQ-10: the child has exited; the first answer claims its revival, once.
              revival = revivalOf(record, yield* store.claimRevival(record.id, item.at))
            }
            if (item.session === undefined || item.requestId === undefined) return
            const receipt: QuestionReceiptWire = {
              question: recordWire(record),
              saved,
              sentToChild: sent,
              durable,
              ...(revival === undefined ? {} : { revival })
            }
            yield* result(item.session, item.requestId, { receipt })
          }).pipe(Effect.catch((error) =>
            item.session === undefined || item.requestId === undefined
              ? Effect.logWarning(`Question ${item.questionId}: ${error.message}`)
              : failed(item.session, item.requestId, error)
          ))
      })
    )

  return Effect.forever(Effect.flatMap(Queue.take(work), handle), { disableYield: true })
}
