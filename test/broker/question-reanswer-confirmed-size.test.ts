/**
 * An identical re-answer is sized as the frames the saved record can make: for a question already confirmed
 * (`deliveredAt` set) its answer receipt has no revival, so where every such frame fits 1 MiB under a 256-character
 * escaped request id it gets its receipt (review revqa 2: a revival was counted, and it was refused `AnswerTooLarge`,
 * "nothing changed"). The answer is
 * put in the store as a broker before helper qsize saved it from a live reply (unsized then; too long for the
 * question unconfirmed, so a live reply is refused it now) and confirmed by the child. The answer length is
 * computed from the saved record with the module's own encoders; no time passes (every stamp has START's digits).
 * In-memory network, memory store.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { recordWire, questionResultFrame } from "../../src/broker/QuestionWorker.ts"
import { MAX_FRAME_BYTES } from "../../src/protocol/constants.ts"
import { frameBytes } from "../../src/protocol/framing.ts"
import { MAX_ID_LENGTH } from "../../src/protocol/limits.ts"
import { messageFor } from "../support/broker.ts"
import { questionAsk, questionWorld } from "../support/questionWorld.ts"
import type { WireClient } from "../support/wire.ts"
import { patientClock } from "../support/memory.ts"

const WIDEST_REQUEST_ID = "\u0001".repeat(MAX_ID_LENGTH)

const answerTo = (client: WireClient, requestId: string) =>
  client.next(["question_result", "question_failed"], (frame) => frame.requestId === requestId)

describe("an identical re-answer of a confirmed answer is sized as the frames it makes", () => {
  it.effect("every frame fits under the widest request id: the identical re-answer gets its receipt, not AnswerTooLarge", () =>
    patientClock(Effect.gen(function*() {
      const { child, questions, supervisor } = yield* questionWorld
      yield* child.send({ ...questionAsk, text: "q".repeat(600_000) })
      assert.strictEqual((yield* answerTo(child, questionAsk.requestId)).type, "question_result", "precondition: saved")
      yield* messageFor(supervisor, "q-1")
      const asked = questions.records.get("q-1")
      if (asked === undefined) return assert.fail("precondition: q-1 saved")
      const at = asked.createdAt
      // The confirmed question as a receipt (the longest frame an identical re-answer of it makes) and a question_get.
      const frames = (answer: string) => {
        const done = recordWire({ ...asked, answer, answeredAt: at, deliveredAt: at })
        return [
          questionResultFrame(WIDEST_REQUEST_ID, { receipt: { question: done, saved: false, sentToChild: false, durable: false } }, false),
          questionResultFrame(WIDEST_REQUEST_ID, { question: done }, false)
        ]
      }
      const longest = (answer: string) => Math.max(...frames(answer).map(frameBytes))
      const length = MAX_FRAME_BYTES - longest("")
      const text = "a".repeat(length)
      assert.isAtMost(longest(text), MAX_FRAME_BYTES, "precondition: every frame fits")
      // Too long for the question unconfirmed (its receipt with a revival), so a live reply is refused it now
      // (question-reply-size.test.ts): saved as a broker before helper qsize left it, then confirmed by the child.
      questions.records.set("q-1", { ...asked, answer: text, answeredAt: at })
      yield* child.send({ type: "question_received", questionId: "q-1" })
      yield* child.send({ type: "question_list", requestId: "barrier" })
      yield* answerTo(child, "barrier")
      assert.isDefined(questions.records.get("q-1")?.deliveredAt, "precondition: the child confirmed it")
      yield* supervisor.send({ type: "question_answer", requestId: WIDEST_REQUEST_ID, questionId: "q-1", text })
      const answered = yield* answerTo(supervisor, WIDEST_REQUEST_ID)
      assert.strictEqual(answered.type, "question_result", answered.type === "question_failed" ? answered.reason : "")
    })))
})
