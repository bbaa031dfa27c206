/**
 * A send lost with its connection when the owner then declines to reconnect
 * (`shouldReconnect` false: the client stays off until closed): no connection
 * will come again (`ResendSide.ended`, ConnectionLifetime.ts), so the send
 * fails with `ConnectionLost` (outcome unknown) at its next try, not after
 * retrying every `LOST_BACKOFF_MS` for the 2-minute replay window.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit } from "effect"
import { ConnectionLost } from "../../src/client/errors.ts"
import { RECONNECT_DECLINED } from "../../src/client/IntercomClient.ts"
import { message } from "../support/broker.ts"
import { advance, settle, step } from "../support/memory.ts"
import { makeMemoryClient, memoryClientOptions, memoryFakeBroker } from "./support.ts"

const ID = "dddddddd-0000-4000-8000-0000000000e5"

describe("a lost send after the owner declined to reconnect", () => {
  it.effect("fails with ConnectionLost within 5 s of the drop, the client dialling nothing more", () =>
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
