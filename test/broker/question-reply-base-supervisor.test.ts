/**
 * A supervisor's reply along a durable question's open edge when its id has no live `questions-v1` session: it
 * registered again without the extension (review revfixqs2 D1), or a session without it took its id over inside a
 * `replace` window before the staged reply was delivered. Such a session is never notified again (`SupervisorBack`
 * needs `questions-v1`) and may not answer by id, so `Questions.replySize` does not refuse the reply as unnotified: it
 * is delivered to the waiting child, as a base supervisor's reply always was, and nothing is saved as the answer
 * (fixqs2 refused it `E_DELIVERY_FAILED`, retryable, with advice it could not follow). On brokers over the in-memory
 * network with a memory question store; time passes on the TestClock only as modelled: the replace window.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DEFAULT_REPLACE_WINDOW_MS } from "../../src/broker/options.ts"
import { DELIVERY_V1, GROUPS_V1, REPLY_ERROR_V1, SUPERVISOR_V1 } from "../../src/protocol/features.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { advance, patientClock } from "../support/memory.ts"
import { FEATURES, questionAsk, questionWorldOf, SUP, TOKEN } from "../support/questionWorld.ts"
import type { WireClient } from "../support/wire.ts"

const answerTo = (client: WireClient, requestId: string) =>
  client.next(["question_result", "question_failed"], (frame) => frame.requestId === requestId)

/** The code of a send's acknowledgement, or its type when it is not a failure. */
const codeOf = (ack: { readonly type: string; readonly code?: string }) => ack.type === "delivery_failed" ? ack.code : ack.type

/** Whether `client` was sent the message `id`. */
const got = (client: WireClient, id: string) => client.received().some((f) => f.type === "message" && f.message.id === id)

/** The supervisor's features without `questions-v1`. */
const BASE = [GROUPS_V1, SUPERVISOR_V1, REPLY_ERROR_V1]

describe("a reply along a question's edge from a supervisor id with no questions-v1 session", () => {
  it.effect("back without questions-v1: delivered to the waiting child, nothing saved as the answer", () =>
    patientClock(Effect.gen(function*() {
      const { bob, child, net, questions, supervisor } = yield* questionWorldOf(FEATURES)
      yield* child.send(questionAsk)
      assert.strictEqual((yield* answerTo(child, questionAsk.requestId)).type, "question_result", "setup: q-1 saved")
      yield* messageFor(supervisor, "q-1")
      yield* supervisor.destroy
      yield* child.roundTrip
      yield* bob.roundTrip
      const back = (yield* net.session({ sessionId: SUP, name: "supervisor", frame: { features: BASE, ownerToken: TOKEN } })).client
      const reply = message("go left", { replyTo: "q-1" })
      assert.strictEqual(codeOf(yield* send(back, "child-worker", reply)), "delivered")
      yield* child.roundTrip
      assert.isTrue(got(child, reply.id), "the reply did not reach the child")
      // Through the question fiber: an answer saved from the reply would be behind it.
      yield* child.send({ type: "question_get", requestId: "g-1", questionId: "q-1" })
      yield* answerTo(child, "g-1")
      assert.isUndefined(questions.records.get("q-1")?.answer)
    })))

  it.effect("staged, its id taken over by a session without questions-v1 before the window closed: delivered to the child", () =>
    Effect.gen(function*() {
      const features = [...FEATURES, DELIVERY_V1]
      const { child, net, questions, supervisor } = yield* questionWorldOf(features)
      yield* child.send(questionAsk)
      assert.strictEqual((yield* answerTo(child, questionAsk.requestId)).type, "question_result", "setup: q-1 saved")
      yield* messageFor(supervisor, "q-1")
      const reply = message("go left", { replyTo: "q-1" })
      yield* supervisor.send({ type: "send", to: "child-worker", message: reply, delivery: "queue", queueMode: "replace", threadId: "answer" })
      const ack = yield* supervisor.next(["delivery_queued", "delivered", "delivery_failed"], (f) => f.messageId === reply.id)
      assert.strictEqual(ack.type, "delivery_queued", "setup: the reply was not staged")
      const again = (yield* net.session({ sessionId: SUP, name: "supervisor", frame: { features: [...BASE, DELIVERY_V1], ownerToken: TOKEN } })).client
      yield* again.roundTrip
      yield* advance(DEFAULT_REPLACE_WINDOW_MS + 1)
      yield* child.roundTrip
      assert.isTrue(got(child, reply.id), "the staged reply did not reach the child")
      yield* child.send({ type: "question_get", requestId: "g-1", questionId: "q-1" })
      yield* answerTo(child, "g-1")
      assert.isUndefined(questions.records.get("q-1")?.answer)
    }))
})
