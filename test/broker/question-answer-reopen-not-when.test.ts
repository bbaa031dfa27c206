/**
 * A `question_answer` refused while its question waits opens the edge it closed again (`Questions.reopen`, helper
 * fixqa) — but not when, meanwhile, the question was stopped, its child or the supervisor connection notified left,
 * or the question was notified again (docs/protocol.md "Answering by id"). "Meanwhile" is between the answer's
 * arrival (the Router closes the edge) and its refusal (the question fiber): here the fiber is held in a
 * `question_list` an observer sent first (the store's `list` waits for the test), so what the test does next is
 * handled by the Router alone, and the fiber then takes its items in order. Open edges are read from the observer's
 * `stats` (`asks.open`). On a broker over the in-memory network with a memory question store; time moves only by the
 * harness's steps.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { QUESTIONS_V1, STATS_V1 } from "../../src/protocol/features.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { FEATURES, holdFirstList, questionAsk, questionWorldOf, SUP, TOKEN } from "../support/questionWorld.ts"
import type { WireClient } from "../support/wire.ts"

const answerTo = (client: WireClient, requestId: string) =>
  client.next(["question_result", "question_failed"], (frame) => frame.requestId === requestId)

/** How many ask edges are open, from `observer`'s `stats`. */
const openEdges = (observer: WireClient) =>
  Effect.gen(function*() {
    const requestId = `stats-${observer.count("stats_result")}`
    yield* observer.send({ type: "stats", requestId })
    const answer = yield* observer.next("stats_result", (frame) => frame.requestId === requestId)
    return answer.stats.asks.open
  })

/** The copies of question `q-1`'s notification `client` was written. */
const notificationsOf = (client: WireClient) =>
  client.received().filter((frame) => frame.type === "message" && frame.message.id === "q-1").length

/**
 * The question `q-1` asked, saved and notified (its edge open), then the fiber held: the world, an `observer` granted
 * `stats-v1`, and `release`, which lets the fiber go on.
 */
const heldWorld = Effect.gen(function*() {
  const held = yield* holdFirstList
  const world = yield* questionWorldOf(FEATURES, undefined, held.wrap)
  const { client: observer } = yield* world.net.session({
    sessionId: "observer",
    name: "observer",
    frame: { features: [QUESTIONS_V1, STATS_V1] }
  })
  yield* world.child.send(questionAsk)
  assert.strictEqual((yield* answerTo(world.child, questionAsk.requestId)).type, "question_result", "setup: not saved")
  yield* messageFor(world.supervisor, "q-1")
  assert.strictEqual(yield* openEdges(observer), 1, "setup: the question's edge is not open")
  yield* observer.send({ type: "question_list", requestId: "held" })
  yield* observer.roundTrip
  return { ...world, observer, release: held.release }
})

const emptyAnswer = { type: "question_answer", requestId: "a-1", questionId: "q-1", text: "   " }

describe("a refused question_answer does not open its edge again when, meanwhile", () => {
  it.effect("the child stopped the question: refused EmptyAnswer, no edge open, a reply refused E_CROSS_GROUP, no answer saved", () =>
    Effect.gen(function*() {
      const { child, observer, questions, release, supervisor } = yield* heldWorld
      yield* child.send({ type: "question_stop", requestId: "s-1", questionId: "q-1" })
      yield* child.roundTrip
      yield* supervisor.send(emptyAnswer)
      yield* supervisor.roundTrip
      yield* release
      const stopped = yield* answerTo(child, "s-1")
      assert.strictEqual(stopped.type, "question_result", "precondition: the stop was refused")
      const refused = yield* answerTo(supervisor, "a-1")
      assert.strictEqual(refused.type === "question_failed" ? refused.error : refused.type, "EmptyAnswer")
      assert.strictEqual(yield* openEdges(observer), 0, "an edge was opened again")
      const ack = yield* send(supervisor, "child-worker", message("left", { replyTo: "q-1" }))
      // Refused as a reply with no edge (docs/protocol.md: before fixqa every refused answer left it so).
      assert.strictEqual(ack.type === "delivery_failed" ? ack.code : ack.type, "E_CROSS_GROUP")
      const record = questions.records.get("q-1")
      assert.isDefined(record?.cancelledAt, "precondition: the question is cancelled")
      assert.isUndefined(record?.answer)
    }))

  it.effect("the supervisor connection notified left: no edge open; back, it is notified again and its reply is the answer", () =>
    Effect.gen(function*() {
      const { net, observer, questions, release, supervisor } = yield* heldWorld
      yield* supervisor.send(emptyAnswer)
      yield* supervisor.roundTrip
      yield* supervisor.destroy
      yield* supervisor.waitGone()
      yield* release
      assert.strictEqual(yield* openEdges(observer), 0, "an edge was opened again for the supervisor that left")
      const { client: back } = yield* net.session({ sessionId: SUP, name: "supervisor", frame: { features: FEATURES, ownerToken: TOKEN } })
      yield* messageFor(back, "q-1")
      const ack = yield* send(back, "child-worker", message("left", { replyTo: "q-1" }))
      assert.strictEqual(ack.type, "delivered", ack.type === "delivery_failed" ? `${ack.code}: ${ack.reason}` : "")
      yield* back.send({ type: "question_get", requestId: "g-1", questionId: "q-1" })
      yield* answerTo(back, "g-1")
      assert.strictEqual(questions.records.get("q-1")?.answer, "left")
      assert.strictEqual(yield* openEdges(observer), 0, "the answered question's edge is still open")
    }))

  it.effect("the child left: refused EmptyAnswer, no edge open, a reply refused E_TARGET_NOT_FOUND, no answer saved", () =>
    Effect.gen(function*() {
      const { child, observer, questions, release, supervisor } = yield* heldWorld
      yield* supervisor.send(emptyAnswer)
      yield* supervisor.roundTrip
      yield* child.destroy
      yield* child.waitGone()
      yield* release
      const refused = yield* answerTo(supervisor, "a-1")
      assert.strictEqual(refused.type === "question_failed" ? refused.error : refused.type, "EmptyAnswer")
      assert.strictEqual(yield* openEdges(observer), 0, "an edge was opened again for the child that left")
      const ack = yield* send(supervisor, "child-worker", message("left", { replyTo: "q-1" }))
      assert.strictEqual(ack.type === "delivery_failed" ? ack.code : ack.type, "E_TARGET_NOT_FOUND")
      assert.isUndefined(questions.records.get("q-1")?.answer)
    }))

  it.effect("it was notified again (the supervisor's new connection): that notice stands, so the child's re-ask does not notify that connection twice, and its reply is the answer", () =>
    Effect.gen(function*() {
      const { child, net, observer, questions, release } = yield* heldWorld
      // A new connection of the supervisor (a takeover, P16) is to be notified again; it answers at once, empty.
      const { client: next } = yield* net.session({ sessionId: SUP, name: "supervisor", frame: { features: FEATURES, ownerToken: TOKEN } })
      yield* next.send(emptyAnswer)
      yield* next.roundTrip
      yield* release
      const refused = yield* answerTo(next, "a-1")
      assert.strictEqual(refused.type === "question_failed" ? refused.error : refused.type, "EmptyAnswer")
      assert.strictEqual(notificationsOf(next), 1, "precondition: the new connection was notified again")
      // The child asks again (C-DQ-6): the connection it notified is not notified twice.
      yield* child.send({ ...questionAsk, requestId: "r-2" })
      assert.strictEqual((yield* answerTo(child, "r-2")).type, "question_result")
      yield* next.roundTrip
      assert.strictEqual(notificationsOf(next), 1, "the new connection was notified twice")
      assert.strictEqual(yield* openEdges(observer), 1)
      const ack = yield* send(next, "child-worker", message("left", { replyTo: "q-1" }))
      assert.strictEqual(ack.type, "delivered", ack.type === "delivery_failed" ? `${ack.code}: ${ack.reason}` : "")
      yield* next.send({ type: "question_get", requestId: "g-1", questionId: "q-1" })
      yield* answerTo(next, "g-1")
      assert.strictEqual(questions.records.get("q-1")?.answer, "left")
    }))
})
