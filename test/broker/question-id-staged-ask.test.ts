/**
 * A child's question under the id of its `replace`-staged ask (`delivery-v1`) is refused (review revcf, item R1,
 * probe 1). A staged ask has no edge until its window closes, so before the fix the question was saved, and at the
 * window's close the staged ask — the first of the two messages under that id, accepted with `delivery_queued` — was
 * refused E_MESSAGE_ID_REUSE (an `expired` receipt). One id, one message (docs/protocol.md) refuses the second:
 * Questions.onAsk reads ReplaceStaging.stagedAsk. On a broker over the in-memory network with a memory question
 * store. Time passes on the TestClock only as modelled: the replace window (5 s).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { DELIVERY_V1, GROUPS_V1, QUESTIONS_V1, REPLY_ERROR_V1, SUPERVISOR_V1 } from "../../src/protocol/features.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { makeMemory, makeMemoryState, QuestionStore } from "../../src/store/QuestionStore.ts"
import { message } from "../support/broker.ts"
import { durableBroker } from "../support/durable.ts"
import { memoryNetwork } from "../support/memory.ts"

const START = 1_000_000_000
const WINDOW_MS = 5_000
const FEATURES = [GROUPS_V1, SUPERVISOR_V1, REPLY_ERROR_V1, QUESTIONS_V1, DELIVERY_V1]
const SUP = "sup-0001"
const TOKEN = "owner-token-of-the-supervisor"

describe("a child's staged ask, then a question under its id", () => {
  it.effect("the question is refused QuestionIdTaken naming the ask's target (bob), and the staged ask gets no receipt at its window's close", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(START)
      const net = yield* memoryNetwork()
      const questions = makeMemoryState()
      yield* Effect.provideService(
        durableBroker(net, makeMemoryMailState(), { replaceWindow: WINDOW_MS }),
        QuestionStore,
        makeMemory(questions)
      )
      const supervisor = yield* net.session({ sessionId: SUP, name: "supervisor", frame: { features: FEATURES, ownerToken: TOKEN } })
      yield* supervisor.client.send({ type: "authorize_supervisor", requestId: "auth", childName: "worker" })
      const { capability } = yield* supervisor.client.next("supervisor_authorized")
      const child = (yield* net.session({
        sessionId: "child-worker",
        name: "worker",
        frame: { features: FEATURES, group: "run-1", capability, supervisorSessionId: SUP }
      })).client
      const bob = (yield* net.session({ sessionId: "bob", name: "bob", frame: { features: [GROUPS_V1], group: "run-1" } })).client

      const ask = { ...message("left or right?", { expectsReply: true }), id: "q-1" }
      yield* child.send({ type: "send", to: "bob", message: ask, delivery: "queue", queueMode: "replace", threadId: "t" })
      const ack = yield* child.next(["delivered", "delivery_queued", "delivery_failed"], (f) => f.messageId === "q-1")
      assert.strictEqual(ack.type, "delivery_queued", "setup: the ask was not staged")

      yield* child.send({ type: "question_ask", requestId: "r-1", questionId: "q-1", reason: "need_decision", text: "Which way?" })
      const verdict = yield* child.next(["question_result", "question_failed"])
      assert.strictEqual(
        verdict.type === "question_failed" ? verdict.error : verdict.type,
        "QuestionIdTaken",
        "the question under the id of the child's accepted (staged) ask was saved"
      )
      assert.include(verdict.type === "question_failed" ? verdict.reason : "", "an ask this session sent to bob")

      yield* TestClock.adjust(WINDOW_MS + 1)
      yield* child.roundTrip
      yield* bob.roundTrip
      const receipts = child.received().flatMap((f) =>
        f.type === "message_receipt" && f.receipt.messageId === "q-1" ? [`${f.receipt.status}: ${f.receipt.detail ?? ""}`] : []
      )
      assert.deepStrictEqual(receipts, [], "the accepted staged ask was refused at its window's close")
    }))
})
