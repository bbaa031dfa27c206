/**
 * A durable question that leaves no room for any answer (review revqsize 1, helper fixqs): the ask's size check keeps
 * room for a one-character answer, but a broker before that check (helper qnotify) could save a longer question, and
 * its store is read as it is. Refusing an answer to such a question, the broker names no room ("at most -50 bytes")
 * and asks for no shorter answer, which none can be: it says the question leaves no room for any answer and to stop
 * it and have the child ask again shorter — for the supervisor's live reply (`QuestionText.replyTooLarge`,
 * `E_MESSAGE_TOO_LARGE`) and its `question_answer` by id (`AnswerTooLarge`), worded by the same code
 * (`QuestionWorker.roomLeft`, `shorterAnswer`). The question is put in the memory store as such a broker left it, 50
 * bytes past leaving any room. On a broker over the in-memory network with a memory question store, under
 * `patientClock` (a step carries a MiB); no time passes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { answerRoom } from "../../src/broker/QuestionWorker.ts"
import { MAX_FRAME_BYTES } from "../../src/protocol/constants.ts"
import type { QuestionRecord } from "../../src/store/questionModel.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { patientClock } from "../support/memory.ts"
import { questionAsk, questionWorld, START, SUP } from "../support/questionWorld.ts"
import type { WireClient } from "../support/wire.ts"

/** q-1 with an empty text, as its child asked it. */
const hollow: QuestionRecord = {
  id: "q-1",
  ownerId: SUP,
  childId: "child-worker",
  childName: "worker",
  reason: "need_decision",
  message: "",
  createdAt: START
}

/** q-1 with a text 50 bytes past leaving any answer room, as a broker before the ask's size check saved it. */
const saved: QuestionRecord = { ...hollow, message: "q".repeat(answerRoom(hollow, START) + 50) }

/** What both refusals say of the room and what to do, after their own "Nothing was … saved" sentence. */
const NO_ROOM = "question q-1 leaves no room for any answer (it was saved before the ask's size check)"
const STOP_AND_ASK_AGAIN =
  "stop question q-1 (question_stop) and have the child ask it again shorter, with long material in a file it names"

const answerTo = (client: WireClient, requestId: string) =>
  client.next(["question_result", "question_failed"], (frame) => frame.requestId === requestId)

describe("a durable question saved leaving no room for any answer", () => {
  it.effect("the supervisor's live reply is refused E_MESSAGE_TOO_LARGE saying no answer fits and to stop the question and have it asked again shorter", () =>
    patientClock(Effect.gen(function*() {
      const { child, questions, supervisor } = yield* questionWorld
      assert.strictEqual(answerRoom(saved, START), -50, "precondition: the question leaves no room")
      questions.records.set("q-1", saved)
      // The child asks again: answered from the saved record, it waits and its supervisor is notified.
      yield* child.send(questionAsk)
      yield* messageFor(supervisor, "q-1")
      const ack = yield* send(supervisor, "child-worker", message("ok", { replyTo: "q-1" }))
      assert.strictEqual(ack.type, "delivery_failed", "precondition: the reply is refused")
      assert.strictEqual(ack.type === "delivery_failed" ? ack.code : "", "E_MESSAGE_TOO_LARGE")
      assert.strictEqual(
        ack.type === "delivery_failed" ? ack.reason : "",
        `Reply is too large to answer durable question q-1: saved as its answer, it would make a frame of ${
          MAX_FRAME_BYTES + 52
        } bytes (the question and the answer whole, as a later question_get or an answer receipt carries them), over the ${MAX_FRAME_BYTES}-byte frame limit; ${NO_ROOM}. Nothing was delivered or saved, and the question still waits; ${STOP_AND_ASK_AGAIN}`
      )
    })))

  it.effect("a question_answer by id is refused AnswerTooLarge saying no answer fits and to stop the question and have it asked again shorter", () =>
    patientClock(Effect.gen(function*() {
      const { questions, supervisor } = yield* questionWorld
      questions.records.set("q-1", saved)
      yield* supervisor.send({ type: "question_answer", requestId: "a-1", questionId: "q-1", text: "y" })
      const refused = yield* answerTo(supervisor, "a-1")
      assert.strictEqual(refused.type === "question_failed" ? refused.error : refused.type, "AnswerTooLarge")
      const reason = refused.type === "question_failed" ? refused.reason : ""
      assert.match(reason, /^Answer is too large to deliver: with question q-1 it would make a frame of \d+ bytes /, reason)
      assert.isTrue(reason.endsWith(`; ${NO_ROOM}. Nothing was saved; ${STOP_AND_ASK_AGAIN}`), reason)
      assert.isUndefined(questions.records.get("q-1")?.answer, "the refused answer was saved")
    })))
})
