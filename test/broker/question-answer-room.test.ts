/**
 * The ask's size check and the answer's agree (helper fixqa; reviews revqanswer #1, #2, #4 and revqnotify D2): a
 * new question is sized as the frames a one-character answer makes of it (to the longest request id a client may
 * send, with a revival), so a question the broker saved always takes a short answer by id and is read back with
 * `question_get` under any request id; `AnswerTooLarge` names the room the question leaves and that room is exact; a
 * `question_answer` refused while the question waits leaves its edge open for the supervisor's reply; an identical
 * re-answer of an answer saved unsized (by a live reply, before helper qsize) is answered, not dropped. The bound is found from the refusal's own size
 * (ASCII text: one byte a character). The question fiber's work is awaited with a `question_list` on the same
 * connection (it takes items in order; a page carries previews only). On a broker over the in-memory network with a
 * memory question store; no time passes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_FRAME_BYTES } from "../../src/protocol/constants.ts"
import { MAX_ID_LENGTH } from "../../src/protocol/limits.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { questionAsk, questionWorld } from "../support/questionWorld.ts"
import type { WireClient } from "../support/wire.ts"
import { patientClock } from "../support/memory.ts"

/** The longest request id a client may send, each character written as a six-byte JSON escape. */
const WIDEST_REQUEST_ID = "\u0001".repeat(MAX_ID_LENGTH)

const answerTo = (client: WireClient, requestId: string) =>
  client.next(["question_result", "question_failed"], (frame) => frame.requestId === requestId)

/** The frames written `client` for `requestId` once the fiber handled all it sent before (a `question_list` after). */
const writtenFor = (client: WireClient, requestId: string) =>
  Effect.gen(function*() {
    const barrier = `list-after-${client.count("question_result") + client.count("question_failed")}`
    yield* client.send({ type: "question_list", requestId: barrier })
    yield* answerTo(client, barrier)
    return client.receivedTexts().filter((text) => text.includes(`"requestId":${JSON.stringify(requestId)}`))
  })

const QUESTION_REFUSAL = /would be (\d+) bytes, over the 1048576-byte frame limit/
const ROOM = /leaves room for an answer of at most (\d+) bytes as JSON text/

/** The number `pattern` finds in a refusal's reason, failing unless `frame` is `error`. */
const named = (frame: { readonly type: string; readonly error?: string; readonly reason?: string }, error: string, pattern: RegExp) => {
  assert.strictEqual(frame.type, "question_failed", `not refused ${error}`)
  assert.strictEqual(frame.error, error)
  const match = pattern.exec(frame.reason ?? "")
  assert.isNotNull(match, frame.reason)
  return Number(match![1])
}

/**
 * The longest question text the ask's check accepts (ASCII): a text 1,700 bytes short of 1 MiB is refused, and the
 * refusal's size less the limit is what it is over by. The question is asked as `q-0` (as long an id as `q-1`).
 */
const boundLength = (child: WireClient) =>
  Effect.gen(function*() {
    const probe = MAX_FRAME_BYTES - 1_700
    yield* child.send({ ...questionAsk, requestId: "r-0", questionId: "q-0", text: "x".repeat(probe) })
    return probe - (named(yield* answerTo(child, "r-0"), "QuestionTooLarge", QUESTION_REFUSAL) - MAX_FRAME_BYTES)
  })

describe("the ask's size check leaves room for the answer", () => {
  it.effect("a question at the ask's bound is saved and takes a one-character answer by id; one character longer is refused QuestionTooLarge", () =>
    patientClock(Effect.gen(function*() {
      const { child, questions, supervisor } = yield* questionWorld
      const bound = yield* boundLength(child)
      yield* child.send({ ...questionAsk, requestId: "r-over", questionId: "q-2", text: "x".repeat(bound + 1) })
      assert.strictEqual(named(yield* answerTo(child, "r-over"), "QuestionTooLarge", QUESTION_REFUSAL), MAX_FRAME_BYTES + 1)
      yield* child.send({ ...questionAsk, text: "x".repeat(bound) })
      assert.strictEqual((yield* answerTo(child, questionAsk.requestId)).type, "question_result", "the question at the bound was refused")
      yield* messageFor(supervisor, "q-1")
      yield* supervisor.send({ type: "question_answer", requestId: WIDEST_REQUEST_ID, questionId: "q-1", text: "y" })
      const answered = yield* answerTo(supervisor, WIDEST_REQUEST_ID)
      assert.strictEqual(answered.type, "question_result", answered.type === "question_failed" ? answered.reason : "")
      assert.strictEqual(questions.records.get("q-1")?.answer, "y")
      const written = supervisor.receivedTexts().filter((text) => text.startsWith(`{"type":"question_result"`))
      assert.isAtMost(Math.max(...written.map((text) => Buffer.byteLength(text))), MAX_FRAME_BYTES)
    })))

  it.effect("a question at the ask's bound, unanswered, is read back by question_get under a 256-character escaped request id", () =>
    patientClock(Effect.gen(function*() {
      const { child, supervisor } = yield* questionWorld
      const bound = yield* boundLength(child)
      yield* child.send({ ...questionAsk, text: "x".repeat(bound) })
      assert.strictEqual((yield* answerTo(child, questionAsk.requestId)).type, "question_result", "precondition: saved")
      yield* messageFor(supervisor, "q-1")
      yield* supervisor.send({ type: "question_get", requestId: WIDEST_REQUEST_ID, questionId: "q-1" })
      const got = yield* answerTo(supervisor, WIDEST_REQUEST_ID)
      assert.strictEqual(got.type, "question_result")
    })))

  it.effect("AnswerTooLarge names the room the question leaves: an answer of exactly that many bytes is saved", () =>
    patientClock(Effect.gen(function*() {
      const { child, questions, supervisor } = yield* questionWorld
      yield* child.send({ ...questionAsk, text: "q".repeat(600_000) })
      assert.strictEqual((yield* answerTo(child, questionAsk.requestId)).type, "question_result", "precondition: saved")
      yield* messageFor(supervisor, "q-1")
      yield* supervisor.send({ type: "question_answer", requestId: "a-1", questionId: "q-1", text: "a".repeat(500_000) })
      const room = named(yield* answerTo(supervisor, "a-1"), "AnswerTooLarge", ROOM)
      yield* supervisor.send({ type: "question_answer", requestId: "a-2", questionId: "q-1", text: "a".repeat(room + 1) })
      named(yield* answerTo(supervisor, "a-2"), "AnswerTooLarge", ROOM)
      yield* supervisor.send({ type: "question_answer", requestId: WIDEST_REQUEST_ID, questionId: "q-1", text: "a".repeat(room) })
      assert.strictEqual((yield* answerTo(supervisor, WIDEST_REQUEST_ID)).type, "question_result")
      assert.strictEqual(questions.records.get("q-1")?.answer?.length, room)
    })))
})

describe("a refused question_answer leaves the question waiting with its edge", () => {
  for (
    const [name, text] of [
      ["AnswerTooLarge", "y".repeat(MAX_FRAME_BYTES - 200)],
      ["EmptyAnswer", "   "]
    ] as const
  ) {
    it.effect(`refused ${name}, then a reply to the notification: delivered and saved as the answer`, () =>
      patientClock(Effect.gen(function*() {
        const { child, questions, supervisor } = yield* questionWorld
        yield* child.send(questionAsk)
        assert.strictEqual((yield* answerTo(child, questionAsk.requestId)).type, "question_result", "precondition: saved")
        yield* messageFor(supervisor, "q-1")
        yield* supervisor.send({ type: "question_answer", requestId: "a-1", questionId: "q-1", text })
        const refused = yield* answerTo(supervisor, "a-1")
        assert.strictEqual(refused.type === "question_failed" ? refused.error : refused.type, name)
        const ack = yield* send(supervisor, "child-worker", message("left", { replyTo: "q-1" }))
        assert.strictEqual(ack.type, "delivered", ack.type === "delivery_failed" ? `${ack.code}: ${ack.reason}` : "")
        yield* child.roundTrip
        yield* supervisor.roundTrip
        yield* writtenFor(supervisor, "a-1")
        assert.strictEqual(questions.records.get("q-1")?.answer, "left")
      })))
  }
})

describe("an identical re-answer of an answer saved unsized", () => {
  // A live reply is sized now (question-reply-size.test.ts); a broker before helper qsize saved it unsized, and its
  // store is read as it is: the answer is put in the store as that broker left it.
  it.effect("too large with its question for a receipt: refused AnswerTooLarge saying the same answer is saved and nothing changed", () =>
    patientClock(Effect.gen(function*() {
      const { child, questions, supervisor } = yield* questionWorld
      yield* child.send({ ...questionAsk, text: "q".repeat(600_000) })
      assert.strictEqual((yield* answerTo(child, questionAsk.requestId)).type, "question_result", "precondition: saved")
      yield* messageFor(supervisor, "q-1")
      const text = "a".repeat(500_000)
      const saved = questions.records.get("q-1")
      if (saved === undefined) return assert.fail("precondition: q-1 saved")
      questions.records.set("q-1", { ...saved, answer: text, answeredAt: saved.createdAt })
      yield* supervisor.send({ type: "question_answer", requestId: "a-1", questionId: "q-1", text })
      const written = yield* writtenFor(supervisor, "a-1")
      assert.strictEqual(questions.records.get("q-1")?.answer, text, "the saved answer changed")
      assert.strictEqual(written.length, 1, "the identical re-answer was never answered")
      const frame: { readonly type: string; readonly error?: string; readonly reason?: string } = JSON.parse(written[0]!)
      named(frame, "AnswerTooLarge", ROOM)
      assert.include(frame.reason, "This same answer was already saved (from a reply to the notification); nothing changed")
    })))
})
