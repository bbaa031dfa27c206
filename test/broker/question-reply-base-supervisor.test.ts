/**
 * A supervisor's `replace`-staged reply along a durable question's open edge when, before the window closed, a
 * session without `questions-v1` took its id over (review revfixqs2 D1). Such a session is never notified again
 * (`SupervisorBack` needs `questions-v1`) and may not answer by id, so `Questions.replySize` does not refuse the reply
 * as unnotified (fixqs2 refused it `E_DELIVERY_FAILED`, retryable, with advice it could not follow): it is delivered
 * to the waiting child and, as a base supervisor's reply (question-reply-base-saved.test.ts), saved as the answer
 * from the `delivered` hook (qbase2; before, nothing was saved). On brokers over the in-memory network with a memory
 * question store; time passes on the TestClock only as modelled: the replace window.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DEFAULT_REPLACE_WINDOW_MS } from "../../src/broker/options.ts"
import { DELIVERY_V1, GROUPS_V1, REPLY_ERROR_V1, SUPERVISOR_V1 } from "../../src/protocol/features.ts"
import { message, messageFor } from "../support/broker.ts"
import { advance } from "../support/memory.ts"
import { FEATURES, questionAsk, questionWorldOf, SUP, TOKEN } from "../support/questionWorld.ts"
import type { WireClient } from "../support/wire.ts"

const answerTo = (client: WireClient, requestId: string) =>
  client.next(["question_result", "question_failed"], (frame) => frame.requestId === requestId)

/** Whether `client` was sent the message `id`. */
const got = (client: WireClient, id: string) => client.received().some((f) => f.type === "message" && f.message.id === id)

/** The supervisor's features without `questions-v1`. */
const BASE = [GROUPS_V1, SUPERVISOR_V1, REPLY_ERROR_V1]

describe("a reply along a question's edge from a supervisor id with no questions-v1 session", () => {
  it.effect("staged, its id taken over by a session without questions-v1 before the window closed: delivered to the child and saved as the answer", () =>
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
      // Through the question fiber, behind the reply's answer.
      yield* child.send({ type: "question_get", requestId: "g-1", questionId: "q-1" })
      yield* answerTo(child, "g-1")
      assert.strictEqual(questions.records.get("q-1")?.answer, "go left")
    }))
})
