/**
 * A message id names one message of its sender (P46, C-ASK-4), and a durable question's notification is a message
 * from its child with `id = questionId` (docs/protocol.md, `questions-v1`): an ordinary ask and a question of one
 * child both keep their edge under the child's key and that id (Asks.ts, Questions.openEdge). A child reusing one
 * id for both is refused the second, naming the id and what holds it — else the one opened last replaced the
 * other's edge: the ask's recipient's reply was refused, or the supervisor's answer was (helper askqkey). Each
 * order on a broker over the in-memory network with a memory question store; no time passes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DeliveryCode } from "../../src/protocol/delivery.ts"
import { encodeFrames } from "../../src/protocol/framing.ts"
import { assertDelivered } from "../support/assertions.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { questionAsk, questionWorld as world } from "../support/questionWorld.ts"

describe("one id for a child's ordinary ask and its durable question", () => {
  it.effect("ask first: the question is refused QuestionIdTaken naming the id and the ask's target (bob); bob's reply is delivered", () =>
    Effect.gen(function*() {
      const { broker, bob, child, supervisor } = yield* world
      const ask = { ...message("left or right?", { expectsReply: true }), id: "q-1" }
      assertDelivered(yield* send(child, "bob", ask))
      yield* messageFor(bob, ask.id)

      yield* child.send(questionAsk)
      const verdict = yield* child.next(["question_result", "question_failed"])
      assert.strictEqual(verdict.type, "question_failed", "the question under the open ask's id was saved")
      if (verdict.type !== "question_failed") return
      assert.strictEqual(verdict.error, "QuestionIdTaken")
      assert.include(verdict.reason, `"q-1"`)
      assert.include(verdict.reason, "an ask this session sent to bob")
      assert.include(verdict.reason, "unique per sender")
      yield* supervisor.roundTrip
      yield* supervisor.expectNothing("message", (frame) => frame.message.id === "q-1")

      const reply = message("left", { replyTo: "q-1" })
      const answered = yield* send(bob, "worker", reply)
      assert.strictEqual(answered.type, "delivered", `bob's reply was refused: ${answered.type === "delivery_failed" ? answered.reason : ""}`)
      yield* messageFor(child, reply.id)
      assert.strictEqual((yield* broker.core.stats).asks, 0)
    }))

  it.effect("question first: an ask under its id is refused E_MESSAGE_ID_REUSE naming the question; the answer is saved", () =>
    Effect.gen(function*() {
      const { bob, child, questions, supervisor } = yield* world
      yield* child.send(questionAsk)
      assert.strictEqual((yield* child.next(["question_result", "question_failed"])).type, "question_result")
      yield* messageFor(supervisor, "q-1")

      const ask = { ...message("left or right?", { expectsReply: true }), id: "q-1" }
      const refused = yield* send(child, "bob", ask)
      assert.strictEqual(refused.type, "delivery_failed", "the ask under the question's id was delivered")
      if (refused.type !== "delivery_failed") return
      assert.strictEqual(refused.code, DeliveryCode.MessageIdReuse)
      assert.include(refused.reason, `"q-1"`)
      assert.include(refused.reason, "durable question")
      assert.include(refused.reason, "unique per sender")
      yield* bob.roundTrip
      yield* bob.expectNothing("message", (frame) => frame.message.id === "q-1")

      const answer = message("go left", { replyTo: "q-1" })
      const verdict = yield* send(supervisor, "child-worker", answer)
      assert.strictEqual(verdict.type, "delivered", `the supervisor's answer was refused: ${verdict.type === "delivery_failed" ? verdict.reason : ""}`)
      yield* messageFor(child, answer.id)
      yield* child.roundTrip
      assert.strictEqual(questions.records.get("q-1")?.answer, "go left")
    }))

  it.effect("question asked, an ask under its id in the same write: the ask is refused before the question is saved", () =>
    Effect.gen(function*() {
      const { child, questions, supervisor } = yield* world
      const ask = { ...message("left or right?", { expectsReply: true }), id: "q-1" }
      // One write: the Router reads both frames before the question fiber saves the question.
      yield* child.sendRaw(encodeFrames([JSON.stringify(questionAsk), JSON.stringify({ type: "send", to: "bob", message: ask })]))
      const refused = yield* child.next(["delivered", "delivery_failed"], (f) => f.messageId === "q-1")
      assert.strictEqual(refused.type, "delivery_failed", "the ask sent as its question was being saved was delivered")
      if (refused.type !== "delivery_failed") return
      assert.strictEqual(refused.code, DeliveryCode.MessageIdReuse)
      assert.strictEqual((yield* child.next(["question_result", "question_failed"])).type, "question_result")
      yield* messageFor(supervisor, "q-1")

      const answer = message("go left", { replyTo: "q-1" })
      const verdict = yield* send(supervisor, "child-worker", answer)
      assert.strictEqual(verdict.type, "delivered", `the supervisor's answer was refused: ${verdict.type === "delivery_failed" ? verdict.reason : ""}`)
      yield* messageFor(child, answer.id)
      yield* child.roundTrip
      assert.strictEqual(questions.records.get("q-1")?.answer, "go left")
    }))
})
