/**
 * Review revqsize, probe 1 (LOW): the live reply's refusal (`QuestionText.replyTooLarge`) for a question that leaves
 * no room for any answer — one saved by a broker before the ask's size check (helper qnotify), which the store is read
 * as it is — names a negative room ("at most -50 bytes") and tells the supervisor to "reply shorter", which no reply
 * can. `AnswerTooLarge` (QuestionWorker.ts) says "leaves no room for an answer by id" for the same question. The
 * question is put in the memory store as such a broker left it; the child asks again (answered from the saved record)
 * so it waits and its supervisor is notified. In-memory network, memory store; no time passes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { answerRoom } from "../src/broker/QuestionWorker.ts"
import type { QuestionRecord } from "../src/store/questionModel.ts"
import { message, messageFor, send } from "./support/broker.ts"
import { patientClock } from "./support/memory.ts"
import { questionAsk, questionWorld, START, SUP } from "./support/questionWorld.ts"

describe("review revqsize 1: a live reply to a question that leaves no room", () => {
  it.effect("is refused naming no negative room and not asking for a shorter reply", () =>
    patientClock(Effect.gen(function*() {
      const { child, questions, supervisor } = yield* questionWorld
      const hollow: QuestionRecord = {
        id: "q-1",
        ownerId: SUP,
        childId: "child-worker",
        childName: "worker",
        reason: "need_decision",
        message: "",
        createdAt: START
      }
      // A question 50 bytes past leaving any room, as a broker before the ask's size check saved it.
      const saved = { ...hollow, message: "q".repeat(answerRoom(hollow, START) + 50) }
      assert.strictEqual(answerRoom(saved, START), -50, "precondition: the question leaves no room")
      questions.records.set("q-1", saved)
      yield* child.send(questionAsk)
      yield* messageFor(supervisor, "q-1")
      const ack = yield* send(supervisor, "child-worker", message("ok", { replyTo: "q-1" }))
      assert.strictEqual(ack.type, "delivery_failed", "precondition: the reply is refused")
      const reason = ack.type === "delivery_failed" ? ack.reason : ""
      assert.notInclude(reason, "at most -", reason)
      assert.notInclude(reason, "reply shorter", reason)
    })))
})
