/**
 * One id, one message, for plain sends too (helper oneid2): a durable question's notification is a message from
 * its child under `id = questionId`, and the supervisor's client drops a second message from the child under one
 * id as one it has had (P50's de-duplication, RecentMessages.ts). So a child's plain send under the id of its live
 * question is refused E_MESSAGE_ID_REUSE (Questions.stage), and its question under the id of a message it sent that
 * P46's record still names is refused QuestionIdTaken (Questions.onAsk) — before, the first was delivered and the
 * second saved and notified, each to be dropped by the supervisor's client as a duplicate. Another sender's message
 * under that id is not the child's: delivered as ever (P46 keys by sender). The child reaches its supervisor on the
 * supervisor channel (`supervisor_send`). On a broker over the in-memory network
 * with a memory question store; no time passes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DeliveryCode } from "../../src/protocol/delivery.ts"
import type { Message } from "../../src/protocol/frames.ts"
import { assertDelivered } from "../support/assertions.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { questionAsk, questionWorld as world } from "../support/questionWorld.ts"
import type { WireClient } from "../support/wire.ts"

const SUP = "sup-0001"
/** The child's message to its supervisor, on the supervisor channel (`supervisor_send`, Supervisor.ts), and its answer. */
const toSupervisor = (child: WireClient, msg: Message) =>
  Effect.andThen(
    child.send({ type: "supervisor_send", to: SUP, message: msg }),
    child.next(["delivered", "delivery_failed"], (frame) => frame.messageId === msg.id)
  )

describe("one id for a child's plain send and its durable question", () => {
  it.effect("question first: a plain send to the supervisor under its id is refused E_MESSAGE_ID_REUSE naming the question; the answer is saved", () =>
    Effect.gen(function*() {
      const { child, questions, supervisor } = yield* world
      yield* child.send(questionAsk)
      assert.strictEqual((yield* child.next(["question_result", "question_failed"])).type, "question_result")
      yield* messageFor(supervisor, "q-1")

      const note = { ...message("by the way"), id: "q-1" }
      const refused = yield* toSupervisor(child, note)
      assert.strictEqual(refused.type, "delivery_failed", "the plain send under the question's id was delivered")
      if (refused.type !== "delivery_failed") return
      assert.strictEqual(refused.code, DeliveryCode.MessageIdReuse)
      assert.include(refused.reason, `"q-1"`)
      assert.include(refused.reason, "durable question")
      assert.include(refused.reason, "with a new id")
      yield* supervisor.roundTrip
      yield* supervisor.expectNothing("message", (frame) => frame.message.id === "q-1")

      const answer = message("go left", { replyTo: "q-1" })
      assert.strictEqual((yield* send(supervisor, "child-worker", answer)).type, "delivered")
      yield* messageFor(child, answer.id)
      yield* child.roundTrip
      assert.strictEqual(questions.records.get("q-1")?.answer, "go left")
    }))

  it.effect("plain send first: a question under its id is refused QuestionIdTaken naming the message's target; nothing is saved or notified", () =>
    Effect.gen(function*() {
      const { child, questions, supervisor } = yield* world
      const note = { ...message("by the way"), id: "q-1" }
      assertDelivered(yield* toSupervisor(child, note))
      yield* messageFor(supervisor, "q-1")

      yield* child.send(questionAsk)
      const verdict = yield* child.next(["question_result", "question_failed"])
      assert.strictEqual(verdict.type, "question_failed", "the question under the plain send's id was saved")
      if (verdict.type !== "question_failed") return
      assert.strictEqual(verdict.error, "QuestionIdTaken")
      assert.include(verdict.reason, `"q-1"`)
      assert.include(verdict.reason, `a message this session sent to ${SUP}`)
      assert.include(verdict.reason, "Ask the question with a new id")
      assert.isUndefined(questions.records.get("q-1"), "the question was saved")
      yield* supervisor.roundTrip
      yield* supervisor.expectNothing("message", (frame) => frame.message.id === "q-1")
    }))

  it.effect("another sender's (bob's, a base client's) plain send under the child's question id is delivered (ids are per sender)", () =>
    Effect.gen(function*() {
      const { bob, child, supervisor } = yield* world
      yield* child.send(questionAsk)
      assert.strictEqual((yield* child.next(["question_result", "question_failed"])).type, "question_result")
      yield* messageFor(supervisor, "q-1")

      const note = { ...message("from bob"), id: "q-1" }
      assertDelivered(yield* send(bob, "worker", note))
      yield* messageFor(child, "q-1")
    }))
})
