/**
 * The real `IntercomClient`'s side of `ask-expiry-v1`, against a scripted
 * broker on a real socket that writes a reply and the verdict after it in
 * one write (one read batch for the client): the broker's `ask_expired`
 * (`askExpiry`), and the asker's round trip at its own deadline
 * (`settleRoundTrip`), each complete only once the messages read before
 * them were handled — so a reply the broker accepted before it closed the
 * ask is routed to the wait before the wait is judged (Ask.ts). A round
 * trip whose connection drops before its answer is made again on the next
 * connection, behind what the broker gives back there. Every wait is on a
 * frame or a round trip, never on a sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Fiber, Stream } from "effect"
import type { IntercomClientService } from "../../src/client/IntercomClient.ts"
import { ASK_EXPIRY_V1, ASK_TIMEOUT_V1, EXACT_SEND_V1, LIST_PAGE_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { fakeBroker, fakeClientOptions, makeClient } from "./support.ts"

const FEATURES = [EXACT_SEND_V1, LIST_PAGE_V1, ASK_EXPIRY_V1]

/** The next inbound message, taken as a session takes one: not pulled past until it is handled. */
const nextMessage = (client: IntercomClientService) =>
  Effect.flatMap(Stream.runHead(client.messages), (head) =>
    head._tag === "Some" ? Effect.succeed(head.value) : Effect.die("the messages stream ended"))

/** A `message` frame from session `peer` answering `questionId`. */
const replyFrame = (questionId: string, text: string) => ({
  type: "message",
  from: { id: "peer", cwd: "/tmp", model: "m", pid: 1, startedAt: 0, lastActivity: 0 },
  message: { id: `re-${questionId}`, timestamp: 0, content: { text }, replyTo: questionId }
})

describe("ask-expiry-v1 in the client: a reply read before the verdict is handled before the verdict counts", () => {
  it.live("askExpiry completes only once the reply read ahead of the ask_expired was handled", () =>
    Effect.gen(function*() {
      const fake = yield* fakeBroker({
        features: FEATURES,
        afterSend: (id) => [replyFrame(id, "in time"), { type: "ask_expired", messageId: id, expiredAt: 1 }]
      })
      const { client } = yield* makeClient(fakeClientOptions(fake, "asker-0000-0001"))
      const question = message("well?", { expectsReply: true })
      const expiry = yield* client.askExpiry(question.id)
      const waiting = yield* Effect.forkChild(expiry, { startImmediately: true })
      yield* client.send({ to: "peer", message: question })
      const reply = yield* nextMessage(client)
      assert.strictEqual(reply.message.replyTo, question.id)
      // A round trip: the ask_expired, written before its answer, has been read.
      yield* client.send({ to: "peer", message: message("barrier") })
      assert.isUndefined(waiting.pollUnsafe(), "the verdict counted before the reply read ahead of it was handled")
      yield* client.handled(reply)
      yield* Fiber.join(waiting)
    }))

  it.live("settleRoundTrip answers true only once the reply read ahead of the list's answer was handled", () =>
    Effect.gen(function*() {
      let replies = 0
      const fake = yield* fakeBroker({
        features: FEATURES,
        beforeList: () => replies++ === 0 ? [replyFrame("q-1", "accepted before the deadline")] : []
      })
      const { client } = yield* makeClient(fakeClientOptions(fake, "asker-0000-0002"))
      yield* client.connect
      const settling = yield* Effect.forkChild(client.settleRoundTrip, { startImmediately: true })
      const reply = yield* nextMessage(client)
      assert.strictEqual(reply.message.replyTo, "q-1")
      // A round trip behind the list's answer: that answer has been read.
      yield* client.send({ to: "peer", message: message("barrier") })
      assert.isUndefined(settling.pollUnsafe(), "the round trip counted before the reply read ahead of it was handled")
      yield* client.handled(reply)
      assert.isTrue(yield* Fiber.join(settling))
      assert.strictEqual(fake.ofType("list").length, 1)
    }))

  it.live("settleRoundTrip marks its list settle: true only for a broker that granted ask-expiry-v1; a user's list is not marked", () =>
    Effect.gen(function*() {
      const granted = yield* fakeBroker({ features: FEATURES })
      const withGrant = yield* makeClient(fakeClientOptions(granted, "asker-0000-0004"))
      yield* withGrant.client.connect
      assert.isTrue(yield* withGrant.client.settleRoundTrip)
      yield* withGrant.client.list
      assert.deepStrictEqual(granted.ofType("list").map((f) => f.frame.settle), [true, undefined])
      const base = yield* fakeBroker({ features: [EXACT_SEND_V1, LIST_PAGE_V1] })
      const withoutGrant = yield* makeClient(fakeClientOptions(base, "asker-0000-0005"))
      yield* withoutGrant.client.connect
      assert.isTrue(yield* withoutGrant.client.settleRoundTrip)
      assert.deepStrictEqual(base.ofType("list").map((f) => f.frame.settle), [undefined])
    }))

  it.live("settleRoundTrip whose connection drops before the answer settles again on the next one, after the reply given back there", () =>
    Effect.gen(function*() {
      const fake = yield* fakeBroker({
        features: FEATURES,
        dropOnSettle: (connection) => connection === 1,
        // The rejoin: the broker gives back what the dropped connection never confirmed, first thing.
        afterRegistered: (connection) => connection === 2 ? [replyFrame("q-1", "accepted before the deadline")] : []
      })
      const { client } = yield* makeClient(fakeClientOptions(fake, "asker-0000-0006", { reconnectBaseMs: 10 }))
      yield* client.connect
      const settling = yield* Effect.forkChild(client.settleRoundTrip, { startImmediately: true })
      const reply = yield* nextMessage(client)
      assert.strictEqual(reply.message.replyTo, "q-1")
      yield* fake.until("the settling list on the new connection", () =>
        fake.ofType("list").some((f) => f.connection === 2 && f.frame.settle === true))
      // A round trip behind that list's answer on the same connection: the answer has been read.
      yield* client.send({ to: "peer", message: message("barrier") })
      assert.isUndefined(settling.pollUnsafe(), "the round trip counted before the reply given back was handled")
      yield* client.handled(reply)
      assert.isTrue(yield* Fiber.join(settling))
      assert.deepStrictEqual(fake.ofType("list").map((f) => [f.connection, f.frame.settle]), [[1, true], [2, true]])
    }))

  it.live("settleRoundTrip the broker leaves unanswered, and its liveness probe too, drops that connection and settles again on the next, after the reply given back there", () =>
    Effect.gen(function*() {
      const fake = yield* fakeBroker({
        features: FEATURES,
        // A frozen broker: it reads the settling list and answers nothing more (the probe neither), the connection left open.
        freezeOnSettle: (connection) => connection === 1,
        afterRegistered: (connection) => connection === 2 ? [replyFrame("q-1", "accepted before the deadline")] : []
      })
      const { client } = yield* makeClient(
        fakeClientOptions(fake, "asker-0000-0009", { reconnectBaseMs: 10, livenessTimeoutMs: 500, livenessIntervalMs: 600_000 })
      )
      yield* client.connect
      const settling = yield* Effect.forkChild(client.settleRoundTrip, { startImmediately: true })
      // The client dropped the unanswering connection itself (no probe runs in this test) and reconnected.
      yield* fake.until("a second connection", () => fake.connections() === 2, "10 seconds")
      const reply = yield* nextMessage(client)
      assert.strictEqual(reply.message.replyTo, "q-1")
      yield* client.handled(reply)
      assert.isTrue(yield* Fiber.join(settling))
      // The settle, the probe that went unanswered too, then the settle again on the next connection.
      assert.deepStrictEqual(fake.ofType("list").map((f) => [f.connection, f.frame.settle]), [[1, true], [1, undefined], [2, true]])
      assert.isFalse(fake.ofType("unregister").some((f) => f.connection === 1), "the frozen connection was closed, not dropped")
    }))

  it.live("an ask written again after a reconnect carries its timeout less the time since its first send, and its delivery says so", () =>
    Effect.gen(function*() {
      const fake = yield* fakeBroker({ features: [...FEATURES, ASK_TIMEOUT_V1], dropOnSend: (connection) => connection === 1 })
      const { client } = yield* makeClient(fakeClientOptions(fake, "asker-0000-0010", { reconnectBaseMs: 300 }))
      yield* client.connect
      const question = message("well?", { expectsReply: true })
      const askSince = yield* Clock.currentTimeMillis
      const delivery = yield* client.send({ to: "peer", message: question, askTimeoutMs: 60_000, askSince })
      const writes = fake.ofType("send").map((f) => [f.connection, f.frame.askTimeoutMs])
      assert.strictEqual(writes.length, 2)
      const [first, again] = writes
      assert.deepStrictEqual(first?.[0], 1)
      assert.deepStrictEqual(again?.[0], 2)
      const left = again?.[1]
      assert.isNumber(left)
      // The reconnect's back-off (300 ms) at least went by between the two writes.
      assert.isAtMost(Number(left), 60_000 - 300, "the question written again carried its whole timeout")
      assert.strictEqual(delivery.askTimeoutMs, left)
    }))

  it.live("settleRoundTrip whose connection drops answers true on the next connection's answer when nothing is given back (a broker that lost the ask)", () =>
    Effect.gen(function*() {
      const fake = yield* fakeBroker({ features: FEATURES, dropOnSettle: (connection) => connection === 1 })
      const { client } = yield* makeClient(fakeClientOptions(fake, "asker-0000-0007", { reconnectBaseMs: 10 }))
      yield* client.connect
      assert.isTrue(yield* client.settleRoundTrip)
      assert.deepStrictEqual(fake.ofType("list").map((f) => [f.connection, f.frame.settle]), [[1, true], [2, true]])
    }))

  it.live("settleRoundTrip whose connection drops answers false when its owner says not to reconnect, and dials no more", () =>
    Effect.gen(function*() {
      const fake = yield* fakeBroker({ features: FEATURES, dropOnSettle: () => true })
      const { client } = yield* makeClient(
        fakeClientOptions(fake, "asker-0000-0008", { reconnectBaseMs: 10, shouldReconnect: Effect.succeed(false) })
      )
      yield* client.connect
      assert.isFalse(yield* client.settleRoundTrip)
      assert.strictEqual(fake.connections(), 1)
    }))

  it.live("settleRoundTrip answers false at once with no live connection, and dials nothing", () =>
    Effect.gen(function*() {
      const fake = yield* fakeBroker({ features: FEATURES })
      const { client } = yield* makeClient(fakeClientOptions(fake, "asker-0000-0003"))
      assert.isFalse(yield* client.settleRoundTrip)
      assert.strictEqual(fake.connections(), 0)
    }))
})
