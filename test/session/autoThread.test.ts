/**
 * P66 auto-threading: a plain `send` from the asked session to a peer with
 * exactly one live pending ask towards it (named by exact id or by name
 * ignoring case, never by id prefix) answers that ask. Any other send stays
 * plain. Unit tests on the tracker, then end to end on the in-memory broker
 * under TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Queue } from "effect"
import { randomUUID } from "node:crypto"
import type { Message, SessionInfo } from "../../src/protocol/frames.ts"
import { deliveryError } from "../../src/client/errors.ts"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import { AskNoLongerOpen } from "../../src/session/errors.ts"
import { makeReplyTracker } from "../../src/session/ReplyTracker.ts"
import { memoryWorld } from "../support/memoryWorld.ts"
import { B, inboundMessage, info, settle, withPeers } from "./support.ts"

const ASKER = info("asker-0000-1111-2222", { name: "Planner" })
const OTHER = info("other-0000-1111-2222", { name: "Reviewer" })

const askFrom = (from: SessionInfo, receivedAt = 0, askTimeoutMs?: number) => ({
  from,
  message: { id: randomUUID(), timestamp: 0, content: { text: "q" }, expectsReply: true } satisfies Message,
  receivedAt,
  ...(askTimeoutMs === undefined ? {} : { askTimeoutMs })
})

describe("ReplyTracker.autoThread", () => {
  it("one pending ask from the peer: matched by exact id or by name ignoring case", () => {
    const tracker = makeReplyTracker(600_000)
    const ask = askFrom(ASKER)
    tracker.record(ask)
    tracker.record(askFrom(OTHER))
    assert.strictEqual(tracker.autoThread(ASKER.id, ASKER.id, 1)?.message.id, ask.message.id)
    assert.strictEqual(tracker.autoThread(" planner ", ASKER.id, 1)?.message.id, ask.message.id)
    assert.strictEqual(tracker.autoThread("PLANNER", ASKER.id, 1)?.message.id, ask.message.id)
  })

  it("an id prefix never matches, however long", () => {
    const tracker = makeReplyTracker(600_000)
    tracker.record(askFrom(ASKER))
    assert.isUndefined(tracker.autoThread(ASKER.id.slice(0, 8), ASKER.id, 1))
    assert.isUndefined(tracker.autoThread(ASKER.id.slice(0, -1), ASKER.id, 1))
  })

  it("two pending asks from the peer: no guess", () => {
    const tracker = makeReplyTracker(600_000)
    tracker.record(askFrom(ASKER))
    tracker.record(askFrom(ASKER))
    assert.isUndefined(tracker.autoThread("Planner", ASKER.id, 1))
  })

  it("a target that resolved to another session, an expired ask, or a plain message never match", () => {
    const tracker = makeReplyTracker(600_000)
    tracker.record(askFrom(ASKER, 0, 1_000))
    assert.isUndefined(tracker.autoThread("Planner", OTHER.id, 1))
    assert.isUndefined(tracker.autoThread("Planner", ASKER.id, 1_001))
    const plain = makeReplyTracker(600_000)
    plain.record({ from: ASKER, message: { id: "m", timestamp: 0, content: { text: "fyi" } }, receivedAt: 0 })
    assert.isUndefined(plain.autoThread("Planner", ASKER.id, 1))
  })
})

describe("auto-threading end to end (P66)", () => {
  it.effect("a plain send to the asker by name settles its one pending ask: the asker stops waiting", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const asker = yield* world.session("asker-0000-aaaa", { name: "Planner" })
      const answerer = yield* world.session("answerer-0000-bbbb", { name: "Worker" })
      const asking = yield* Effect.forkChild(asker.session.ask({ to: "Worker", message: "status?" }))
      const question = yield* Queue.take(answerer.inbound)
      const sent = yield* answerer.session.send({ to: "planner", message: "all green" })
      assert.strictEqual(sent._tag, "Sent")
      if (sent._tag === "Sent") assert.strictEqual(sent.replyTo, question.message.id)
      const answer = yield* Fiber.join(asking)
      assert.strictEqual(answer._tag, "Replied")
      if (answer._tag === "Replied") assert.strictEqual(answer.reply.content.text, "all green")
      assert.deepStrictEqual((yield* answerer.session.pending).asks, [])
    }))

  it.effect("by exact id too; by an id prefix never: the send stays plain and the ask keeps waiting", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const asker = yield* world.session("asker-0000-aaaa", { name: "Planner" })
      const answerer = yield* world.session("answerer-0000-bbbb", { name: "Worker" })
      const asking = yield* Effect.forkChild(asker.session.ask({ to: "Worker", message: "status?" }))
      const question = yield* Queue.take(answerer.inbound)
      const byPrefix = yield* answerer.session.send({ to: "asker-0000", message: "side note" })
      assert.strictEqual(byPrefix._tag === "Sent" ? byPrefix.replyTo : "declined", undefined)
      const note = yield* Queue.take(asker.inbound)
      assert.strictEqual(note.message.content.text, "side note")
      assert.isUndefined(note.message.replyTo)
      assert.isTrue(yield* asker.session.waiting)
      assert.strictEqual((yield* answerer.session.pending).asks[0]?.message.id, question.message.id)
      const byId = yield* answerer.session.send({ to: "asker-0000-aaaa", message: "done" })
      assert.strictEqual(byId._tag === "Sent" ? byId.replyTo : undefined, question.message.id)
      const answer = yield* Fiber.join(asking)
      assert.strictEqual(answer._tag === "Replied" ? answer.reply.content.text : answer._tag, "done")
    }))

  it.effect("two pending asks from the same peer: a plain send answers neither", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const asker = yield* world.session("asker-0000-aaaa", { name: "Planner" })
      const answerer = yield* world.session("answerer-0000-bbbb", { name: "Worker" })
      // Two asks at once are only possible below the session's single reply waiter: straight from the client.
      for (const text of ["first?", "second?"]) {
        yield* asker.client.send({
          to: "answerer-0000-bbbb",
          message: { id: randomUUID(), timestamp: 0, content: { text }, expectsReply: true }
        })
        yield* Queue.take(answerer.inbound)
      }
      const sent = yield* answerer.session.send({ to: "Planner", message: "which one?" })
      assert.strictEqual(sent._tag === "Sent" ? sent.replyTo : "declined", undefined)
      const got = yield* Queue.take(asker.inbound)
      assert.isUndefined(got.message.replyTo)
      assert.strictEqual((yield* answerer.session.pending).asks.length, 2)
    }))

  it.effect("an ask the broker no longer holds (its asker cancelled it) is closed, not answered: the send goes out plain, a reply naming it is refused here", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const asker = yield* world.session("asker-0000-aaaa", { name: "Planner" })
      const answerer = yield* world.session("answerer-0000-bbbb", { name: "Worker" })
      const id = randomUUID()
      yield* asker.client.send({ to: "Worker", message: { id, timestamp: 0, content: { text: "q" }, expectsReply: true } })
      yield* Queue.take(answerer.inbound)
      yield* asker.client.cancelAsk(id)
      // A round trip on the same connection: the broker has handled the cancel_ask.
      yield* asker.client.list
      const sent = yield* answerer.session.send({ to: "Planner", message: "late news" })
      assert.strictEqual(sent._tag === "Sent" ? sent.replyTo : "declined", undefined)
      const got = yield* Queue.take(asker.inbound)
      assert.strictEqual(got.message.content.text, "late news")
      assert.isUndefined(got.message.replyTo)
      assert.deepStrictEqual((yield* answerer.session.pending).asks, [])
      // Closed unanswered, not answered by the plain send: a reply naming it says the asker no longer waits.
      const refused = yield* Effect.flip(answerer.session.reply({ replyTo: id, message: "late answer" }))
      assert.instanceOf(refused, AskNoLongerOpen)
      assert.include(refused.message, "Planner no longer waits for an answer")
    }))

  it.effect("in a turn triggered by an ask, a send naming a third session is a plain send to it; the ask stays pending", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const asker = yield* world.session("asker-0000-aaaa", { name: "Planner" })
      const answerer = yield* world.session("answerer-0000-bbbb", { name: "Worker" })
      const third = yield* world.session("third-0000-cccc", { name: "Tester" })
      const asking = yield* Effect.forkChild(asker.session.ask({ to: "Worker", message: "status?" }))
      const question = yield* Queue.take(answerer.inbound)
      yield* answerer.session.beginTurn({ from: question.from.id, messageId: question.message.id })
      const sent = yield* answerer.session.send({ to: "Tester", message: "please run the suite" })
      assert.strictEqual(sent._tag === "Sent" ? sent.replyTo : "declined", undefined)
      const got = yield* Queue.take(third.inbound)
      assert.strictEqual(got.message.content.text, "please run the suite")
      assert.isUndefined(got.message.replyTo)
      assert.isTrue(yield* asker.session.waiting)
      // The ask is still the turn's to answer.
      yield* answerer.session.reply({ message: "suite started" })
      const answer = yield* Fiber.join(asking)
      assert.strictEqual(answer._tag === "Replied" ? answer.reply.content.text : answer._tag, "suite started")
    }))
})

describe("an auto-threaded send the broker refuses with E_REPLY_TARGET", () => {
  const stillOpen = [["its asker's name now held by another session", Reason.replyAskerLeft], [
    "the target is not that ask's asker",
    Reason.replyWrongAsk
  ]] as const
  for (const [why, reason] of stillOpen) {
    it.effect(`refused because ${why}: the send goes out plain and the ask stays pending (the broker still holds it)`, () =>
      Effect.gen(function*() {
        const { client, session } = yield* withPeers({ askTimeoutMs: 60_000 })
        yield* client.push(inboundMessage(B, "q-b", "ready?", { expectsReply: true }))
        yield* settle
        // The threaded copy is refused, the plain one delivered.
        client.onSend = (request) =>
          request.message.replyTo === undefined
            ? Effect.succeed({ messageId: request.message.id, delivery: "socket_delivered" })
            : Effect.fail(deliveryError({ messageId: request.message.id, code: DeliveryCode.ReplyTarget, reason, retryable: false }))
        const sent = yield* Effect.orDie(session.send({ to: "B", message: "news" }))
        assert.strictEqual(sent._tag === "Sent" ? sent.replyTo : "declined", undefined)
        const pending = yield* Effect.orDie(session.pending)
        assert.deepStrictEqual(pending.asks.map((ask) => ask.message.id), ["q-b"])
      }))
  }
})
