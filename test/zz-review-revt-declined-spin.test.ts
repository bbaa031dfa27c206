/**
 * Review revt, T5 (probe; fails on main at 4c832ea5). `ResendSide.ended`
 * ("whether no connection will come again: the client is closed, or taken
 * over", ConnectionLifetime.ts) leaves out an owner that declined to
 * reconnect (`shouldReconnect` false: "the client stays off until closed").
 * A send lost with its connection then retries every `LOST_BACKOFF_MS`
 * (each try fails at once with RECONNECT_DECLINED) until the 2-minute replay
 * window runs out, instead of failing with `ConnectionLost` at once.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit } from "effect"
import { ConnectionLost } from "../src/client/errors.ts"
import { RECONNECT_DECLINED } from "../src/client/IntercomClient.ts"
import { message } from "./support/broker.ts"
import { advance, settle, step } from "./support/memory.ts"
import { makeMemoryClient, memoryClientOptions, memoryFakeBroker } from "./client/support.ts"

const ID = "dddddddd-0000-4000-8000-0000000000e5"

describe("review revt T5", () => {
  it.effect("(control, passes on main) that send fails with ConnectionLost only once the 2-minute replay window is over", () =>
    Effect.gen(function*() {
      const fake = yield* memoryFakeBroker({ features: ["exact-send-v1"], dropOnSend: (connection) => connection === 1 })
      const { client } = yield* makeMemoryClient(
        memoryClientOptions(fake, ID, undefined, { reconnectBaseMs: 100, shouldReconnect: Effect.succeed(false) })
      )
      yield* settle(client.connect)
      const sending = yield* step(client.send({ to: "peer", message: message("x") }))
      yield* advance("119 seconds")
      assert.isUndefined(sending.pollUnsafe())
      yield* advance("2 seconds")
      const sent = sending.pollUnsafe()
      const error = sent !== undefined && Exit.isFailure(sent) ? Cause.squash(sent.cause) : undefined
      assert.instanceOf(error, ConnectionLost)
    }))

  it.effect("a send lost with its connection fails with ConnectionLost soon after the owner declines to reconnect", () =>
    Effect.gen(function*() {
      const fake = yield* memoryFakeBroker({ features: ["exact-send-v1"], dropOnSend: (connection) => connection === 1 })
      const { client } = yield* makeMemoryClient(
        memoryClientOptions(fake, ID, undefined, { reconnectBaseMs: 100, shouldReconnect: Effect.succeed(false) })
      )
      yield* settle(client.connect)
      const sending = yield* step(client.send({ to: "peer", message: message("x") }))
      yield* advance("5 seconds")
      assert.strictEqual((yield* client.status).lastError, RECONNECT_DECLINED, "the owner was not asked, or said yes")
      const sent = sending.pollUnsafe()
      assert.isDefined(sent, "the send still waits 5 s after the owner declined to reconnect")
      const error = sent !== undefined && Exit.isFailure(sent) ? Cause.squash(sent.cause) : undefined
      assert.instanceOf(error, ConnectionLost)
      assert.strictEqual(fake.connections(), 1)
    }))
})
