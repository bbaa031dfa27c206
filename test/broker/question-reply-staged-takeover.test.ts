/**
 * A supervisor's `replace`-staged reply to a durable question (`delivery-v1`: `queue`, `replace`, a `threadId`) whose
 * supervisor takes its id over (P16) before the window closes (review revqs probe 4): Send.deliverStaged checks and
 * delivers it with the attempt it was staged with, its sender the old session, while the question's notice names the
 * new one (`Questions.handOver`). The question's stages know the supervisor by its session key, so the reply is sized
 * and saved as the answer when it is delivered (C-DQ-7); before, it was delivered along the question's edge and
 * nothing was saved. On a broker over the in-memory network with a memory question store; time passes on the
 * TestClock only as modelled: the replace window.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DEFAULT_REPLACE_WINDOW_MS } from "../../src/broker/options.ts"
import { DELIVERY_V1 } from "../../src/protocol/features.ts"
import { message, messageFor } from "../support/broker.ts"
import { advance } from "../support/memory.ts"
import { FEATURES, questionAsk, questionWorldOf, SUP, TOKEN } from "../support/questionWorld.ts"
import type { WireClient } from "../support/wire.ts"

const answerTo = (client: WireClient, requestId: string) =>
  client.next(["question_result", "question_failed"], (frame) => frame.requestId === requestId)

const STAGED = { delivery: "queue", queueMode: "replace", threadId: "answer" }

describe("a staged reply whose supervisor took its id over before the window closed", () => {
  it.effect("is delivered to the child and saved as the question's answer", () =>
    Effect.gen(function*() {
      const features = [...FEATURES, DELIVERY_V1]
      const { child, net, questions, supervisor } = yield* questionWorldOf(features)
      yield* child.send(questionAsk)
      assert.strictEqual((yield* answerTo(child, questionAsk.requestId)).type, "question_result")
      yield* messageFor(supervisor, "q-1")
      const reply = message("go left", { replyTo: "q-1" })
      yield* supervisor.send({ type: "send", to: "child-worker", message: reply, ...STAGED })
      const ack = yield* supervisor.next(["delivery_queued", "delivered", "delivery_failed"], (f) => f.messageId === reply.id)
      assert.strictEqual(ack.type, "delivery_queued", "setup: the reply was not staged")
      // The supervisor takes its id over (the old connection still open).
      const again = (yield* net.session({ sessionId: SUP, name: "supervisor", frame: { features, ownerToken: TOKEN } })).client
      yield* again.send({ type: "question_get", requestId: "g-0", questionId: "q-1" })
      yield* answerTo(again, "g-0")
      yield* advance(DEFAULT_REPLACE_WINDOW_MS + 1)
      yield* child.roundTrip
      assert.isTrue(child.received().some((f) => f.type === "message" && f.message.id === reply.id), "the staged reply was not delivered")
      // Through the question fiber: the answer saved from the reply is behind it.
      yield* again.send({ type: "question_get", requestId: "g-1", questionId: "q-1" })
      yield* answerTo(again, "g-1")
      assert.strictEqual(questions.records.get("q-1")?.answer, "go left")
    }))
})
