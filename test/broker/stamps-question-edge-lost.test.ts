/**
 * A lost ask ends its own edge only, never a durable question's (Asks.askLost). A question's notification is a frame,
 * not mail, so no mailbox copy of it is ever lost; but a child may send an ordinary ask under its question's id, and
 * the question notified after it opens the question's edge under the same message key (Questions.openEdge), replacing
 * the ask's. `MailDelivery.lost` names the edge it ends by the ask's deadline, a stamp (receipt + timeout), while the
 * question's edge's deadline is on the clock (opened + MAX_ASK_TIMEOUT_MS): while the stamps lead the clock by L, the
 * two agree when the question is notified L after the ask (a 30-day ask). Such an ask's mailbox copy lost then closed
 * the question's edge as withdrawn, and the supervisor's answer was refused. On a durable broker (memory disk) with a
 * memory question store; the stamps are put ahead by a send an hour ahead of the clock, which is then set back. Time
 * passes on the TestClock only as modelled: the store's lazy flush (`LAZY_FLUSH`, so the stored edges can be read),
 * the lead, and the mailbox's retention.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { MAX_ASK_TIMEOUT_MS } from "../../src/protocol/constants.ts"
import { GROUPS_V1, QUESTIONS_V1, RECEIVED_V1, REPLY_ERROR_V1, SUPERVISOR_V1 } from "../../src/protocol/features.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { makeMemory, makeMemoryState, QuestionStore } from "../../src/store/QuestionStore.ts"
import { assertDelivered } from "../support/assertions.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { durableBroker } from "../support/durable.ts"
import { advance, advanceTo, memoryNetwork } from "../support/memory.ts"

const START = 1_000_000_000
const HOUR = 60 * 60 * 1000
const FEATURES = [GROUPS_V1, SUPERVISOR_V1, REPLY_ERROR_V1, QUESTIONS_V1]
const SUP = "sup-0001"
const TOKEN = "owner-token-of-the-supervisor"
/** How long after its `question_ask` is sent the broker opens the question's edge (the wire's send step). */
const ASK_TO_EDGE_MS = 1

describe("a lost ask under its question's id, the stamps an hour ahead of the clock", () => {
  it.effect("the question's edge, notified the lead after the ask, stays open: the supervisor's answer is saved", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(START)
      const net = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const questions = makeMemoryState()
      const broker = yield* Effect.provideService(
        durableBroker(net, disk, { askTimeout: MAX_ASK_TIMEOUT_MS, mailboxRetention: "1 second" }),
        QuestionStore,
        makeMemory(questions)
      )
      const supervisor = yield* net.session({ sessionId: SUP, name: "supervisor", frame: { features: FEATURES, ownerToken: TOKEN } })
      yield* supervisor.client.send({ type: "authorize_supervisor", requestId: "auth", childName: "worker" })
      const { capability } = yield* supervisor.client.next("supervisor_authorized")
      const child = yield* net.session({
        sessionId: "child-worker",
        name: "worker",
        frame: { features: FEATURES, group: "run-1", capability, supervisorSessionId: SUP }
      })
      const bob = yield* net.session({ sessionId: "bob", name: "bob", frame: { features: [GROUPS_V1, RECEIVED_V1], group: "run-1" } })

      // The stamps an hour ahead: a message stamped with the clock there, then the clock set back.
      yield* TestClock.setTime(START + HOUR)
      assertDelivered(yield* send(child.client, "bob", message("m0")))
      yield* TestClock.setTime(START)
      // The child asks bob, for 30 days, under the id it then asks its question by; bob reads it, never confirms.
      const ask = { ...message("which way?", { expectsReply: true }), id: "q-1" }
      assertDelivered(yield* send(child.client, "bob", ask))
      yield* messageFor(bob.client, ask.id)
      yield* advance(LAZY_FLUSH) // the lazy flush's timer: the ask's edge is stored
      const askDeadline = [...disk.edges.values()][0]?.deadline ?? assert.fail("setup: the ask's edge is not stored")
      assert.isAbove(askDeadline, START + HOUR + MAX_ASK_TIMEOUT_MS - 1, "setup: the ask was not stamped ahead")

      // The question, the lead later: its edge (on the clock) gets the ask's deadline (a stamp).
      yield* advanceTo(askDeadline - MAX_ASK_TIMEOUT_MS - ASK_TO_EDGE_MS)
      yield* child.client.send({ type: "question_ask", requestId: "r-1", questionId: "q-1", reason: "need_decision", text: "Which way?" })
      assert.strictEqual((yield* child.client.next(["question_result", "question_failed"])).type, "question_result")
      yield* messageFor(supervisor.client, "q-1")
      yield* advance(LAZY_FLUSH) // the question's edge stored over the ask's
      const stored = [...disk.edges.values()]
      assert.strictEqual(stored.length, 1, "setup: not one stored edge")
      assert.include(stored[0]!.text, `"question":true`, "setup: the stored edge is not the question's")
      assert.strictEqual(stored[0]!.deadline, askDeadline, "setup: the question's edge's deadline is not the ask's")

      // bob leaves without confirming: the ask's copy goes back to the mailbox, where it outlives the retention.
      yield* bob.client.destroy
      yield* child.client.next("session_left", (frame) => frame.sessionId === "bob")
      yield* advance("2 seconds")
      yield* net.session({ sessionId: "someone-else" }) // a registration prunes the mailbox
      yield* child.client.next("message_receipt", (f) => f.receipt.messageId === ask.id && f.receipt.status === "expired")

      assert.strictEqual((yield* broker.core.stats).asks, 1, "the lost ask closed its question's edge")
      const answer = message("go left", { replyTo: "q-1" })
      const verdict = yield* send(supervisor.client, "child-worker", answer)
      assert.strictEqual(verdict.type, "delivered", `the supervisor's answer was refused: ${verdict.type === "delivery_failed" ? verdict.reason : ""}`)
      yield* messageFor(child.client, answer.id)
      yield* child.client.roundTrip
      assert.strictEqual(questions.records.get("q-1")?.answer, "go left")
    }))
})
