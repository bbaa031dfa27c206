/**
 * A child asking again a question its supervisor stopped (C-DQ-11) is told it was cancelled, and does not wait on it
 * (helper oneid2, item 3: a review's suspicion that QuestionWorker marked it waiting again — it did, and the ask
 * below was refused until the child left). Seen as a waiting
 * question's only effect outside the question fiber: a send under its id (one id, one message) — refused
 * E_MESSAGE_ID_REUSE while the child waits on the question, delivered once it does not. On a broker over the
 * in-memory network with a memory question store; no time passes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { assertDelivered } from "../support/assertions.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { questionAsk, questionWorld as world } from "../support/questionWorld.ts"

describe("a stopped question asked again", () => {
  it.effect("the child is told question_cancelled, and its ask to bob under the id is delivered: it does not wait on it", () =>
    Effect.gen(function*() {
      const { bob, child, supervisor } = yield* world
      yield* child.send(questionAsk)
      assert.strictEqual((yield* child.next(["question_result", "question_failed"])).type, "question_result")
      yield* messageFor(supervisor, "q-1")
      yield* supervisor.send({ type: "question_stop", requestId: "s-1", questionId: "q-1" })
      assert.strictEqual((yield* supervisor.next(["question_result", "question_failed"], (f) => f.requestId === "s-1")).type, "question_result")
      yield* child.next("question_cancelled", (f) => f.questionId === "q-1")

      yield* child.send({ ...questionAsk, requestId: "r-2" })
      const again = yield* child.next(["question_result", "question_failed"], (f) => f.requestId === "r-2")
      assert.strictEqual(again.type, "question_result")
      yield* child.next("question_cancelled", (f) => f.questionId === "q-1")

      const ask = { ...message("left or right?", { expectsReply: true }), id: "q-1" }
      const answer = yield* send(child, "bob", ask)
      assertDelivered(answer)
      yield* messageFor(bob, "q-1")
    }))
})
