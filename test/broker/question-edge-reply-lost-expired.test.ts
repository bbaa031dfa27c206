/**
 * A reply lost past its ask's deadline, while its asker's durable question under the ask's id holds the key by its
 * own open edge, is owed its asker as `expired` (docs/protocol.md, questions-v1): StaleAsks.replyLost asks whether
 * the ask's own kind of edge is open again (Asks.isOpen with `question`), so the question's edge (same key, a 30-day
 * deadline) does not put the stale ask back to its replier (review revdg3, probe 1; it failed before that).
 *
 * A question's edge holds the key with its child away only after a durable broker's restart (restored before the
 * child asks again, C-DQ-6), so the world is durable: the child asks bob (two-hour ask timeout) and leaves; bob
 * answers before confirming the ask and leaves, so the answered copy goes silently (its debt stored with the reply);
 * past P46's record the child, back, is flushed the reply (unconfirmed) and asks a question under the ask's id, saved
 * and notified (its edge opens, stored). Past the ask's deadline the broker crashes; restarted, the reply, the debt
 * and the question's edge come back. bob, back, withdraws the reply: it is lost past the ask's deadline.
 * Time passes on the TestClock only as modelled waits (the hour of P46's record, the ask's deadline, the store's
 * lazy flush); no sleep is a barrier: round trips on the acting connection, then on the observer.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { REPLAY_WINDOW_MS } from "../../src/protocol/constants.ts"
import { GROUPS_V1, QUESTIONS_V1, RECEIVED_V1, SUPERVISOR_V1 } from "../../src/protocol/features.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { makeMemory, makeMemoryState, QuestionStore } from "../../src/store/QuestionStore.ts"
import { assertDelivered } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { durableBroker } from "../support/durable.ts"
import { advance, memoryNetwork } from "../support/memory.ts"

const HOUR = 3_600_000
const ASK_TIMEOUT_MS = 2 * HOUR
const START = 1_000_000_000
const FEATURES = [GROUPS_V1, SUPERVISOR_V1, QUESTIONS_V1, RECEIVED_V1]
const SUP = "sup-0001"
const TOKEN = "owner-token-of-the-supervisor"

describe("a reply lost past the ask's deadline while a question's open edge holds the ask's id", () => {
  it.effect("its asker, back, is told expired, and the stale ask is not put back to its replier", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(START)
      const net = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const qstate = makeMemoryState()
      const start = () =>
        Effect.provideService(durableBroker(net, disk, { askTimeout: ASK_TIMEOUT_MS }), QuestionStore, makeMemory(qstate))
      const first = yield* start()
      const supervisor = yield* net.session({ sessionId: SUP, name: "supervisor", frame: { features: FEATURES, ownerToken: TOKEN } })
      yield* supervisor.client.send({ type: "authorize_supervisor", requestId: "auth", childName: "worker" })
      const { capability } = yield* supervisor.client.next("supervisor_authorized")
      const childFrame = { features: FEATURES, group: "run-1", capability, supervisorSessionId: SUP }
      const bobFrame = { features: [GROUPS_V1, RECEIVED_V1], group: "run-1" }
      // The child's first connection asks only: no custody needed (received-v1 from its return on).
      const child = yield* net.session({
        sessionId: "child-worker",
        name: "worker",
        frame: { ...childFrame, features: [GROUPS_V1, SUPERVISOR_V1, QUESTIONS_V1] }
      })
      const bob = yield* net.session({ sessionId: "bob", name: "bob", frame: bobFrame })
      // An observer in the child's group: it sees each leave.
      const carol = yield* net.session({ sessionId: "carol", name: "carol", frame: { features: [GROUPS_V1], group: "run-1" } })

      const ask = { ...message("left or right?", { expectsReply: true }), id: "q-1" }
      assertDelivered(yield* send(child.client, "bob", ask))
      yield* messageFor(bob.client, ask.id)
      yield* child.client.destroy
      yield* carol.client.next("session_left", (frame) => frame.sessionId === "child-worker")
      const reply = message("left", { replyTo: ask.id })
      assertDelivered(yield* send(bob.client, "worker", reply), "queued")
      yield* bob.client.destroy
      yield* carol.client.next("session_left", (frame) => frame.sessionId === "bob")
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(disk.silencedAsks.size, 1, "setup: the answered ask's debt was not stored")

      // Past P46's record of the ask: the child, back, asks a question under its id; saved and notified.
      yield* advance(HOUR + REPLAY_WINDOW_MS)
      const bobTick = yield* net.session({ sessionId: "bob", name: "bob", frame: bobFrame })
      assertDelivered(yield* send(bobTick.client, "worker", message("tick")), "queued")
      yield* bobTick.client.destroy
      yield* carol.client.next("session_left", (frame) => frame.sessionId === "bob")
      const back = yield* net.session({ sessionId: "child-worker", name: "worker", frame: childFrame })
      yield* messageFor(back.client, reply.id)
      yield* back.client.send({ type: "question_ask", requestId: "r-1", questionId: "q-1", reason: "need_decision", text: "Which way?" })
      const verdict = yield* back.client.next(["question_result", "question_failed"])
      assert.strictEqual(verdict.type, "question_result", "setup: the question under the ask's id was refused")
      yield* messageFor(supervisor.client, "q-1")
      // Past the ask's deadline, all stored; the broker crashes.
      yield* advance(ASK_TIMEOUT_MS)
      yield* advance(LAZY_FLUSH)
      yield* first.crash

      const second = yield* start()
      assert.strictEqual((yield* second.core.stats).asks, 1, "setup: the question's edge was not restored")
      const supBack = yield* net.session({ sessionId: SUP, name: "supervisor", frame: { features: FEATURES, ownerToken: TOKEN } })
      yield* supBack.client.send({ type: "authorize_supervisor", requestId: "restore", childName: "worker", capability })
      yield* supBack.client.next("supervisor_authorized")
      const bobBack = yield* net.session({ sessionId: "bob", name: "bob", frame: bobFrame })
      yield* bobBack.client.send({ type: "cancel_message", messageId: reply.id })
      yield* settled([bobBack.client])
      const askedAgain = bobBack.client.received().some((f) => f.type === "message" && f.message?.id === ask.id)
      const childAgain = yield* net.session({ sessionId: "child-worker", name: "worker", frame: childFrame })
      yield* settled([childAgain.client])
      const expired = childAgain.client
        .received()
        .some((f) => f.type === "message_receipt" && f.receipt?.messageId === ask.id && f.receipt?.status === "expired")
      assert.deepStrictEqual(
        { expired, askedAgain },
        { expired: true, askedAgain: false },
        "past the ask's deadline its asker was not told expired (the stale ask put back to bob instead?)"
      )
    }))
})
