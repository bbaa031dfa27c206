/**
 * Shutdown (C-BRK-30, P19): `disconnect` and closing the client's Scope both
 * send `unregister` before ending the connection, so peers see
 * `session_left`; later operations fail with `IntercomNotConnected`. An
 * attempt in flight is joined, and an attempt that completes after shutdown
 * is never adopted (C-BRK-29).
 *
 * On the in-memory network under TestClock: each step runs until the world is
 * idle, so "closes without waiting" is "completes within one step", and
 * "never comes back" holds after hours of simulated time.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber, Scope } from "effect"
import { ConnectionLost, IntercomNotConnected } from "../../src/client/errors.ts"
import { RECLAIM_INTERVAL_MS } from "../../src/client/IntercomClient.ts"
import type { Dialer } from "../../src/client/Dialer.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { applyMembership, message } from "../support/broker.ts"
import { advance, advanceTo, memoryNetwork, now, settle, step, withMemoryBroker } from "../support/memory.ts"
import { RECEIVED_V1, RECLAIM_V1, TAKEOVER_V1 } from "../../src/protocol/features.ts"
import { makeMemoryClient, memoryClientOptions, memoryFakeBroker, subscribe } from "./support.ts"

const ID = "dddddddd-0000-4000-8000-00000000000d"

/** The exit of a fiber that must have completed by now (the world is idle: it would not complete later). */
const completed = <A, E>(fiber: Fiber.Fiber<A, E>): Exit.Exit<A, E> => {
  const exit = fiber.pollUnsafe()
  if (exit === undefined) return assert.fail("still running")
  return exit
}

describe("disconnect", () => {
  it.effect("unregisters (peers see session_left); later operations fail with IntercomNotConnected; it never comes back", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ idleExit: null })
      const observer = yield* broker.session({ name: "observer" })
      const { client } = yield* makeMemoryClient(memoryClientOptions(broker, ID, "leaver"))
      yield* settle(client.connect)
      yield* observer.client.next("session_joined", (f) => f.session.id === ID)
      yield* settle(client.disconnect)
      yield* observer.client.next("session_left", (f) => f.sessionId === ID)
      assert.strictEqual(yield* broker.broker.sessionCount, 1)
      assert.isFalse((yield* client.status).connected)
      for (const operation of [client.list, client.connect, client.send({ to: "observer", message: message("x") })]) {
        const error = yield* settle(Effect.flip(operation))
        assert.strictEqual(error._tag, "IntercomNotConnected")
        assert.strictEqual(error.message, "Intercom not connected: the client was disconnected")
      }
      yield* settle(client.disconnect) // a second call is a no-op
      yield* advance("1 hour")
      yield* observer.client.expectNothing("session_joined", (f) => f.session.id === ID)
      assert.strictEqual(yield* broker.broker.sessionCount, 1)
    }))

  it.effect("sends `unregister` and then ends the connection (seen by a fake broker), without waiting", () =>
    Effect.gen(function*() {
      const fake = yield* memoryFakeBroker({ features: ["exact-send-v1"] })
      const { client } = yield* makeMemoryClient(memoryClientOptions(fake, ID))
      yield* settle(client.connect)
      yield* settle(client.disconnect)
      assert.deepStrictEqual(fake.ended(), [1])
      assert.deepStrictEqual(fake.frames.map((f) => f.frame.type), ["register", "unregister"])
    }))

  it.effect("closing the client's Scope right after connecting unregisters too, and completes without waiting", () =>
    Effect.gen(function*() {
      const fake = yield* memoryFakeBroker({ features: ["exact-send-v1"] })
      const { client, scope } = yield* makeMemoryClient(memoryClientOptions(fake, ID))
      // No yield between connecting and closing: the client's background fibers may not have started.
      yield* settle(Effect.andThen(client.connect, Scope.close(scope, Exit.void)), "connect, then close")
      assert.deepStrictEqual(fake.ended(), [1])
      assert.deepStrictEqual(fake.frames.map((f) => f.frame.type), ["register", "unregister"])
    }))

  it.effect("closing the Scope of a client in use sends `unregister` before ending the connection, without waiting", () =>
    Effect.gen(function*() {
      const fake = yield* memoryFakeBroker({ features: ["exact-send-v1"] })
      const { client, scope } = yield* makeMemoryClient(memoryClientOptions(fake, ID))
      yield* settle(client.list) // the world is idle after it: the client's background fibers are running
      yield* settle(Scope.close(scope, Exit.void), "the close")
      assert.deepStrictEqual(fake.ended(), [1])
      assert.deepStrictEqual(fake.frames.map((f) => f.frame.type), ["register", "list", "unregister"])
    }))

  it.effect("closing the Scope of a client in use: peers see session_left, and operations fail", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ idleExit: null })
      const observer = yield* broker.session({ name: "observer" })
      const { client, scope } = yield* makeMemoryClient(memoryClientOptions(broker, ID, "leaver"))
      yield* settle(client.list)
      yield* settle(Scope.close(scope, Exit.void), "the close")
      yield* observer.client.next("session_left", (f) => f.sessionId === ID)
      assert.strictEqual((yield* settle(Effect.flip(client.list)))._tag, "IntercomNotConnected")
    }))

  it.effect("disconnect during a reconnect's back-off ends a waiting operation at once with IntercomNotConnected, and returns without waiting", () =>
    Effect.gen(function*() {
      // The send drops the first connection; the reconnect's first attempt is 5 s away.
      const fake = yield* memoryFakeBroker({ features: ["exact-send-v1"], dropOnSend: (connection) => connection === 1 })
      const { client } = yield* makeMemoryClient(memoryClientOptions(fake, ID, undefined, { reconnectBaseMs: 5_000 }))
      yield* settle(client.connect)
      const sending = yield* step(client.send({ to: "peer", message: message("x") }))
      assert.isFalse((yield* client.status).connected)
      const using = yield* step(client.list)
      assert.isUndefined(using.pollUnsafe(), "the operation did not wait for the reconnect")
      const disconnecting = yield* step(client.disconnect)
      assert.isTrue(Exit.isSuccess(completed(disconnecting)))
      const used = completed(using)
      const error = Exit.isFailure(used) ? Cause.squash(used.cause) : undefined
      assert.instanceOf(error, IntercomNotConnected)
      assert.strictEqual(error.message, "Intercom not connected: the client was disconnected")
      yield* advance("1 minute")
      // The send lost with the connection: its outcome unknown once no connection will come (Resending.ts).
      const sent = completed(sending)
      assert.instanceOf(Exit.isFailure(sent) ? Cause.squash(sent.cause) : undefined, ConnectionLost)
      assert.strictEqual(fake.connections(), 1, "a reconnect attempt ran after disconnect")
    }))

  for (const how of ["disconnect", "closing the client's Scope"] as const) {
    it.effect(`${how} during a lost send's back-off between tries ends the send at once with ConnectionLost, and returns without waiting`, () =>
      Effect.gen(function*() {
        // The send drops the first connection; the reconnect's first attempt is 5 s away, and a try waits
        // 100 ms for a connection: the send then backs off LOST_BACKOFF_MS (250 ms) before its next try.
        const fake = yield* memoryFakeBroker({ features: ["exact-send-v1"], dropOnSend: (connection) => connection === 1 })
        const { client, scope } = yield* makeMemoryClient(
          memoryClientOptions(fake, ID, undefined, { reconnectBaseMs: 5_000, connectTimeoutMs: 100 })
        )
        yield* settle(client.connect)
        const sending = yield* step(client.send({ to: "peer", message: message("x") }))
        const sentAt = yield* now
        yield* advanceTo(sentAt + 150) // the wait for a connection ran out at +100: backing off until +350
        assert.isUndefined(sending.pollUnsafe(), "the send did not wait for the reconnect")
        const stopping = yield* step(how === "disconnect" ? client.disconnect : Scope.close(scope, Exit.void))
        assert.isTrue(Exit.isSuccess(completed(stopping)))
        // Lost with the connection and no connection will come: its outcome is unknown (Resending.ts).
        const sent = completed(sending)
        assert.instanceOf(Exit.isFailure(sent) ? Cause.squash(sent.cause) : undefined, ConnectionLost)
        assert.strictEqual(fake.connections(), 1)
      }))
  }

  it.effect("disconnect while a not-found send is retried in the rejoin grace ends it at once with IntercomNotConnected", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const broker = yield* world.startBroker({ idleExit: null })
      const { client } = yield* makeMemoryClient(
        memoryClientOptions(world, ID, "sender", { reconnectBaseMs: 100, reconnectMaxMs: 100 })
      )
      yield* settle(client.connect)
      yield* broker.crash
      yield* world.startBroker({ idleExit: null })
      yield* advance("1 second")
      assert.strictEqual((yield* client.status).connections, 2, "the client did not reconnect")
      // Refused as not found within the grace: tried again in 25 ms (Resending.ts).
      const sending = yield* step(client.send({ to: "not-back-yet", message: message("x") }))
      yield* advance("10 millis")
      assert.isUndefined(sending.pollUnsafe(), "the send was not retried in the rejoin grace")
      const disconnecting = yield* step(client.disconnect)
      assert.isTrue(Exit.isSuccess(completed(disconnecting)))
      const sent = completed(sending)
      const error = Exit.isFailure(sent) ? Cause.squash(sent.cause) : undefined
      assert.instanceOf(error, IntercomNotConnected)
      assert.strictEqual(error.message, "Intercom not connected: the client was disconnected")
    }))

  it.effect("disconnect during the take-back's wait after a takeover ends the take-back: the owner is not asked again", () =>
    Effect.gen(function*() {
      // Taken over by this (live) process on a broker granting reclaim-v1: every RECLAIM_INTERVAL_MS the
      // client asks its owner (shouldReconnect), then, the taker alive, gives up that try without a dial.
      const fake = yield* memoryFakeBroker({ features: ["exact-send-v1", TAKEOVER_V1, RECLAIM_V1], takeOverFirst: process.pid })
      const asked = { count: 0 }
      const shouldReconnect = Effect.sync(() => {
        asked.count++
        return true
      })
      const { client } = yield* makeMemoryClient(memoryClientOptions(fake, ID, undefined, { shouldReconnect }))
      yield* settle(client.connect)
      assert.deepInclude(yield* client.status, { connected: false, takenOver: { sessionId: ID, pid: process.pid } })
      yield* advance(`${RECLAIM_INTERVAL_MS} millis`)
      assert.strictEqual(asked.count, 1, "the take-back did not ask the owner")
      // In the wait before the next try.
      yield* advance(`${RECLAIM_INTERVAL_MS / 2} millis`)
      const disconnecting = yield* step(client.disconnect)
      assert.isTrue(Exit.isSuccess(completed(disconnecting)))
      // No operation waits on the take-back; what shows that it ended is that it never asks again.
      yield* advance(`${RECLAIM_INTERVAL_MS * 3} millis`)
      assert.strictEqual(asked.count, 1, "the take-back asked the owner after disconnect")
      assert.strictEqual(fake.connections(), 1)
    }))

  it.effect("disconnect joins a first attempt in flight, then unregisters it: nothing stays registered", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ idleExit: null })
      const observer = yield* broker.session({ name: "observer" })
      // A dial that takes 300 ms of TestClock time: the attempt in flight the test joins (not a barrier).
      const dial: Dialer = (address) => Effect.andThen(Effect.sleep("300 millis"), broker.dial(address))
      const { client } = yield* makeMemoryClient(memoryClientOptions(broker, ID, "late", { dial }))
      const using = yield* step(client.list)
      const startedAt = yield* now
      const disconnecting = yield* step(client.disconnect)
      yield* advanceTo(startedAt + 300 - 1)
      assert.isUndefined(disconnecting.pollUnsafe(), "disconnect did not wait for the attempt in flight")
      yield* advanceTo(startedAt + 300) // the dial completes; the attempt registers, then is closed at once
      assert.isTrue(Exit.isSuccess(completed(disconnecting)))
      const used = completed(using)
      assert.isTrue(Exit.isFailure(used), "the operation was served by a connection opened after disconnect")
      assert.strictEqual(yield* broker.broker.sessionCount, 1)
      assert.isFalse((yield* client.status).connected)
      // Whatever the observer was told, its view holds only itself.
      const view = new Map()
      for (const frame of observer.client.received()) {
        if (frame.type === "session_joined" || frame.type === "presence_update" || frame.type === "session_left") {
          applyMembership(view, frame)
        }
      }
      assert.deepStrictEqual([...view.keys()], [])
    }))

  it.effect("a reconnect that completes after disconnect is closed at once, never adopted (C-BRK-29)", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ idleExit: null })
      const observer = yield* broker.session({ name: "observer" })
      // The first dial is normal; later ones (reconnects) wait for the gate.
      const gate = yield* Deferred.make<void>()
      const dialed: Array<Connection> = []
      const attempts = { count: 0 }
      const dial: Dialer = (address) =>
        Effect.gen(function*() {
          if (attempts.count++ > 0) yield* Deferred.await(gate)
          const connection = yield* broker.dial(address)
          dialed.push(connection)
          return connection
        })
      const { client } = yield* makeMemoryClient(memoryClientOptions(broker, ID, "zombie", { dial, reconnectBaseMs: 20 }))
      yield* settle(client.connect)
      yield* observer.client.next("session_joined", (f) => f.session.id === ID)
      // Drop the connection under the client: it starts reconnecting after 20 ms, and waits at the gate.
      yield* settle(Effect.forEach(dialed, (c) => c.destroy, { discard: true }))
      yield* observer.client.next("session_left", (f) => f.sessionId === ID)
      yield* advance("20 millis")
      assert.strictEqual(attempts.count, 2, "the reconnect did not reach the gate")
      // disconnect joins the attempt in flight for at most 2 s (C-BRK-30), then gives up on it.
      const disconnecting = yield* step(client.disconnect)
      const disconnectedAt = yield* now
      yield* advanceTo(disconnectedAt + 2_000 - 1)
      assert.isUndefined(disconnecting.pollUnsafe(), "disconnect gave up on the attempt in flight before 2 s")
      yield* advanceTo(disconnectedAt + 2_000)
      assert.isTrue(Exit.isSuccess(completed(disconnecting)))
      // The reconnect now completes — after the client stopped — and is closed in the same step.
      yield* settle(Deferred.succeed(gate, undefined))
      assert.strictEqual(dialed.length, 2, "the late connection was not dialled")
      assert.isFalse((yield* client.status).connected, "the late connection was adopted")
      assert.strictEqual(yield* broker.broker.sessionCount, 1, "the late registration stayed")
    }))

  it.effect("disconnect while a reconnect attempt is in flight ends a waiting operation at once, though disconnect still joins the attempt", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ idleExit: null })
      const observer = yield* broker.session({ name: "observer" })
      // The first dial is normal; later ones (reconnects) wait for the gate, which never opens.
      const gate = yield* Deferred.make<void>()
      const dialed: Array<Connection> = []
      const attempts = { count: 0 }
      const dial: Dialer = (address) =>
        Effect.gen(function*() {
          if (attempts.count++ > 0) yield* Deferred.await(gate)
          const connection = yield* broker.dial(address)
          dialed.push(connection)
          return connection
        })
      const { client } = yield* makeMemoryClient(
        memoryClientOptions(broker, ID, "waiter", { dial, reconnectBaseMs: 20, connectTimeoutMs: 60_000 })
      )
      yield* settle(client.connect)
      yield* observer.client.next("session_joined", (f) => f.session.id === ID)
      yield* settle(Effect.forEach(dialed, (c) => c.destroy, { discard: true }))
      yield* observer.client.next("session_left", (f) => f.sessionId === ID)
      // Past the back-off: the attempt is in flight (at the gate), not backing off.
      yield* advance("20 millis")
      assert.strictEqual(attempts.count, 2, "the reconnect did not reach the gate")
      const using = yield* step(client.list)
      assert.isUndefined(using.pollUnsafe(), "the operation did not wait for the reconnect")
      const disconnecting = yield* step(client.disconnect)
      // disconnect joins the attempt (C-BRK-30); the waiting operation does not wait with it.
      assert.isUndefined(disconnecting.pollUnsafe(), "disconnect did not join the attempt in flight")
      const used = completed(using)
      const error = Exit.isFailure(used) ? Cause.squash(used.cause) : undefined
      assert.instanceOf(error, IntercomNotConnected)
      assert.strictEqual(error.message, "Intercom not connected: the client was disconnected")
      yield* advance("2 seconds")
      assert.isTrue(Exit.isSuccess(completed(disconnecting)))
    }))

  describe("a message read while the client leaves (after `unregister`)", () => {
    const peer = { id: "peer", cwd: "/tmp", model: "m", pid: 1, startedAt: 0, lastActivity: 0 }
    /** A fake broker granting `features` writes `late` once it reads `unregister`; what the client's consumer got. */
    const leaveWhileMailArrives = (features: ReadonlyArray<string> | undefined) =>
      Effect.gen(function*() {
        const late = message("read while leaving")
        const fake = yield* memoryFakeBroker({ features, onUnregister: { type: "message", from: peer, message: late } })
        const { client } = yield* makeMemoryClient(memoryClientOptions(fake, ID))
        const inbox = yield* subscribe(client.messages, "messages")
        yield* settle(client.connect)
        yield* settle(client.disconnect)
        assert.deepStrictEqual(fake.sent.map((f) => f.frame.type), ["registered", "message"], "the fake wrote it")
        assert.deepStrictEqual(fake.ended(), [1])
        return { late, seen: inbox.seen().map((m) => m.message.id) }
      })

    it.effect("granted received-v1: not handed to the consumer (unconfirmed, the broker gives it to the session's next connection)", () =>
      Effect.gen(function*() {
        const { seen } = yield* leaveWhileMailArrives([RECEIVED_V1])
        assert.deepStrictEqual(seen, [])
      }))

    it.effect("a base broker (no received-v1): still handed to the consumer, or it would be lost", () =>
      Effect.gen(function*() {
        const { late, seen } = yield* leaveWhileMailArrives(undefined)
        assert.deepStrictEqual(seen, [late.id])
      }))
  })
})
