/**
 * A lost ask ends its own edge only, never a durable question's (Asks.askLost). `MailDelivery.lost` names the edge it
 * ends by key and by the ask's deadline, a stamp (receipt + timeout), while a question's edge's deadline is on the
 * clock (opened + MAX_ASK_TIMEOUT_MS): while the stamps lead the clock by L, the two agree when the question is
 * notified L after the ask (a 30-day ask). Helper stampq found a child's question asked under the id of its ordinary
 * ask taking the ask's edge over, and the ask's lost mailbox copy then closing the question's edge as withdrawn.
 * Since helper askqkey that question is refused (`QuestionIdTaken`: ids are unique per sender; also
 * question-id-ask-collision.test.ts), so here the child asks it again under a new id, as the refusal says, and the
 * deadlines still agree: the keys tell the edges apart. On a durable broker (memory disk) with a memory question
 * store; the stamps are put ahead by a send an hour ahead of the clock, which is then set back. Time passes on the
 * TestClock only as modelled: the store's lazy flush (`LAZY_FLUSH`, so the stored edges can be read), the lead, and
 * the mailbox's retention.
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

describe("a lost ask and its child's question of the same deadline, the stamps an hour ahead of the clock", () => {
  it.effect("refused under the ask's id, the question asked under a new one keeps its edge: the answer is saved", () =>
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

      // The question, the lead later: refused under the open ask's id, asked again under a new one, whose edge (on
      // the clock) gets the ask's deadline (a stamp).
      // Two sends' steps: the refused `question_ask`, then the one asked again.
      yield* advanceTo(askDeadline - MAX_ASK_TIMEOUT_MS - 2 * ASK_TO_EDGE_MS)
      const question = { type: "question_ask", requestId: "r-1", questionId: "q-1", reason: "need_decision", text: "Which way?" }
      yield* child.client.send(question)
      const refused = yield* child.client.next(["question_result", "question_failed"])
      assert.strictEqual(refused.type === "question_failed" ? refused.error : refused.type, "QuestionIdTaken")
      yield* child.client.send({ ...question, requestId: "r-2", questionId: "q-2" })
      assert.strictEqual((yield* child.client.next(["question_result", "question_failed"])).type, "question_result")
      yield* messageFor(supervisor.client, "q-2")
      yield* advance(LAZY_FLUSH) // the question's edge stored beside the ask's
      const stored = [...disk.edges.values()].filter((edge) => edge.text.includes(`"question":true`))
      assert.strictEqual(stored.length, 1, "setup: not one stored question edge")
      assert.strictEqual(disk.edges.size, 2, "setup: the ask's edge is not stored beside the question's")
      assert.strictEqual(stored[0]!.deadline, askDeadline, "setup: the question's edge's deadline is not the ask's")

      // bob leaves without confirming: the ask's copy goes back to the mailbox, where it outlives the retention.
      yield* bob.client.destroy
      yield* child.client.next("session_left", (frame) => frame.sessionId === "bob")
      yield* advance("2 seconds")
      yield* net.session({ sessionId: "someone-else" }) // a registration prunes the mailbox
      yield* child.client.next("message_receipt", (f) => f.receipt.messageId === ask.id && f.receipt.status === "expired")

      assert.strictEqual((yield* broker.core.stats).asks, 1, "not the question's edge alone open after the ask was lost")
      const answer = message("go left", { replyTo: "q-2" })
      const verdict = yield* send(supervisor.client, "child-worker", answer)
      assert.strictEqual(verdict.type, "delivered", `the supervisor's answer was refused: ${verdict.type === "delivery_failed" ? verdict.reason : ""}`)
      yield* messageFor(child.client, answer.id)
      yield* child.client.roundTrip
      assert.strictEqual(questions.records.get("q-2")?.answer, "go left")
    }))
})
