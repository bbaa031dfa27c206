/**
 * Our deviation from P05: a fast sender is slowed by backpressure (the broker
 * stops reading it while its target's outbox is full), never disconnected,
 * and no accepted message is dropped. Plus the membership feed seen by a slow
 * receiver: compacted per session, never stale, joins before messages.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { encodeFrames, type SessionInfo } from "../../src/protocol/index.ts"
import { assertDelivered } from "../support/assertions.ts"
import {
  ackFor,
  applyMembership,
  list,
  message,
  messageFor,
  registerFrame,
  send,
  withBroker
} from "../support/broker.ts"
import type { WireClient } from "../support/wire.ts"

/** Waits until `count()` has not moved for `quietMs` (or `maxMs` passed); returns the value. */
const settle = (count: () => number, quietMs = 250, maxMs = 5000) =>
  Effect.gen(function*() {
    const start = Date.now()
    let last = count()
    let since = Date.now()
    while (Date.now() - since < quietMs && Date.now() - start < maxMs) {
      yield* Effect.sleep(25)
      const now = count()
      if (now !== last) {
        last = now
        since = Date.now()
      }
    }
    return last
  })

/** Sends `n` messages of `bytes` text from `from` to `to` in a single write. */
const burst = (from: WireClient, to: string, n: number, bytes: number, tag: string) =>
  Effect.gen(function*() {
    const msgs = Array.from({ length: n }, (_, i) =>
      message(`${tag}:${i}:`.padEnd(bytes, "."), { senderSequence: i + 1 }))
    yield* from.sendRaw(encodeFrames(msgs.map((msg) => JSON.stringify({ type: "send", to, message: msg }))))
    return msgs
  })

/** Takes `n` messages from `from` off `client`, in arrival order. */
const takeMessages = (client: WireClient, fromId: string, n: number) =>
  Effect.gen(function*() {
    const ids: Array<string> = []
    for (let i = 0; i < n; i++) ids.push((yield* client.next("message", (f) => f.from.id === fromId, "10 seconds")).message.id)
    return ids
  })

describe("backpressure instead of a rate limit", () => {
  it.live("a receiver that stops reading slows its sender; on resume every message arrives exactly once, in order", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ outboxCapacity: 8 })
      const receiver = yield* broker.session({ sessionId: "receiver" })
      const sender = yield* broker.session({ sessionId: "sender" })
      const t = yield* broker.session({ sessionId: "t" })
      const u = yield* broker.session({ sessionId: "u" })
      receiver.client.pause()
      const n = 400
      const msgs = yield* burst(sender.client, "receiver", n, 8 * 1024, "bp")
      const ackedWhileBlocked = yield* settle(() => sender.client.count("delivered"))
      assert.isBelow(ackedWhileBlocked, n, "the sender was not slowed down: every message was acked while the receiver read nothing")
      assert.isFalse(sender.client.isClosed(), "the fast sender was disconnected")
      assert.strictEqual(sender.client.count("delivery_failed"), 0)
      assert.strictEqual(sender.client.count("error"), 0)

      // Other routes are unaffected meanwhile.
      const side = message("side channel")
      assertDelivered(yield* send(t.client, "u", side))
      yield* messageFor(u.client, side.id)

      receiver.client.resume()
      const received = yield* takeMessages(receiver.client, "sender", n)
      assert.deepStrictEqual(received, msgs.map((m) => m.id))
      for (const msg of msgs) assertDelivered(yield* ackFor(sender.client, msg.id))
      yield* receiver.client.expectNothing(200, "message")
      yield* sender.client.expectNothing(0, ["delivered", "delivery_failed"]) // exactly one answer per send
      assert.isFalse(sender.client.isClosed())
      assert.isFalse(receiver.client.isClosed())
    }))

  it.live("a flood of requests is answered in full, never cut off by a rate limit (P05 deviation)", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const session = yield* broker.session({ sessionId: "flooder" })
      const n = 2000
      yield* session.client.sendRaw(encodeFrames(Array.from({ length: n }, (_, i) =>
        JSON.stringify(i % 2 === 0 ? { type: "health", requestId: `h${i}` } : { type: "list", requestId: `l${i}` }))))
      for (let i = 0; i < n; i++) {
        const frame = yield* session.client.next(["health_ok", "sessions"], undefined, "10 seconds")
        assert.strictEqual(frame.requestId, i % 2 === 0 ? `h${i}` : `l${i}`)
      }
      assert.strictEqual(session.client.count("error"), 0)
      assert.isFalse(session.client.isClosed())
    }))

  it.live("two senders into one slow receiver: each stream arrives complete and in its own order", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ outboxCapacity: 4 })
      const receiver = yield* broker.session({ sessionId: "receiver" })
      const s1 = yield* broker.session({ sessionId: "s1" })
      const s2 = yield* broker.session({ sessionId: "s2" })
      receiver.client.pause()
      const m1 = yield* burst(s1.client, "receiver", 150, 8 * 1024, "one")
      const m2 = yield* burst(s2.client, "receiver", 150, 8 * 1024, "two")
      yield* settle(() => s1.client.count("delivered") + s2.client.count("delivered"), 200)
      receiver.client.resume()
      const all: Array<string> = []
      for (let i = 0; i < 300; i++) all.push((yield* receiver.client.next("message", undefined, "10 seconds")).message.id)
      const one = new Set(m1.map((m) => m.id))
      assert.deepStrictEqual(all.filter((id) => one.has(id)), m1.map((m) => m.id))
      assert.deepStrictEqual(all.filter((id) => !one.has(id)), m2.map((m) => m.id))
      yield* receiver.client.expectNothing(150, "message")
      assert.isFalse(s1.client.isClosed() || s2.client.isClosed())
    }))

  it.live("a receiver that disconnects while its sender is held back: every send is answered once, queued mail arrives later, in order", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ outboxCapacity: 8 })
      const receiver = yield* broker.session({ sessionId: "receiver" })
      const sender = yield* broker.session({ sessionId: "sender" })
      receiver.client.pause()
      const n = 300
      const msgs = yield* burst(sender.client, "receiver", n, 8 * 1024, "dc")
      yield* settle(() => sender.client.count("delivered"), 200)
      yield* receiver.client.destroy
      const acks = []
      for (const msg of msgs) acks.push(yield* ackFor(sender.client, msg.id))
      for (const ack of acks) assert.strictEqual(ack.type, "delivered", JSON.stringify(ack))
      const queued = acks.filter((ack) => ack.type === "delivered" && ack.delivery === "queued").map((ack) => ack.messageId)
      assert.isFalse(sender.client.isClosed())

      const back = yield* broker.session({ sessionId: "receiver" })
      yield* Effect.sleep(300)
      const flushed = back.client.received().flatMap((f) => (f.type === "message" ? [f.message.id] : []))
      const order = new Map(msgs.map((m, i) => [m.id, i]))
      // No duplicates, only the sender's messages, in send order, and every queued one is there.
      assert.strictEqual(new Set(flushed).size, flushed.length)
      const positions = flushed.map((id) => order.get(id) ?? -1)
      assert.notInclude(positions, -1)
      assert.deepStrictEqual(positions, [...positions].sort((a, b) => a - b))
      for (const id of queued) assert.include(flushed, id, `message acked as queued was not delivered: ${id}`)
    }))
})

describe("a sender that goes away while held back", () => {
  it.live("everything the broker accepted from it still reaches the receiver; a retry delivers the rest once, in order", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ outboxCapacity: 8 })
      const receiver = yield* broker.session({ sessionId: "receiver" })
      const sender = yield* broker.session({ sessionId: "sender" })
      receiver.client.pause()
      const n = 300
      const msgs = yield* burst(sender.client, "receiver", n, 8 * 1024, "gone")
      yield* settle(() => sender.client.count("delivered"), 200)
      // The broker has read (and recorded as delivered) more than fits: some of it is parked.
      yield* sender.client.destroy
      // The same session retries everything with the same ids: accepted ones are answered
      // from the replay records without a second delivery, the rest are delivered now.
      const retry = yield* broker.session({ sessionId: "sender" })
      yield* retry.client.sendRaw(encodeFrames(msgs.map((msg) => JSON.stringify({ type: "send", to: "receiver", message: msg }))))
      receiver.client.resume()
      const received = yield* takeMessages(receiver.client, "sender", n)
      assert.deepStrictEqual(received, msgs.map((msg) => msg.id), "lost, duplicated or reordered")
      yield* receiver.client.expectNothing(200, "message")
    }))
})

describe("membership feed seen by a slow receiver", () => {
  it.live("compacted but never stale: latest state of every session, no join for a session already gone, joins before messages", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ outboxCapacity: 4 })
      const watcher = yield* broker.session({ sessionId: "watcher" })
      const filler = yield* broker.session({ sessionId: "filler" })
      const changer = yield* broker.session({ sessionId: "changer", status: "p0" })
      const leaver = yield* broker.session({ sessionId: "leaver" })
      yield* watcher.client.next("session_joined", (f) => f.session.id === "leaver")

      // Block the watcher's writer: it stops reading while the filler sends more than the buffers hold.
      watcher.client.pause()
      const fill = yield* burst(filler.client, "watcher", 60, 64 * 1024, "fill")
      const acked = yield* settle(() => filler.client.count("delivered"))
      assert.isBelow(acked, fill.length, "the watcher's pipeline never filled up")

      // Membership churn while the watcher is behind; an up-to-date observer tells us when the broker has seen it.
      const observer = yield* broker.session({ sessionId: "observer" })
      for (let i = 0; i < 5; i++) {
        const flash = yield* broker.connect(`flash-${i}`)
        yield* flash.sendRaw(encodeFrames([
          JSON.stringify(registerFrame({ sessionId: `flash-${i}` })),
          JSON.stringify({ type: "unregister" }),
          JSON.stringify({ type: "health", requestId: "processed" })
        ]))
        yield* flash.next("health_ok")
      }
      for (let i = 1; i <= 30; i++) yield* changer.client.send({ type: "presence", status: `p${i}` })
      yield* observer.client.next("presence_update", (f) => f.session.id === "changer" && f.session.status === "p30")
      yield* leaver.client.destroy
      yield* observer.client.next("session_left", (f) => f.sessionId === "leaver")
      yield* broker.session({ sessionId: "stayer", name: "Stayer" })
      const talker = yield* broker.connect("talker")
      const hello = message("hello from talker")
      yield* talker.sendRaw(encodeFrames([
        JSON.stringify(registerFrame({ sessionId: "talker" })),
        JSON.stringify({ type: "send", to: "watcher", message: hello })
      ]))
      yield* observer.client.next("session_joined", (f) => f.session.id === "talker")
      watcher.client.resume()

      const fills = yield* takeMessages(watcher.client, "filler", fill.length)
      assert.deepStrictEqual(fills, fill.map((m) => m.id))
      yield* messageFor(watcher.client, hello.id)
      yield* Effect.sleep(200)

      const frames = watcher.client.received()
      const flashJoins = frames.filter((f) => f.type === "session_joined" && f.session.id.startsWith("flash-"))
      assert.deepStrictEqual(flashJoins, [], "session_joined for sessions that had already left")

      const joinedTalker = frames.findIndex((f) => f.type === "session_joined" && f.session.id === "talker")
      const talkerMessage = frames.findIndex((f) => f.type === "message" && f.message.id === hello.id)
      assert.isAtLeast(joinedTalker, 0, "no session_joined for the talker")
      assert.isBelow(joinedTalker, talkerMessage, "the talker's message arrived before its session_joined")

      const view = new Map<string, SessionInfo>()
      for (const frame of frames) {
        if (frame.type === "session_joined" || frame.type === "presence_update" || frame.type === "session_left") {
          applyMembership(view, frame)
        }
      }
      const listed = (yield* list(watcher.client)).filter((s) => s.id !== "watcher")
      const summary = (sessions: Iterable<SessionInfo>) =>
        [...sessions].map((s) => `${s.id}:${s.status ?? ""}:${s.endpointEpoch ?? ""}`).sort()
      assert.deepStrictEqual(summary(view.values()), summary(listed))
      assert.strictEqual(view.get("changer")?.status, "p30")
      assert.isFalse(view.has("leaver"))
    }))

  it.live("a stalled receiver still learns that a session it knew has left, however many others came and went meanwhile", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ outboxCapacity: 4 })
      const watcher = yield* broker.session({ sessionId: "watcher" })
      const filler = yield* broker.session({ sessionId: "filler" })
      const leaver = yield* broker.session({ sessionId: "leaver" })
      yield* watcher.client.next("session_joined", (f) => f.session.id === "leaver")

      watcher.client.pause()
      const fill = yield* burst(filler.client, "watcher", 40, 64 * 1024, "fill")
      assert.isBelow(yield* settle(() => filler.client.count("delivered")), fill.length)

      yield* leaver.client.destroy
      // Many short-lived sessions, registered and unregistered in turn on one connection.
      const churn = yield* broker.connect("churn")
      const frames: Array<string> = []
      for (let i = 0; i < 1500; i++) {
        frames.push(JSON.stringify(registerFrame({ sessionId: `churn-${i}` })), JSON.stringify({ type: "unregister" }))
      }
      frames.push(JSON.stringify({ type: "health", requestId: "done" }))
      yield* churn.sendRaw(encodeFrames(frames))
      yield* churn.next("health_ok", undefined, "10 seconds")

      watcher.client.resume()
      yield* takeMessages(watcher.client, "filler", fill.length)
      yield* Effect.sleep(200)
      const view = new Map<string, SessionInfo>()
      for (const frame of watcher.client.received()) {
        if (frame.type === "session_joined" || frame.type === "presence_update" || frame.type === "session_left") {
          applyMembership(view, frame)
        }
      }
      assert.deepStrictEqual([...view.keys()].sort(), ["filler"], "the watcher's view kept a session that had left")
    }))
})
