/**
 * A child that renames itself (a `presence` with a longer `name`) after its `question_ask` and before the question
 * fiber saves the question (suspicion of review revqsize): the ask's size check (QuestionSize.questionTooLarge) measured the
 * question with the child's session as it asked — its name in the frames that carry the saved question back, its
 * SessionInfo in the notification — and the saved record and the first notification must be those very frames.
 * Before (helper qs) the fiber took the name as it was at the save and the notification the SessionInfo as it was
 * then: a question saved at the bound refused every one-character answer (`AnswerTooLarge`), and a notification at
 * the bound was dropped by the writer's guard (the supervisor never told). "Between" is made exact by a question store
 * whose `list` waits for the test: the fiber is held in the supervisor's `question_list`, the Router handles the ask
 * and the rename, then the fiber takes the ask and saves it. On a broker over the in-memory network with a memory
 * question store; no time passes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_FRAME_BYTES } from "../../src/protocol/constants.ts"
import { ASK_TIMEOUT_V1, DELIVERY_V1, GROUPS_V1, QUESTIONS_V1, REPLY_ERROR_V1, SUPERVISOR_V1 } from "../../src/protocol/features.ts"
import { messageFor } from "../support/broker.ts"
import { patientClock } from "../support/memory.ts"
import { FEATURES, holdFirstList, questionAsk, questionWorldOf } from "../support/questionWorld.ts"
import type { WireClient } from "../support/wire.ts"

const answerTo = (client: WireClient, requestId: string) =>
  client.next(["question_result", "question_failed"], (frame) => frame.requestId === requestId)

/** A name of 256 characters, three bytes each in UTF-8: far longer than "worker" in every frame that names it. */
const LONG_NAME = "是".repeat(256)

/**
 * `child` asks `q-1` with `text` while the fiber is held in `supervisor`'s `question_list`, renames itself to
 * `LONG_NAME` (handled by the Router: a round trip on the child's connection after each), then the fiber takes the
 * ask and saves it: the child's answer.
 */
const askThenRename = <E>(
  child: WireClient,
  supervisor: WireClient,
  release: Effect.Effect<unknown, E>,
  text: string
) =>
  Effect.gen(function*() {
    yield* supervisor.send({ type: "question_list", requestId: "held" })
    yield* supervisor.roundTrip
    yield* child.send({ ...questionAsk, text })
    yield* child.roundTrip
    yield* child.send({ type: "presence", name: LONG_NAME })
    yield* child.roundTrip
    yield* release
    return yield* answerTo(child, questionAsk.requestId)
  })

const QUESTION_REFUSAL = /would be (\d+) bytes, over the 1048576-byte frame limit/

describe("a child renamed between its question_ask and the save", () => {
  it.effect("a question saved at the answer bound keeps the name it was asked under and takes a one-character answer; its question_get fits", () =>
    patientClock(Effect.gen(function*() {
      const held = yield* holdFirstList
      const { child, questions, supervisor } = yield* questionWorldOf(FEATURES, undefined, held.wrap)
      // The bound, from the refusal's own size (ASCII: one byte a character), as question-answer-room tests find it.
      const probe = MAX_FRAME_BYTES - 1_700
      yield* child.send({ ...questionAsk, requestId: "r-0", questionId: "q-0", text: "x".repeat(probe) })
      const refused = yield* answerTo(child, "r-0")
      const match = QUESTION_REFUSAL.exec(refused.type === "question_failed" ? refused.reason : "")
      assert.isNotNull(match, "precondition: the probe is refused")
      const bound = probe - (Number(match?.[1] ?? "0") - MAX_FRAME_BYTES)
      const saved = yield* askThenRename(child, supervisor, held.release, "x".repeat(bound))
      assert.strictEqual(saved.type, "question_result", saved.type === "question_failed" ? saved.reason : "")
      assert.strictEqual(questions.records.get("q-1")?.childName, "worker", "saved under the name the check measured")
      yield* messageFor(supervisor, "q-1")
      yield* supervisor.send({ type: "question_answer", requestId: "a-1", questionId: "q-1", text: "是" })
      const answered = yield* answerTo(supervisor, "a-1")
      assert.strictEqual(answered.type, "question_result", answered.type === "question_failed" ? answered.reason : "")
      assert.strictEqual(questions.records.get("q-1")?.answer, "是")
      const getId = "g".repeat(256)
      yield* supervisor.send({ type: "question_get", requestId: getId, questionId: "q-1" })
      const got = yield* answerTo(supervisor, getId)
      assert.strictEqual(got.type, "question_result")
      const written = supervisor.receivedTexts().filter((text) => text.includes(`"requestId":"${getId}"`))
      assert.strictEqual(written.length, 1)
      assert.isAtMost(Buffer.byteLength(written[0]!), MAX_FRAME_BYTES)
    })))

  it.effect("a notification sized at exactly 1 MiB reaches the supervisor whole, from the child as it asked", () =>
    patientClock(Effect.gen(function*() {
      const held = yield* holdFirstList
      // A long cwd: the notification, which carries the child's SessionInfo, is the frame that binds.
      const { child, supervisor } = yield* questionWorldOf(
        [GROUPS_V1, SUPERVISOR_V1, REPLY_ERROR_V1, QUESTIONS_V1, ASK_TIMEOUT_V1, DELIVERY_V1],
        `/${"d".repeat(2_999)}`,
        held.wrap
      )
      // The bound measured apart from the check, as question-size-check.test.ts does: a one-character question's
      // notification as written, less that character.
      yield* child.send({ ...questionAsk, requestId: "r-0", questionId: "q-0", text: "y" })
      assert.strictEqual((yield* answerTo(child, "r-0")).type, "question_result", "precondition: q-0 is saved")
      yield* messageFor(supervisor, "q-0")
      const probe = supervisor.receivedTexts().find((text) => text.startsWith(`{"type":"message"`) && text.includes(`"id":"q-0"`))
      const exact = MAX_FRAME_BYTES - (Buffer.byteLength(probe ?? "") - 1)
      const saved = yield* askThenRename(child, supervisor, held.release, "x".repeat(exact))
      assert.strictEqual(saved.type, "question_result", saved.type === "question_failed" ? saved.reason : "")
      // The fiber notified before it handles the supervisor's get: its answer is the barrier.
      yield* supervisor.send({ type: "question_get", requestId: "g-1", questionId: "q-1" })
      assert.strictEqual((yield* answerTo(supervisor, "g-1")).type, "question_result")
      const written = supervisor.receivedTexts().filter((text) => text.startsWith(`{"type":"message"`) && text.includes(`"id":"q-1"`))
      assert.deepStrictEqual(written.map((text) => Buffer.byteLength(text)), [MAX_FRAME_BYTES], "notified once, exactly 1 MiB")
      const notified = supervisor.received().find((frame) => frame.type === "message" && frame.message.id === "q-1")
      assert.strictEqual(notified?.type === "message" ? notified.from.name : undefined, "worker")
    })))
})
