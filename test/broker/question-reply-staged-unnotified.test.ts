/**
 * A supervisor's `replace`-staged reply to a durable question refused as unnotified when its window closes: inside
 * the window its id was taken over by a session without `questions-v1` (which drops the question's notice) and then
 * again by one with it, before the question fiber notified that one again (`SupervisorBack`), so at the window's
 * close the broker holds no notice for the question and the id's session could be notified (`Questions.unnotified`).
 * ReplaceStaging tells the sender with an `expired` `message_receipt` and records the refusal not retryable, so the reply's id
 * keeps it: the reason says to send the reply again under a new message id (review revfixqs2, LOW; before, it said
 * only "Send the reply again", which under the same id replays the refusal). "Before the fiber notifies" is made
 * exact by a question store whose first `list` waits for the test. On a broker over the in-memory network with a
 * memory question store; time passes on the TestClock only as modelled: the replace window.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DEFAULT_REPLACE_WINDOW_MS } from "../../src/broker/options.ts"
import { DELIVERY_V1, GROUPS_V1, REPLY_ERROR_V1, SUPERVISOR_V1 } from "../../src/protocol/features.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { advance } from "../support/memory.ts"
import { FEATURES, holdFirstList, questionAsk, questionWorldOf, SUP, TOKEN } from "../support/questionWorld.ts"
import type { WireClient } from "../support/wire.ts"

const answerTo = (client: WireClient, requestId: string) =>
  client.next(["question_result", "question_failed"], (frame) => frame.requestId === requestId)

describe("a staged reply refused as unnotified when its window closes", () => {
  it.effect("is told expired, its reason saying to send it again under a new message id; the same id replays the refusal", () =>
    Effect.gen(function*() {
      const features = [...FEATURES, DELIVERY_V1]
      const held = yield* holdFirstList
      const { child, net, questions, supervisor } = yield* questionWorldOf(features, undefined, held.wrap)
      yield* child.send(questionAsk)
      assert.strictEqual((yield* answerTo(child, questionAsk.requestId)).type, "question_result", "setup: q-1 saved")
      yield* messageFor(supervisor, "q-1")
      const reply = message("go left", { replyTo: "q-1" })
      yield* supervisor.send({ type: "send", to: "child-worker", message: reply, delivery: "queue", queueMode: "replace", threadId: "answer" })
      const ack = yield* supervisor.next(["delivery_queued", "delivered", "delivery_failed"], (f) => f.messageId === reply.id)
      assert.strictEqual(ack.type, "delivery_queued", "setup: the reply was not staged")
      // Holds the fiber: the last holder of the id is not notified again before the window closes.
      yield* child.send({ type: "question_list", requestId: "held" })
      yield* child.roundTrip
      const base = [GROUPS_V1, SUPERVISOR_V1, REPLY_ERROR_V1, DELIVERY_V1]
      yield* (yield* net.session({ sessionId: SUP, name: "supervisor", frame: { features: base, ownerToken: TOKEN } })).client.roundTrip
      const last = (yield* net.session({ sessionId: SUP, name: "supervisor", frame: { features, ownerToken: TOKEN } })).client
      yield* last.roundTrip
      yield* advance(DEFAULT_REPLACE_WINDOW_MS + 1)
      const { receipt } = yield* last.next("message_receipt", (f) => f.receipt.messageId === reply.id)
      assert.strictEqual(receipt.status, "expired")
      assert.include(receipt.detail, "cannot be taken yet")
      assert.include(receipt.detail, "under a new message id")
      yield* child.roundTrip
      assert.isFalse(child.received().some((f) => f.type === "message" && f.message.id === reply.id), "the reply reached the child")
      const again = yield* send(last, "child-worker", reply)
      assert.isTrue(again.type === "delivery_failed" && again.retryable === false, "the same id does not replay the refusal")
      assert.include(again.type === "delivery_failed" ? again.reason : "", "cannot be taken yet")
      yield* held.release
      yield* answerTo(child, "held")
      yield* child.send({ type: "question_get", requestId: "g-1", questionId: "q-1" })
      yield* answerTo(child, "g-1")
      assert.isUndefined(questions.records.get("q-1")?.answer)
    }))
})
