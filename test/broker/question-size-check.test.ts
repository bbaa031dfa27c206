/**
 * C-BRK-3 for durable questions (helper qnotify): a `question_ask` is refused `QuestionTooLarge` when a frame it
 * becomes would pass 1 MiB — its notification to the supervisor, counted with every extension field it carries
 * (`askTimeoutMs`, `channel`, `delivery`: RecipientFrames.fitsFrame, the send pipeline's check), or the
 * frames that carry the saved question back with a one-character answer (review revqanswer #1). Before, such a question was saved and its
 * child answered `question_result` (accepted), and then the notification was dropped by the writer's guard
 * (OutputWrites `oversize`, "a broker bug"): the supervisor was never told; nearer the limit the child's own
 * `question_result` was dropped too, the question saved and nobody told. The bound is measured apart from the check
 * (a one-character question's notification as the broker wrote it) and held from both sides: one byte over is
 * refused with MAX + 1 in its reason; at exactly 1 MiB the notification reaches a supervisor granted all three
 * fields whole. On a broker over the in-memory network with a memory question store; no time passes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_ASK_TIMEOUT_MS, MAX_FRAME_BYTES } from "../../src/protocol/constants.ts"
import { ASK_TIMEOUT_V1, DELIVERY_V1, GROUPS_V1, QUESTIONS_V1, REPLY_ERROR_V1, SUPERVISOR_V1 } from "../../src/protocol/features.ts"
import { assertDelivered } from "../support/assertions.ts"
import { message, messageFor } from "../support/broker.ts"
import { questionAsk, questionWorldOf } from "../support/questionWorld.ts"
import type { WireClient } from "../support/wire.ts"
import { patientClock } from "../support/memory.ts"

/**
 * A supervisor granted every field a notification carries: its frame is the longest one. The child's 3,000-character
 * cwd is written in the notification (its session) and not in the frames that carry the question and an answer back,
 * so the notification is the frame that binds (review revqanswer #1: those frames leave room for an answer).
 */
const world = questionWorldOf([GROUPS_V1, SUPERVISOR_V1, REPLY_ERROR_V1, QUESTIONS_V1, ASK_TIMEOUT_V1, DELIVERY_V1], `/${"d".repeat(2_999)}`)
/** The same with the child's ordinary cwd. */
const plainWorld = questionWorldOf([GROUPS_V1, SUPERVISOR_V1, REPLY_ERROR_V1, QUESTIONS_V1, ASK_TIMEOUT_V1, DELIVERY_V1])
const SUP = "sup-0001"
/** The notification's extension fields as a supervisor granted them all is written them. */
const FIELDS = `,"askTimeoutMs":${MAX_ASK_TIMEOUT_MS},"channel":"supervisor","delivery":"steer"`

/** The child's answer to `question_ask` request `requestId`. */
const answerTo = (child: WireClient, requestId: string) =>
  child.next(["question_result", "question_failed"], (frame) => frame.requestId === requestId)

/** `child` asks question `q-1` with `text`; its answer. */
const ask = (child: WireClient, text: string) =>
  Effect.andThen(child.send({ ...questionAsk, text }), answerTo(child, questionAsk.requestId))

/**
 * The length of question text whose notification is exactly 1 MiB with every field, measured apart from the size
 * check: the child asks `q-0` (an id as long as `q-1`) with one character, and the supervisor's notification of it,
 * as the broker wrote it, less that character is what any text of `q-1` is written with (ASCII: one byte a character;
 * the TestClock does not move, so the stamps are the same).
 */
const exactLength = (child: WireClient, supervisor: WireClient) =>
  Effect.gen(function*() {
    yield* child.send({ ...questionAsk, requestId: "r-0", questionId: "q-0", text: "y" })
    assert.strictEqual((yield* answerTo(child, "r-0")).type, "question_result", "precondition: q-0 is saved")
    yield* messageFor(supervisor, "q-0")
    const written = supervisor.receivedTexts().find((text) => text.startsWith(`{"type":"message"`) && text.includes(`"id":"q-0"`))
    if (written === undefined) return assert.fail("precondition: q-0's notification as written")
    assert.isTrue(written.endsWith(`${FIELDS}}`), `precondition: written with every field: ${written.slice(-120)}`)
    return MAX_FRAME_BYTES - (Buffer.byteLength(written) - 1)
  })

describe("a durable question is size-checked as its notification and its answer", () => {
  it.effect("one byte over with the notification's fields: refused QuestionTooLarge with the size, the fields' room and the limit; nothing saved, notified or held", () =>
    patientClock(Effect.gen(function*() {
      const { child, questions, supervisor } = yield* world
      const exact = yield* exactLength(child, supervisor)
      const over = yield* ask(child, "x".repeat(exact + 1))
      assert.strictEqual(over.type, "question_failed", "the question one byte over was accepted")
      if (over.type !== "question_failed") return
      assert.strictEqual(over.error, "QuestionTooLarge")
      assert.strictEqual(
        over.reason,
        `Question is too large to deliver: its notification to the supervisor (the text with how to answer it) would be ${
          MAX_FRAME_BYTES + 1
        } bytes (${FIELDS.length} of them for the askTimeoutMs, channel and delivery fields a supervisor may be given with it), over the ${MAX_FRAME_BYTES}-byte frame limit. Nothing was saved; ask a shorter question (put long material in a file and name its path)`
      )
      assert.isUndefined(questions.records.get("q-1"), "the refused question was saved")
      yield* supervisor.roundTrip
      yield* supervisor.expectNothing("message", (frame) => frame.message.id === "q-1")
      // Nothing holds the id: a plain send under it goes through (no E_MESSAGE_ID_REUSE for a question asked).
      const note = { ...message("by the way"), id: "q-1" }
      yield* child.send({ type: "supervisor_send", to: SUP, message: note })
      assertDelivered(yield* child.next(["delivered", "delivery_failed"], (frame) => frame.messageId === note.id))
    })))

  it.effect("exactly 1 MiB with the notification's fields: saved, answered question_result, and notified whole to a supervisor granted them all", () =>
    patientClock(Effect.gen(function*() {
      const { child, questions, supervisor } = yield* world
      const exact = yield* exactLength(child, supervisor)
      const text = "x".repeat(exact)
      const accepted = yield* ask(child, text)
      assert.strictEqual(accepted.type, "question_result", `answered ${accepted.type === "question_failed" ? accepted.reason : ""}`)
      assert.strictEqual(questions.records.get("q-1")?.message, text)
      const notified = yield* messageFor(supervisor, "q-1")
      const written = supervisor.receivedTexts().filter((text) => text.startsWith(`{"type":"message"`) && text.includes(`"id":"q-1"`))
      assert.deepStrictEqual(written.map((text) => Buffer.byteLength(text)), [MAX_FRAME_BYTES], "written once, exactly 1 MiB")
      assert.isTrue(notified.message.content.text.startsWith(`${text}\n\n[Durable question q-1:`), "the text arrived whole")
      assert.strictEqual(notified.askTimeoutMs, MAX_ASK_TIMEOUT_MS)
      assert.strictEqual(notified.channel, "supervisor")
      assert.strictEqual(notified.delivery, "steer")
    })))

  it.effect("a notification that fits but frames carrying it back with a one-character answer that would not: refused QuestionTooLarge naming their size", () =>
    patientClock(Effect.gen(function*() {
      // The child's short cwd: its notification is shorter than those frames (sized to a 256-character request id).
      const { child, questions, supervisor } = yield* plainWorld
      const requestId = "r-1"
      const text = "x".repeat(MAX_FRAME_BYTES - 1_700)
      const frame = { ...questionAsk, requestId, text }
      assert.isAtMost(Buffer.byteLength(JSON.stringify(frame)), MAX_FRAME_BYTES, "precondition: the ask itself fits")
      yield* child.send(frame)
      const refused = yield* answerTo(child, requestId)
      assert.strictEqual(refused.type, "question_failed", "the question whose answer cannot be written was accepted")
      if (refused.type !== "question_failed") return
      assert.strictEqual(refused.error, "QuestionTooLarge")
      const bytes = /with a one-character answer the saved question and the answer sent back \(its answer receipt, a question_get or a re-ask's result, for a request id of any length allowed\) would be (\d+) bytes, over the (\d+)-byte frame limit/.exec(refused.reason)
      assert.isNotNull(bytes, refused.reason)
      assert.isAbove(Number(bytes![1]), MAX_FRAME_BYTES)
      assert.strictEqual(Number(bytes![2]), MAX_FRAME_BYTES)
      assert.include(refused.reason, "Nothing was saved; ask a shorter question")
      assert.strictEqual(questions.records.size, 0, "a refused question was saved")
      yield* supervisor.roundTrip
      yield* supervisor.expectNothing("message", (frame) => frame.message.id === "q-1")
    })))
})
