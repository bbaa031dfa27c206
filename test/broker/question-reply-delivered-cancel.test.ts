/**
 * A supervisor's reply DELIVERED to its live child and saved as the durable question's answer cannot be cancelled
 * (task fixq3, fixq2's rule for the connected child): its sender's `cancel_message` is refused "cannot be cancelled"
 * naming the question, the child is sent no `message_control`, and the saved answer stays. Before, the cancel was
 * answered `delivered` (P71) and the child told to withdraw the reply while the question kept it as its answer. Both
 * for a `questions-v1` supervisor notified of the question and for a base supervisor's reply (`unnotifiedAnswer`).
 * A send superseding such a reply is refused `E_SUPERSEDE_TARGET` the same way (P72's path).
 * A later plain message under the reply's id (its replay record pushed out by `replayRecords: 1`) is a new message:
 * its cancel is carried out. On durable brokers over the in-memory network with a memory question store; no sleep:
 * each step waits on the frame it needs, or on a round trip on the acting connection, then on the observer.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { Reason } from "../../src/protocol/delivery.ts"
import { GROUPS_V1, REPLY_ERROR_V1, SUPERVISOR_V1 } from "../../src/protocol/features.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { makeMemory, makeMemoryState, QuestionStore } from "../../src/store/QuestionStore.ts"
import { assertDelivered } from "../support/assertions.ts"
import { ackFor, message, messageFor, send } from "../support/broker.ts"
import { durableBroker } from "../support/durable.ts"
import { memoryNetwork, patientClock } from "../support/memory.ts"
import { readQuestion } from "../support/questionRestart.ts"
import { FEATURES, questionAsk, START, SUP, TOKEN } from "../support/questionWorld.ts"
import type { WireClient } from "../support/wire.ts"

const answerTo = (client: WireClient, requestId: string) =>
  client.next(["question_result", "question_failed"], (frame) => frame.requestId === requestId)

/** The supervisor's features without `questions-v1`: a base client's, with the supervisor channel. */
const BASE = [GROUPS_V1, SUPERVISOR_V1, REPLY_ERROR_V1]

/** The cancel's answer to `client` for `id`, as its type and reason. */
const cancelOf = (client: WireClient, id: string) =>
  Effect.gen(function*() {
    yield* client.send({ type: "cancel_message", messageId: id })
    const answer = yield* ackFor(client, id)
    return { type: answer.type, reason: answer.type === "delivery_failed" ? answer.reason : undefined }
  })

/** Whether `client` was sent a `message_control` for `id`. */
const controlled = (client: WireClient, id: string) =>
  client.received().some((f) => f.type === "message_control" && f.control.messageId === id)

/**
 * A durable broker (`replayRecords` when given) with the child and its supervisor in no group (so the supervisor's
 * plain message reaches the child), q-1 asked and the supervisor notified; `base`: the supervisor then gone and back
 * without `questions-v1`. Returns the question store's state, the child and the supervisor that replies.
 */
const asked = (base: boolean, replayRecords?: number) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(START)
    const net = yield* memoryNetwork()
    const questions = makeMemoryState()
    yield* Effect.provideService(
      durableBroker(net, makeMemoryMailState(), replayRecords === undefined ? undefined : { replayRecords }),
      QuestionStore,
      makeMemory(questions)
    )
    const first = (yield* net.session({ sessionId: SUP, name: "supervisor", frame: { features: FEATURES, ownerToken: TOKEN } })).client
    yield* first.send({ type: "authorize_supervisor", requestId: "auth", childName: "worker" })
    const { capability } = yield* first.next("supervisor_authorized")
    const childFrame = { features: FEATURES, capability, supervisorSessionId: SUP }
    const child = (yield* net.session({ sessionId: "child-worker", name: "worker", frame: childFrame })).client
    yield* child.send(questionAsk)
    assert.strictEqual((yield* answerTo(child, questionAsk.requestId)).type, "question_result", "setup: q-1 saved")
    yield* messageFor(first, "q-1")
    if (!base) return { questions, child, supervisor: first }
    yield* first.destroy
    yield* child.roundTrip
    const back = (yield* net.session({ sessionId: SUP, name: "supervisor", frame: { features: BASE, ownerToken: TOKEN } })).client
    return { questions, child, supervisor: back }
  })

/** The supervisor's reply to q-1, delivered to the child and saved as the answer (read back through the fiber). */
const replied = (world: Effect.Success<ReturnType<typeof asked>>) =>
  Effect.gen(function*() {
    const { child, supervisor } = world
    const reply = message("go left", { replyTo: "q-1" })
    assertDelivered(yield* send(supervisor, "child-worker", reply), "socket_delivered")
    yield* messageFor(child, reply.id)
    assert.deepStrictEqual(yield* readQuestion(child, "g-1"), { state: "answer_pending", answer: "go left" }, "setup: saved")
    return reply
  })

describe("a supervisor's cancel of its delivered reply that answered a durable question", () => {
  for (const base of [false, true]) {
    const who = base ? "a base supervisor's" : "a questions-v1 supervisor's"
    it.effect(`${who} is refused as cannot be cancelled, naming the question: no control to the child, the answer stays`, () =>
      patientClock(Effect.gen(function*() {
        const world = yield* asked(base)
        const { child, questions, supervisor } = world
        const reply = yield* replied(world)
        assert.deepStrictEqual(
          yield* cancelOf(supervisor, reply.id),
          { type: "delivery_failed", reason: Reason.cannotCancelAnswer("q-1") },
          "the cancel of a reply saved as a durable question's answer was not refused"
        )
        yield* supervisor.roundTrip
        yield* child.roundTrip
        assert.isFalse(controlled(child, reply.id), "the child was told to withdraw the reply that is its answer")
        assert.deepStrictEqual(yield* readQuestion(child, "g-2"), { state: "answer_pending", answer: "go left" })
        assert.strictEqual(questions.records.get("q-1")?.answer, "go left")
      })))
  }

  for (const base of [false, true]) {
    const who = base ? "a base supervisor's" : "a questions-v1 supervisor's"
    it.effect(`${who} send superseding it is refused E_SUPERSEDE_TARGET naming the question: no control, the answer stays`, () =>
      patientClock(Effect.gen(function*() {
        const world = yield* asked(base)
        const { child, questions, supervisor } = world
        const reply = yield* replied(world)
        const ack = yield* send(supervisor, "child-worker", message("go right", { supersedes: reply.id }))
        assert.strictEqual(ack.type, "delivery_failed", "the supersede of a reply saved as a durable question's answer was not refused")
        if (ack.type === "delivery_failed") {
          assert.strictEqual(ack.code, "E_SUPERSEDE_TARGET")
          assert.strictEqual(ack.reason, Reason.supersedeAnswer("q-1"))
        }
        yield* supervisor.roundTrip
        yield* child.roundTrip
        assert.isFalse(controlled(child, reply.id), "the child was told to withdraw the reply that is its answer")
        assert.strictEqual(questions.records.get("q-1")?.answer, "go left")
      })))
  }

  it.effect("a later plain message under the reply's id is a new message: its cancel reaches the child", () =>
    patientClock(Effect.gen(function*() {
      const world = yield* asked(false, 1)
      const { child, supervisor } = world
      const reply = yield* replied(world)
      // Another send pushes the reply's replay record out (`replayRecords: 1`): the id is free for a new message.
      assertDelivered(yield* send(supervisor, "child-worker", message("between")), "socket_delivered")
      const later = { ...message("a plain note"), id: reply.id }
      assertDelivered(yield* send(supervisor, "child-worker", later), "socket_delivered")
      yield* messageFor(child, reply.id)
      assert.deepStrictEqual(yield* cancelOf(supervisor, reply.id), { type: "delivered", reason: undefined })
      const control = yield* child.next("message_control", (frame) => frame.control.messageId === reply.id)
      assert.strictEqual(control.control.action, "cancel")
      assert.deepStrictEqual(yield* readQuestion(child, "g-2"), { state: "answer_pending", answer: "go left" })
    })))
})
