/** P30–P34: session_joined, list/sessions, presence, session_left, disconnected memory. */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { encodeFrames } from "../../src/protocol/index.ts"
import { assertDelivered } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { infoOf, list, message, messageFor, registerFrame, send, withBroker } from "../support/broker.ts"
import { nextStepAt, withMemoryBroker } from "../support/memory.ts"

describe("P30 session_joined", () => {
  it.live("goes to every other session, not to the joiner", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const a = yield* broker.session({ sessionId: "a" })
      const b = yield* broker.session({ sessionId: "b" })
      const c = yield* broker.session({ sessionId: "c", name: "Charlie" })
      const joinedA = [yield* a.client.next("session_joined"), yield* a.client.next("session_joined")]
      assert.deepStrictEqual(joinedA.map((f) => f.session.id), ["b", "c"])
      const joinedB = yield* b.client.next("session_joined")
      assert.strictEqual(joinedB.session.id, "c")
      assert.strictEqual(joinedB.session.name, "Charlie")
      // The joiner learns about earlier sessions by listing, not from session_joined.
      yield* settled([], [b.client, c.client])
      yield* b.client.expectNothing("session_joined")
      yield* c.client.expectNothing("session_joined")
    }))
})

describe("P31 list / sessions", () => {
  it.live("answers with the requestId and every live session of the scope, requester included, in registration order", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const ids = ["zeta", "alpha", "mid", "beta"]
      const sessions = []
      for (const id of ids) sessions.push(yield* broker.session({ sessionId: id }))
      const requester = sessions[2]!.client
      yield* requester.send({ type: "list", requestId: "r-1" })
      yield* requester.send({ type: "list", requestId: "r-2" })
      const second = yield* requester.next("sessions", (f) => f.requestId === "r-2")
      const first = yield* requester.next("sessions", (f) => f.requestId === "r-1")
      assert.deepStrictEqual(first.sessions.map((s) => s.id), ids)
      assert.deepStrictEqual(second.sessions.map((s) => s.id), ids)
      // After a leave, the order of the others is kept.
      yield* sessions[1]!.client.destroy
      yield* requester.next("session_left", (f) => f.sessionId === "alpha")
      assert.deepStrictEqual((yield* list(requester)).map((s) => s.id), ["zeta", "mid", "beta"])
    }))
})

describe("P32 presence → presence_update", () => {
  it.effect("goes to the others only, carries the change, and a no-op within 1 s sends nothing", () =>
    Effect.gen(function*() {
      // In memory: no real second can pass between the sends, and each step runs to idle.
      const broker = yield* withMemoryBroker()
      const a = yield* broker.session({ sessionId: "a", status: "idle" })
      const b = yield* broker.session({ sessionId: "b" })
      yield* a.client.next("session_joined")

      yield* a.client.send({ type: "presence", status: "thinking" })
      const update = yield* b.client.next("presence_update", (f) => f.session.id === "a")
      assert.strictEqual(update.session.status, "thinking")
      assert.isString(update.session.endpointEpoch)

      yield* a.client.send({ type: "presence", status: "thinking" }) // no change
      yield* a.client.send({ type: "presence" }) // no change either
      yield* b.client.expectNothing("presence_update")

      yield* a.client.send({ type: "presence", status: "tool:bash", model: "other-model" })
      const changed = yield* b.client.next("presence_update", (f) => f.session.id === "a")
      assert.strictEqual(changed.session.status, "tool:bash")
      assert.strictEqual(changed.session.model, "other-model")
      // No reply or echo to the sender.
      yield* a.client.expectNothing("presence_update")
      const listed = yield* infoOf(b.client, "a")
      assert.strictEqual(listed.status, "tool:bash")
    }))

  it.effect("a no-op presence re-broadcasts (heartbeat) once 1 s has passed since the last broadcast, with a fresh lastActivity", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const a = yield* broker.session({ sessionId: "a" })
      const b = yield* broker.session({ sessionId: "b" })
      yield* a.client.send({ type: "presence", status: "busy" })
      const first = yield* b.client.next("presence_update")
      const broadcastAt = first.session.lastActivity
      yield* nextStepAt(broadcastAt + 999)
      yield* a.client.send({ type: "presence", status: "busy" })
      yield* b.client.expectNothing("presence_update")
      yield* nextStepAt(broadcastAt + 1000)
      yield* a.client.send({ type: "presence", status: "busy" })
      const heartbeat = yield* b.client.next("presence_update")
      assert.strictEqual(heartbeat.session.status, "busy")
      assert.strictEqual(heartbeat.session.lastActivity, broadcastAt + 1000)
    }))

  it.live("context fields: a number sets, null deletes, absent keeps", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const a = yield* broker.session({ sessionId: "a" })
      const b = yield* broker.session({ sessionId: "b" })
      yield* a.client.send({ type: "presence", contextPct: 42, contextTokens: 1000, contextWindow: 200_000 })
      const set = yield* b.client.next("presence_update")
      assert.strictEqual(set.session.contextPct, 42)
      assert.strictEqual(set.session.contextTokens, 1000)
      assert.strictEqual(set.session.contextWindow, 200_000)

      yield* a.client.send({ type: "presence", contextPct: null })
      const cleared = yield* b.client.next("presence_update")
      assert.isFalse("contextPct" in cleared.session, JSON.stringify(cleared.session))
      assert.strictEqual(cleared.session.contextTokens, 1000)
      assert.strictEqual(cleared.session.contextWindow, 200_000)
      const listed = yield* infoOf(b.client, "a")
      assert.isFalse("contextPct" in listed)
      assert.strictEqual(listed.contextTokens, 1000)
    }))

  it.live("a renamed session is reachable by its new name", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const a = yield* broker.session({ sessionId: "a", name: "Before" })
      const b = yield* broker.session({ sessionId: "b" })
      yield* a.client.send({ type: "presence", name: "After" })
      yield* b.client.next("presence_update", (f) => f.session.name === "After")
      const msg = message("by new name")
      assertDelivered(yield* send(b.client, "after", msg))
      const received = yield* messageFor(a.client, msg.id)
      assert.strictEqual(received.from.id, "b")
      const stale = yield* send(b.client, "Before", message("by old name"))
      assert.strictEqual(stale.type === "delivery_failed" ? stale.code : stale.type, "E_TARGET_NOT_FOUND")
    }))

  it.live("the sender's current info (after presence) is the `from` of its messages", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const a = yield* broker.session({ sessionId: "a", status: "one" })
      const b = yield* broker.session({ sessionId: "b" })
      yield* a.client.send({ type: "presence", status: "two" })
      yield* b.client.next("presence_update")
      const msg = message("hello")
      assertDelivered(yield* send(a.client, "b", msg))
      assert.strictEqual((yield* messageFor(b.client, msg.id)).from.status, "two")
    }))
})

describe("P33 session_left", () => {
  it.live("is sent to the others when a socket closes and when a session unregisters, never to itself", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const observer = yield* broker.session({ sessionId: "observer" })
      const closer = yield* broker.session({ sessionId: "closer" })
      const leaver = yield* broker.session({ sessionId: "leaver" })
      yield* closer.client.destroy
      const left = yield* observer.client.next("session_left")
      assert.deepStrictEqual({ ...left }, { type: "session_left", sessionId: "closer" })
      yield* leaver.client.send({ type: "unregister" })
      assert.strictEqual((yield* observer.client.next("session_left")).sessionId, "leaver")
      yield* leaver.client.roundTrip
      yield* leaver.client.expectNothing("session_left", (f) => f.sessionId === "leaver")
      assert.deepStrictEqual((yield* list(observer.client)).map((s) => s.id), ["observer"])
    }))
})

describe("P34 disconnected-session memory", () => {
  it.live("a departed session can still be addressed (mail is queued) by id, name or prefix; a stranger cannot", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const sender = yield* broker.session({ sessionId: "sender" })
      const gone = yield* broker.session({ sessionId: "gone-123", name: "Ghost" })
      yield* gone.client.send({ type: "unregister" })
      yield* sender.client.next("session_left")
      assertDelivered(yield* send(sender.client, "gone-123", message("by id")), "queued")
      assertDelivered(yield* send(sender.client, "ghost", message("by name")), "queued")
      assertDelivered(yield* send(sender.client, "gone-", message("by prefix")), "queued")
      const unknown = yield* send(sender.client, "never-seen", message("nobody"))
      assert.strictEqual(unknown.type === "delivery_failed" ? unknown.code : unknown.type, "E_TARGET_NOT_FOUND")
    }))
})

describe("membership feed ordering", () => {
  it.live("a session_joined for X always arrives before any message from X (raced 20 times)", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const receiver = yield* broker.session({ sessionId: "receiver" })
      for (let i = 0; i < 20; i++) {
        const id = `x-${i}`
        const client = yield* broker.connect(id)
        const msg = message(`from ${id}`)
        // Register and send in the same write: the broker sees both at once.
        yield* client.sendRaw(encodeFrames([
          JSON.stringify(registerFrame({ sessionId: id })),
          JSON.stringify({ type: "send", to: "receiver", message: msg })
        ]))
        yield* messageFor(receiver.client, msg.id)
        const frames = receiver.client.received()
        const joinedAt = frames.findIndex((f) => f.type === "session_joined" && f.session.id === id)
        const messageAt = frames.findIndex((f) => f.type === "message" && f.message.id === msg.id)
        assert.isAtLeast(joinedAt, 0, `no session_joined for ${id} before its message`)
        assert.isBelow(joinedAt, messageAt, `session_joined for ${id} after its message`)
      }
    }))

  it.live("a join immediately followed by a leave never leaves a stale session in a watcher's view", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const watcher = yield* broker.session({ sessionId: "watcher" })
      const flashes = []
      for (let i = 0; i < 15; i++) {
        const client = yield* broker.connect(`flash-${i}`)
        // The health probe rides in the same write as the leave: the broker closes a connection
        // left unregistered for 1 s (P15), so a round trip sent later races that close.
        yield* client.sendRaw(encodeFrames([
          JSON.stringify(registerFrame({ sessionId: `flash-${i}` })),
          JSON.stringify({ type: "unregister" }),
          JSON.stringify({ type: "health", requestId: `after-leave-${i}` })
        ]))
        flashes.push(client)
      }
      const stayer = yield* broker.session({ sessionId: "stayer" })
      yield* watcher.client.next("session_joined", (f) => f.session.id === "stayer")
      // Each flash's answer was queued right after its leave, before any close: the broker has
      // handled every join and leave once they are in. Then the watcher's round trip.
      for (const [i, flash] of flashes.entries()) yield* flash.next("health_ok", (f) => f.requestId === `after-leave-${i}`)
      yield* settled([], [watcher.client])
      const view = new Set<string>()
      for (const frame of watcher.client.received()) {
        if (frame.type === "session_joined") view.add(frame.session.id)
        if (frame.type === "session_left") view.delete(frame.sessionId)
      }
      assert.deepStrictEqual([...view], [stayer.id])
      assert.deepStrictEqual((yield* list(watcher.client)).map((s) => s.id), ["watcher", "stayer"])
    }))
})
