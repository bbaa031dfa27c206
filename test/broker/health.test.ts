/**
 * Peer health (`health-v1`, C-HLT-3, C-HLT-4, C-HLT-8) over real Unix
 * sockets: the broker stamps `lastSeen` and `lastIntercomActivity`, keeps what
 * a session publishes, and shows it only to clients granted the extension.
 * Barriers are round trips on the acting connection, then on the observer.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect } from "effect"
import { HEALTH_V1 } from "../../src/protocol/features.ts"
import type { SessionInfo } from "../../src/protocol/frames.ts"
import { assertDelivered } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { list, message, send, withBroker } from "../support/broker.ts"

const HEALTH_KEYS = ["lastSeen", "lastIntercomActivity", "acceptsAsks", "pendingAsks"]

/** A session that asked for peer health. */
const withHealth = { frame: { features: [HEALTH_V1] } }

const row = (sessions: ReadonlyArray<SessionInfo>, id: string): SessionInfo => {
  const found = sessions.find((session) => session.id === id)
  if (found === undefined) throw new Error(`${id} is not listed`)
  return found
}

describe("health-v1", () => {
  it.live("the broker stamps lastSeen on a session's frames; a client granted health-v1 sees it in list rows", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const observer = yield* broker.session({ sessionId: "observer", ...withHealth })
      const busy = yield* broker.session({ sessionId: "busy" })
      assert.include(observer.registered.features ?? [], HEALTH_V1)
      const registered = row(yield* list(observer.client), "busy").lastSeen
      assert.isNumber(registered)
      const before = yield* Clock.currentTimeMillis
      yield* busy.client.roundTrip // a `health` frame: any frame counts
      const seen = row(yield* list(observer.client), "busy").lastSeen
      const after = yield* Clock.currentTimeMillis
      assert.isNumber(seen)
      assert.isAtLeast(seen!, before)
      assert.isAtMost(seen!, after)
      assert.isAtLeast(seen!, registered!)
    }))

  it.live("a routed message stamps lastIntercomActivity on its sender and its recipient, no one else", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const observer = yield* broker.session({ sessionId: "observer", ...withHealth })
      const a = yield* broker.session({ sessionId: "a" })
      const b = yield* broker.session({ sessionId: "b" })
      const quiet = yield* broker.session({ sessionId: "quiet" })
      const initial = yield* list(observer.client)
      for (const id of ["a", "b", "quiet"]) assert.strictEqual(row(initial, id).lastIntercomActivity, 0, id)
      const before = yield* Clock.currentTimeMillis
      assertDelivered(yield* send(a.client, "b", message("hello")))
      yield* settled([a.client], [b.client])
      const sessions = yield* list(observer.client)
      assert.isAtLeast(row(sessions, "a").lastIntercomActivity!, before)
      assert.isAtLeast(row(sessions, "b").lastIntercomActivity!, before)
      assert.strictEqual(row(sessions, "quiet").lastIntercomActivity, 0)
      yield* quiet.client.roundTrip
    }))

  it.live("presence health fields are kept and listed; unknown until published; a later activity never goes back", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const observer = yield* broker.session({ sessionId: "observer", ...withHealth })
      const worker = yield* broker.session({ sessionId: "worker", ...withHealth })
      const unknown = row(yield* list(observer.client), "worker")
      assert.isFalse("acceptsAsks" in unknown)
      assert.isFalse("pendingAsks" in unknown)
      yield* worker.client.send({ type: "presence", acceptsAsks: false, pendingAsks: 2, lastIntercomActivity: 5_000 })
      yield* worker.client.roundTrip
      const published = row(yield* list(observer.client), "worker")
      assert.deepInclude(published, { acceptsAsks: false, pendingAsks: 2, lastIntercomActivity: 5_000 })
      yield* worker.client.send({ type: "presence", acceptsAsks: true, lastIntercomActivity: 10 })
      yield* worker.client.roundTrip
      const later = row(yield* list(observer.client), "worker")
      assert.deepInclude(later, { acceptsAsks: true, pendingAsks: 2, lastIntercomActivity: 5_000 })
    }))

  it.live("a base client sees no health field anywhere, and its health fields in presence are ignored", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const base = yield* broker.session({ sessionId: "base" })
      assert.notInclude(base.registered.features ?? [], HEALTH_V1)
      const healthy = yield* broker.session({ sessionId: "healthy", ...withHealth })
      yield* healthy.client.send({ type: "presence", status: "thinking", acceptsAsks: false, pendingAsks: 1 })
      yield* base.client.send({ type: "presence", status: "idle", acceptsAsks: false, pendingAsks: 3 })
      assertDelivered(yield* send(healthy.client, "base", message("hi")))
      yield* settled([healthy.client, base.client], [base.client, healthy.client])
      for (const session of yield* list(base.client)) {
        for (const key of HEALTH_KEYS) assert.isFalse(key in session, `${session.id} carries ${key} to a base client`)
      }
      for (const frame of base.client.received()) {
        const session = frame.type === "session_joined" || frame.type === "presence_update" ? frame.session : undefined
        for (const key of HEALTH_KEYS) assert.isFalse(session !== undefined && key in session, `${frame.type} carries ${key}`)
        if (frame.type === "message") {
          for (const key of HEALTH_KEYS) assert.isFalse(key in frame.from, `message.from carries ${key}`)
        }
      }
      // What the base client sent as health was not taken.
      const seenByHealthy = row(yield* list(healthy.client), "base")
      assert.isFalse("acceptsAsks" in seenByHealthy)
      assert.isFalse("pendingAsks" in seenByHealthy)
      assert.strictEqual(seenByHealthy.status, "idle")
    }))

  it.live("a lastIntercomActivity before the epoch (a clock that reads early) is accepted, and moves nothing back", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const early = yield* broker.session({ sessionId: "early", ...withHealth })
      yield* early.client.send({ type: "presence", acceptsAsks: true, lastIntercomActivity: -3_029 })
      yield* early.client.roundTrip
      assert.isFalse(early.client.isClosed())
      assert.deepInclude(row(yield* list(early.client), "early"), { acceptsAsks: true, lastIntercomActivity: 0 })
    }))

  it.live("a lastIntercomActivity ahead of the broker's clock (a client clock running fast) is capped at the broker's clock", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const ahead = yield* broker.session({ sessionId: "ahead", ...withHealth })
      const before = yield* Clock.currentTimeMillis
      yield* ahead.client.send({ type: "presence", lastIntercomActivity: 4_102_444_800_000 }) // 2100-01-01
      yield* ahead.client.roundTrip
      const after = yield* Clock.currentTimeMillis
      const activity = row(yield* list(ahead.client), "ahead").lastIntercomActivity
      assert.isAtLeast(activity!, before)
      assert.isAtMost(activity!, after)
    }))

  it.live("a presence with a negative pendingAsks is a protocol error: the connection is closed", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const bad = yield* broker.session({ sessionId: "bad", ...withHealth })
      yield* bad.client.send({ type: "presence", pendingAsks: -1 })
      yield* bad.client.waitClosed()
    }))
})
