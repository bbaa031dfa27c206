/**
 * Shutdown (C-BRK-30, P19): `disconnect` and closing the client's Scope both
 * send `unregister` before ending the socket, so peers see `session_left`;
 * later operations fail with `IntercomNotConnected`. An attempt in flight is
 * joined, and an attempt that completes after shutdown is never adopted
 * (C-BRK-29).
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { type Connection } from "../../src/transport/Connection.ts"
import { dialUnixSocket, type Dialer } from "../../src/client/ClientConnection.ts"
import { message, withBroker } from "../support/broker.ts"
import { brokerClientOptions, eventually, fakeBroker, fakeClientOptions, makeClient, timed } from "./support.ts"

const ID = "dddddddd-0000-4000-8000-00000000000d"

describe("disconnect", () => {
  it.live("unregisters (peers see session_left); later operations fail with IntercomNotConnected", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const observer = yield* broker.session({ name: "observer" })
      const { client } = yield* makeClient(brokerClientOptions(broker, ID, "leaver"))
      yield* client.connect
      yield* observer.client.next("session_joined", (f) => f.session.id === ID)
      yield* client.disconnect
      yield* observer.client.next("session_left", (f) => f.sessionId === ID)
      assert.strictEqual(yield* broker.handle.sessionCount, 1)
      const status = yield* client.status
      assert.isFalse(status.connected)
      for (const operation of [client.list, client.connect, client.send({ to: "observer", message: message("x") })]) {
        const error = yield* Effect.flip(operation)
        assert.strictEqual(error._tag, "IntercomNotConnected")
        assert.strictEqual(error.message, "Intercom not connected: the client was disconnected")
      }
      yield* client.disconnect // a second call is a no-op
      yield* observer.client.expectNothing(200, "session_joined", (f) => f.session.id === ID)
    }))

  it.live("sends `unregister` and then ends the socket (seen by a fake broker)", () =>
    Effect.gen(function*() {
      const fake = yield* fakeBroker({ features: ["exact-send-v1"] })
      const { client } = yield* makeClient(fakeClientOptions(fake, ID))
      yield* client.connect
      yield* client.disconnect
      yield* eventually("the fake to see the connection end", () => fake.ended().includes(1))
      assert.deepStrictEqual(fake.frames.map((f) => f.frame.type), ["register", "unregister"])
    }))

  it.live("closing the client's Scope right after connecting unregisters too, and does not hang", () =>
    Effect.gen(function*() {
      const fake = yield* fakeBroker({ features: ["exact-send-v1"] })
      const { client, close } = yield* makeClient(fakeClientOptions(fake, ID))
      yield* client.connect
      // No yield between connecting and closing: the client's background fibers may not have started.
      const [, ms] = yield* timed(close.pipe(Effect.timeout("3 seconds")))
      assert.isBelow(ms, 1000)
      yield* eventually("the fake to see the connection end", () => fake.ended().includes(1))
      assert.deepStrictEqual(fake.frames.map((f) => f.frame.type), ["register", "unregister"])
    }))

  it.live("closing the Scope of a client in use sends `unregister` before ending the socket", () =>
    Effect.gen(function*() {
      const fake = yield* fakeBroker({ features: ["exact-send-v1"] })
      const { client, close } = yield* makeClient(fakeClientOptions(fake, ID))
      yield* client.list
      yield* Effect.sleep("50 millis")
      yield* close.pipe(Effect.timeout("3 seconds"))
      yield* eventually("the fake to see the connection end", () => fake.ended().includes(1))
      assert.deepStrictEqual(fake.frames.map((f) => f.frame.type), ["register", "list", "unregister"])
    }))

  it.live("closing the Scope of a client in use: peers see session_left, and operations fail", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const observer = yield* broker.session({ name: "observer" })
      const { client, close } = yield* makeClient(brokerClientOptions(broker, ID, "leaver"))
      yield* client.list
      yield* Effect.sleep("50 millis")
      yield* close.pipe(Effect.timeout("3 seconds"))
      yield* observer.client.next("session_left", (f) => f.sessionId === ID)
      assert.strictEqual((yield* Effect.flip(client.list))._tag, "IntercomNotConnected")
    }))

  it.live("disconnect joins a first attempt in flight, then unregisters it: nothing stays registered", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const observer = yield* broker.session({ name: "observer" })
      const dial: Dialer = (path) => Effect.andThen(Effect.sleep("300 millis"), dialUnixSocket(path))
      const { client } = yield* makeClient(brokerClientOptions(broker, ID, "late", { dial }))
      const using = yield* Effect.forkChild(client.list, { startImmediately: true })
      yield* Effect.sleep("50 millis")
      yield* client.disconnect
      yield* Fiber.await(using)
      yield* observer.client.next("session_left", (f) => f.sessionId === ID)
      assert.strictEqual(yield* broker.handle.sessionCount, 1)
      assert.isFalse((yield* client.status).connected)
    }))

  it.live("a reconnect that completes after disconnect is closed at once, never adopted (C-BRK-29)", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const observer = yield* broker.session({ name: "observer" })
      // The first dial is normal; later ones (reconnects) wait for the gate.
      const gate = yield* Deferred.make<void>()
      const dialed: Array<Connection> = []
      let attempts = 0
      const dial: Dialer = (path) =>
        Effect.gen(function*() {
          if (attempts++ > 0) yield* Deferred.await(gate)
          const connection = yield* dialUnixSocket(path)
          dialed.push(connection)
          return connection
        })
      const { client } = yield* makeClient(brokerClientOptions(broker, ID, "zombie", { dial, reconnectBaseMs: 20 }))
      yield* client.connect
      yield* observer.client.next("session_joined", (f) => f.session.id === ID)
      // Drop the socket under the client: it starts reconnecting, and waits at the gate.
      yield* Effect.forEach(dialed, (c) => c.destroy)
      yield* observer.client.next("session_left", (f) => f.sessionId === ID)
      yield* eventually("the reconnect to reach the gate", () => attempts === 2)
      // disconnect joins the attempt in flight for at most 2 s (C-BRK-30), then gives up on it.
      yield* client.disconnect.pipe(Effect.timeout("4 seconds"))
      yield* Deferred.succeed(gate, undefined) // the reconnect now completes — after the client stopped
      yield* eventually("the late connection to be dialled", () => dialed.length === 2)
      yield* Effect.sleep("300 millis")
      assert.isFalse((yield* client.status).connected, "the late connection was adopted")
      assert.strictEqual(yield* broker.handle.sessionCount, 1, "the late registration stayed")
    }))
})
