/**
 * Negotiation (design "Wire protocol and compatibility"): a client that
 * requests no extensions sends a plain pi-intercom `register` and is granted
 * only base features; and the client works against an older base-protocol
 * broker that omits `features` and sends minimal acks (P12, P41).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { BASE_FEATURES } from "../../src/protocol/features.ts"
import { message, withBroker } from "../support/broker.ts"
import { brokerClientOptions, fakeBroker, fakeClientOptions, makeClient } from "./support.ts"

describe("base protocol", () => {
  it.live("a client requesting no extension is granted only the base features", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const { client } = yield* makeClient(brokerClientOptions(broker, "base-0000-0001"))
      yield* client.connect
      assert.deepStrictEqual((yield* client.status).features, ["exact-send-v1"])
      assert.deepStrictEqual(BASE_FEATURES, ["exact-send-v1"])
    }))

  it.live("an extension the broker does not know is not granted", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const { client } = yield* makeClient(
        brokerClientOptions(broker, "base-0000-0002", undefined, { features: ["no-such-extension-v9"] })
      )
      yield* client.connect
      assert.deepStrictEqual((yield* client.status).features, ["exact-send-v1"])
    }))

  it.live("the register frame of a client without extensions is pi-intercom's: no `features` key", () =>
    Effect.gen(function*() {
      const fake = yield* fakeBroker({ features: ["exact-send-v1"] })
      const { client } = yield* makeClient(fakeClientOptions(fake, "base-0000-0003"))
      yield* client.connect
      const [register] = fake.ofType("register")
      assert.deepStrictEqual(Object.keys(register?.frame ?? {}).sort(), ["session", "sessionId", "type"])
      const asking = yield* makeClient(fakeClientOptions(fake, "base-0000-0004", { features: ["some-extension-v1"] }))
      yield* asking.client.connect
      assert.deepStrictEqual(fake.ofType("register")[1]?.frame.features, ["some-extension-v1"])
    }))

  it.live("against a broker that omits `features` and sends bare acks: list and send still work", () =>
    Effect.gen(function*() {
      const fake = yield* fakeBroker({ features: undefined })
      const { client } = yield* makeClient(fakeClientOptions(fake, "base-0000-0005"))
      const sessions = yield* client.list
      assert.deepStrictEqual(sessions.map((s) => s.id), ["base-0000-0005"])
      assert.deepStrictEqual((yield* client.status).features, [])
      const sent = message("hello, old broker")
      // `{type:"delivered", messageId}` with nothing else: delivery defaults to socket_delivered (P41).
      assert.deepStrictEqual(yield* client.send({ to: "anyone", message: sent }), {
        messageId: sent.id,
        delivery: "socket_delivered"
      })
      const [frame] = fake.ofType("send")
      assert.deepStrictEqual(frame?.frame, { type: "send", to: "anyone", message: sent })
    }))
})
