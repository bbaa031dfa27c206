/**
 * A supervisor's reply along a durable question's open edge while this broker holds no notice for it (review revqs
 * probe 1): the edge outlives the notice when the supervisor leaves and registers again before the question fiber
 * notifies it again (`SupervisorBack`), and after a durable broker's restart (the edge restored, no notice until the
 * child asks again). With no notice the reply can be neither sized nor saved as the answer, so `Questions.replySize`
 * refuses it `E_DELIVERY_FAILED`, retryable (not recorded): nothing reaches the child, nothing is saved, the question
 * waits on its edge, and the same reply sent again once the question is notified again is delivered and saved
 * (C-DQ-7). Before, it was delivered, closing the edge, and no answer was saved. "Before the fiber notifies" is made
 * exact by a question store whose first `list` waits for the test. On brokers over the in-memory network with a
 * memory question store; time passes on the TestClock only as modelled in the restart case: the store writer's lazy
 * flush (`LAZY_FLUSH`), so the question's edge is stored.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message, messageFor, send } from "../support/broker.ts"
import { patientClock } from "../support/memory.ts"
import { questionAsked, storeEdgeAndCrash, supervisorBack } from "../support/questionRestart.ts"
import { FEATURES, holdFirstList, questionAsk, questionWorldOf, SUP, TOKEN } from "../support/questionWorld.ts"
import type { WireClient } from "../support/wire.ts"

const answerTo = (client: WireClient, requestId: string) =>
  client.next(["question_result", "question_failed"], (frame) => frame.requestId === requestId)

/** The code of a send's acknowledgement, or its type when it is not a failure. */
const codeOf = (ack: { readonly type: string; readonly code?: string }) => ack.type === "delivery_failed" ? ack.code : ack.type

/** Whether `client` was sent the message `id`. */
const got = (client: WireClient, id: string) => client.received().some((f) => f.type === "message" && f.message.id === id)

describe("a reply along a question's edge with no notice on this broker", () => {
  it.effect("supervisor back, before it is notified again: refused E_DELIVERY_FAILED retryable, nothing delivered or saved; resent once notified, saved", () =>
    patientClock(Effect.gen(function*() {
      const held = yield* holdFirstList
      const { bob, child, net, questions, supervisor } = yield* questionWorldOf(FEATURES, undefined, held.wrap)
      yield* child.send(questionAsk)
      assert.strictEqual((yield* answerTo(child, questionAsk.requestId)).type, "question_result", "setup: q-1 saved")
      yield* messageFor(supervisor, "q-1")
      yield* supervisor.destroy
      yield* child.roundTrip
      yield* bob.roundTrip
      // Holds the fiber: the reply below is handled by the Router alone, before SupervisorBack's notification.
      yield* child.send({ type: "question_list", requestId: "held" })
      yield* child.roundTrip
      const back = (yield* net.session({ sessionId: SUP, name: "supervisor", frame: { features: FEATURES, ownerToken: TOKEN } })).client
      const reply = message("go left", { replyTo: "q-1" })
      const refused = yield* send(back, "child-worker", reply)
      assert.strictEqual(codeOf(refused), "E_DELIVERY_FAILED")
      assert.isTrue(refused.type === "delivery_failed" && refused.retryable === true, "the refusal is retryable")
      yield* child.roundTrip
      assert.isFalse(got(child, reply.id), "the refused reply reached the child")
      yield* held.release
      yield* answerTo(child, "held")
      yield* messageFor(back, "q-1") // notified again
      assert.isUndefined(questions.records.get("q-1")?.answer, "an answer was saved from the refused reply")
      assert.strictEqual(codeOf(yield* send(back, "child-worker", reply)), "delivered")
      yield* back.send({ type: "question_get", requestId: "g-1", questionId: "q-1" })
      yield* answerTo(back, "g-1")
      assert.strictEqual(questions.records.get("q-1")?.answer, "go left")
    })))

  it.effect("after a durable restart, before the child asks again: refused E_DELIVERY_FAILED, nothing delivered or saved", () =>
    Effect.gen(function*() {
      const world = yield* questionAsked
      assert.strictEqual(world.asked.type, "question_result")
      yield* storeEdgeAndCrash(world) // the question's edge is stored
      yield* world.start()
      const back = yield* supervisorBack(world)
      const { childFrame, net, questions } = world
      const again = yield* net.session({ sessionId: "child-worker", name: "worker", frame: childFrame })
      const reply = message("go left", { replyTo: "q-1" })
      assert.strictEqual(codeOf(yield* send(back.client, "child-worker", reply)), "E_DELIVERY_FAILED")
      // A request through the question fiber: an answer saved from the reply would be behind it.
      yield* back.client.send({ type: "question_get", requestId: "g-1", questionId: "q-1" })
      yield* answerTo(back.client, "g-1")
      yield* again.client.roundTrip
      assert.isFalse(got(again.client, reply.id), "the refused reply reached the child")
      assert.isUndefined(questions.records.get("q-1")?.answer)
    }))
})
