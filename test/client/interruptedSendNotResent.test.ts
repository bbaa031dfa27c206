/**
 * A send whose caller was interrupted once its frame was out (the user gave up the operation: its scope
 * closed) is not written again by the client on the next connection after a drop: nothing settles it, and the
 * caller withdrew it (ConnectionLifetime.ts re-sends an abandoned send only for an ask still settling). Review
 * `revav` AV3.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { message } from "../support/broker.ts"
import { makeClient, memoryClientOptions, memoryFakeBroker } from "./support.ts"

const SEND_TIMEOUT = 1_000

describe("a send its caller interrupted once its frame was out", () => {
  it.effect("an interrupted send is not written again by the client on the next connection", () =>
    Effect.gen(function*() {
      const timedOut = message("first")
      const dropper = message("second")
      const fake = yield* memoryFakeBroker({
        detailedSendAnswers: true,
        leaveSendUnanswered: (id) => id === timedOut.id,
        dropOnSend: (connection, id) => connection === 1 && id === dropper.id
      })
      const { client } = yield* makeClient(
        memoryClientOptions(fake, "sender-0000-0001", "sender", { sendTimeoutMs: SEND_TIMEOUT, reconnectBaseMs: 100, reconnectMaxMs: 100 })
      )
      yield* client.connect
      const first = yield* Effect.forkChild(Effect.exit(client.send({ to: "peer", message: timedOut })), { startImmediately: true })
      // The frame is out (the fake read it), then the user cancels the operation (Ctrl-C, scope closed).
      yield* fake.until("the first send read", () => fake.ofType("send").length === 1)
      yield* Fiber.interrupt(first)
      // Another send ends connection 1 unanswered; the client reconnects and writes what it lost.
      const second = yield* Effect.forkChild(Effect.exit(client.send({ to: "peer", message: dropper })), { startImmediately: true })
      for (let i = 0; i < 20 && fake.connections() < 2; i++) yield* TestClock.adjust(50)
      yield* TestClock.adjust(200)
      yield* Fiber.join(second)
      assert.isAtLeast(fake.connections(), 2, "setup: the client reconnected")
      const resentAfterTimeout = fake.ofType("send").filter((f) => f.connection >= 2 && JSON.stringify(f.frame).includes(timedOut.id))
      assert.strictEqual(resentAfterTimeout.length, 0, "the client wrote again a send its caller interrupted")
    }))
})
