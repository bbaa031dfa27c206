/**
 * A base supervisor's reply settles the durable question it answers (task qbase2): the supervisor left and came back
 * without `questions-v1` (a base pi-intercom client), so the broker holds no notice for the question, and its reply
 * along the question's open edge is handled as a notified supervisor's live reply is — delivered at once, in its
 * sender's order, and its answer queued to the question fiber from the same `delivered` hook
 * (`Questions.unnotifiedAnswer`). So the question is marked answered, a `questions-v1` supervisor that takes the id
 * over later is not notified of it again, and a restart finds it answered; a question store that fails to save it
 * leaves the reply delivered and the question waiting, as for a notified supervisor's reply; with no notice there was
 * no room to size it against before delivery, so the fiber sizes it and does not save one too large. Before, nothing
 * was saved: the question stayed `awaiting_input`. On durable brokers over the in-memory network with a memory question
 * store whose state plays the disk; no sleep: each step waits on the frame it needs, or on a round trip — a
 * `question_get` goes through the question fiber's queue behind the reply's answer, so its answer follows the save.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Ref } from "effect"
import { TestClock } from "effect/testing"
import { GROUPS_V1, REPLY_ERROR_V1, SUPERVISOR_V1 } from "../../src/protocol/features.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { makeMemory, makeMemoryState, QuestionStore } from "../../src/store/QuestionStore.ts"
import { QuestionStoreFailure } from "../../src/store/questionModel.ts"
import { ackFor, message, messageFor, send } from "../support/broker.ts"
import { durableBroker } from "../support/durable.ts"
import { memoryNetwork, type MemoryNetwork, patientClock } from "../support/memory.ts"
import { askedAgainAfterRestart, questionAsked, readQuestion } from "../support/questionRestart.ts"
import { FEATURES, questionAsk, questionWorldOf, START, SUP, TOKEN } from "../support/questionWorld.ts"
import type { WireClient } from "../support/wire.ts"

const answerTo = (client: WireClient, requestId: string) =>
  client.next(["question_result", "question_failed"], (frame) => frame.requestId === requestId)

/** The code of a send's acknowledgement, or its type when it is not a failure. */
const codeOf = (ack: { readonly type: string; readonly code?: string }) => ack.type === "delivery_failed" ? ack.code : ack.type

/** Whether `client` was sent the message `id`. */
const got = (client: WireClient, id: string) => client.received().some((f) => f.type === "message" && f.message.id === id)

/** The supervisor's features without `questions-v1`: a base client's, with the supervisor channel. */
const BASE = [GROUPS_V1, SUPERVISOR_V1, REPLY_ERROR_V1]

/**
 * A `questions-v1` supervisor taking `SUP` over: whether it was sent the notification `q-1` once the question fiber
 * has handled its return (`SupervisorBack`, queued at its register; its `question_list`, queued after, answered).
 */
const notifiedOnReturn = (net: MemoryNetwork) =>
  Effect.gen(function*() {
    const v1 = (yield* net.session({ sessionId: SUP, name: "supervisor", frame: { features: FEATURES, ownerToken: TOKEN } })).client
    yield* v1.send({ type: "question_list", requestId: "l-1" })
    assert.strictEqual((yield* answerTo(v1, "l-1")).type, "question_result")
    return got(v1, "q-1")
  })

/** The world with `q-1` asked and notified, its supervisor gone and back without `questions-v1` (`base`). */
const baseBack = (world: Effect.Success<ReturnType<typeof questionWorldOf>>) =>
  Effect.gen(function*() {
    const { child, net, supervisor } = world
    yield* child.send(questionAsk)
    assert.strictEqual((yield* answerTo(child, questionAsk.requestId)).type, "question_result", "setup: q-1 saved")
    yield* messageFor(supervisor, "q-1")
    yield* supervisor.destroy
    yield* child.roundTrip
    return (yield* net.session({ sessionId: SUP, name: "supervisor", frame: { features: BASE, ownerToken: TOKEN } })).client
  })

describe("a base supervisor's reply along a durable question's edge", () => {
  it.effect("is delivered and saved as the answer; a questions-v1 supervisor back later is not notified of it", () =>
    patientClock(Effect.gen(function*() {
      const world = yield* questionWorldOf(FEATURES)
      const { child, net, questions } = world
      const base = yield* baseBack(world)
      const reply = message("go left", { replyTo: "q-1" })
      assert.strictEqual(codeOf(yield* send(base, "child-worker", reply)), "delivered")
      yield* messageFor(child, reply.id)
      // Behind the reply's answer in the question fiber's queue: saved by the time it is answered.
      assert.deepStrictEqual(yield* readQuestion(child, "g-1"), { state: "answer_pending", answer: "go left" })
      assert.strictEqual(questions.records.get("q-1")?.answer, "go left")
      // The child still waits on it (it has not confirmed): a question still waiting would be notified now.
      yield* base.roundTrip
      assert.isFalse(yield* notifiedOnReturn(net), "the questions-v1 supervisor was notified of the answered question")
      // The child confirms the reply as its answer, as DurableQuestion does.
      yield* child.send({ type: "question_received", questionId: "q-1" })
      assert.deepStrictEqual(yield* readQuestion(child, "g-2"), { state: "answered", answer: "go left" })
    })))

  it.effect("reaches the child before the base supervisor's next plain message to it, sent in the same write, and is saved as the answer", () =>
    patientClock(Effect.gen(function*() {
      // Child and supervisor in no group (the supervisor's plain message must reach the child; from another group
      // it would be refused E_CROSS_GROUP), on a durable broker with a memory question store.
      yield* TestClock.setTime(START)
      const net = yield* memoryNetwork()
      yield* Effect.provideService(durableBroker(net, makeMemoryMailState()), QuestionStore, makeMemory(makeMemoryState()))
      const supervisor = (yield* net.session({ sessionId: SUP, name: "supervisor", frame: { features: FEATURES, ownerToken: TOKEN } })).client
      yield* supervisor.send({ type: "authorize_supervisor", requestId: "auth", childName: "worker" })
      const { capability } = yield* supervisor.next("supervisor_authorized")
      const childFrame = { features: FEATURES, capability, supervisorSessionId: SUP }
      const child = (yield* net.session({ sessionId: "child-worker", name: "worker", frame: childFrame })).client
      yield* child.send(questionAsk)
      assert.strictEqual((yield* answerTo(child, questionAsk.requestId)).type, "question_result", "setup: q-1 saved")
      yield* messageFor(supervisor, "q-1")
      yield* supervisor.destroy
      yield* child.roundTrip
      const base = (yield* net.session({ sessionId: SUP, name: "supervisor", frame: { features: BASE, ownerToken: TOKEN } })).client
      const reply = message("go left", { replyTo: "q-1" })
      const after = message("and then stop")
      yield* base.sendAll([
        { type: "send", to: "child-worker", message: reply },
        { type: "send", to: "child-worker", message: after }
      ])
      assert.strictEqual(codeOf(yield* ackFor(base, reply.id)), "delivered")
      assert.strictEqual(codeOf(yield* ackFor(base, after.id)), "delivered")
      yield* messageFor(child, after.id)
      const order = child.received().flatMap((f) =>
        f.type === "message" && (f.message.id === reply.id || f.message.id === after.id) ? [f.message.id] : []
      )
      assert.deepStrictEqual(order, [reply.id, after.id], "the base supervisor's messages reached the child out of its order")
      // The reply was the answer too (behind it in the question fiber's queue).
      assert.deepStrictEqual(yield* readQuestion(child, "g-1"), { state: "answer_pending", answer: "go left" })
    })))

  it.effect("durable: restarted after the reply was saved, the broker pushes the saved answer to the child asking again and notifies nobody", () =>
    patientClock(Effect.gen(function*() {
      const world = yield* questionAsked
      const { child, first, net, supervisor } = world
      yield* supervisor.client.destroy
      yield* child.client.roundTrip
      const base = (yield* net.session({ sessionId: SUP, name: "supervisor", frame: { features: BASE, ownerToken: TOKEN } })).client
      const reply = message("go left", { replyTo: "q-1" })
      yield* base.send({ type: "send", to: "child-worker", message: reply })
      yield* messageFor(child.client, reply.id)
      // The barrier for the save: a question_get queued behind the reply's answer in the question fiber.
      assert.deepStrictEqual(yield* readQuestion(child.client, "g-0"), { state: "answer_pending", answer: "go left" })
      yield* first.crash

      // The child back asks again (C-DQ-6): an answered question is pushed to it; one still waiting is notified.
      const { back, again } = yield* askedAgainAfterRestart(world)
      const pushed = yield* again.next("question_answered", (frame) => frame.questionId === "q-1")
      assert.strictEqual(pushed.answer, "go left")
      assert.deepStrictEqual(yield* readQuestion(again, "g-1"), { state: "answer_pending", answer: "go left" })
      yield* back.send({ type: "question_list", requestId: "l-1" })
      yield* answerTo(back, "l-1")
      assert.isFalse(got(back, "q-1"), "the questions-v1 supervisor was notified of the answered question")
    })))

  it.effect("a question store that fails the save: the reply was delivered, the question waits and a questions-v1 supervisor back is notified again", () =>
    patientClock(Effect.gen(function*() {
      const tries = yield* Ref.make(0)
      const world = yield* questionWorldOf(FEATURES, undefined, (memory) => ({
        ...memory,
        answer: () => Effect.andThen(Ref.update(tries, (n) => n + 1), Effect.fail(new QuestionStoreFailure({ detail: "database or disk is full" })))
      }))
      const { child, net, questions } = world
      const base = yield* baseBack(world)
      const reply = message("go left", { replyTo: "q-1" })
      assert.strictEqual(codeOf(yield* send(base, "child-worker", reply)), "delivered")
      yield* messageFor(child, reply.id)
      // Behind the reply's answer in the question fiber's queue: its save was tried, and failed.
      assert.deepStrictEqual(yield* readQuestion(child, "g-1"), { state: "awaiting_input", answer: undefined })
      assert.strictEqual(yield* Ref.get(tries), 1, "the question fiber did not try to save the reply as the answer")
      assert.isUndefined(questions.records.get("q-1")?.answer)
      yield* base.roundTrip
      assert.isTrue(yield* notifiedOnReturn(net), "the questions-v1 supervisor was not notified of the still-waiting question")
    })))

  it.effect("too large as the answer with the question (fits its own frame): delivered, not saved, the question waits", () =>
    patientClock(Effect.gen(function*() {
      const world = yield* questionWorldOf(FEATURES)
      const { child, net, questions, supervisor } = world
      // Half a MiB of question: a reply of 600,000 bytes fits its own frame, not a frame with the question.
      yield* child.send({ ...questionAsk, text: "q".repeat(500_000) })
      assert.strictEqual((yield* answerTo(child, questionAsk.requestId)).type, "question_result", "setup: q-1 saved")
      yield* messageFor(supervisor, "q-1")
      yield* supervisor.destroy
      yield* child.roundTrip
      const base = (yield* net.session({ sessionId: SUP, name: "supervisor", frame: { features: BASE, ownerToken: TOKEN } })).client
      const long = message("a".repeat(600_000), { replyTo: "q-1" })
      assert.strictEqual(codeOf(yield* send(base, "child-worker", long)), "delivered")
      yield* messageFor(child, long.id)
      // Behind the reply's answer in the question fiber's queue: sized there, and not saved.
      assert.deepStrictEqual(yield* readQuestion(child, "g-1"), { state: "awaiting_input", answer: undefined })
      assert.isUndefined(questions.records.get("q-1")?.answer, "an answer too large for its frames was saved")
    })))
})
