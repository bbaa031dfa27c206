/**
 * A question saved at the ask's check's bound takes any one-character answer by id, as docs/protocol.md and the
 * refusal say: the check sizes a new question with the widest one-character answer (six bytes as JSON text); sized
 * with "y" (one byte), a one-character answer that is not ASCII ("✓", three bytes in UTF-8) was refused
 * `AnswerTooLarge` at the bound (review revqa 1). The bound is found from the refusal's own size (ASCII
 * text, one byte a character), as test/broker/question-answer-room.test.ts does. In-memory network, memory store;
 * no time passes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_FRAME_BYTES } from "../../src/protocol/constants.ts"
import { messageFor } from "../support/broker.ts"
import { questionAsk, questionWorld } from "../support/questionWorld.ts"
import type { WireClient } from "../support/wire.ts"
import { patientClock } from "../support/memory.ts"

const answerTo = (client: WireClient, requestId: string) =>
  client.next(["question_result", "question_failed"], (frame) => frame.requestId === requestId)

const QUESTION_REFUSAL = /would be (\d+) bytes, over the 1048576-byte frame limit/

describe("a saved question takes any one-character answer", () => {
  for (const answer of ["é", "✓", "是"]) {
    it.effect(`a question at the ask's bound takes the one-character answer ${JSON.stringify(answer)} by id`, () =>
      patientClock(Effect.gen(function*() {
        const { child, questions, supervisor } = yield* questionWorld
        const probe = MAX_FRAME_BYTES - 1_700
        yield* child.send({ ...questionAsk, requestId: "r-0", questionId: "q-0", text: "x".repeat(probe) })
        const refused = yield* answerTo(child, "r-0")
        assert.strictEqual(refused.type, "question_failed", "precondition: the probe is refused")
        const match = QUESTION_REFUSAL.exec(refused.type === "question_failed" ? refused.reason : "")
        assert.isNotNull(match)
        const bound = probe - (Number(match?.[1] ?? "0") - MAX_FRAME_BYTES)
        yield* child.send({ ...questionAsk, text: "x".repeat(bound) })
        assert.strictEqual((yield* answerTo(child, questionAsk.requestId)).type, "question_result", "precondition: saved")
        yield* messageFor(supervisor, "q-1")
        yield* supervisor.send({ type: "question_answer", requestId: "a-1", questionId: "q-1", text: answer })
        const answered = yield* answerTo(supervisor, "a-1")
        assert.strictEqual(answered.type, "question_result", answered.type === "question_failed" ? answered.reason : "")
        assert.strictEqual(questions.records.get("q-1")?.answer, answer)
      })))
  }
})
