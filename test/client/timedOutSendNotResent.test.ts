/**
 * A plain send whose caller was told it timed out (the session's DeliveryUnknown: check with the recipient
 * before sending it again) is not written again by the client after a drop: a caller who sends it again under
 * a new id would otherwise have it delivered twice when the broker never read the first frame (P46
 * de-duplicates by id only). Review `revav` AV2.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { message } from "../support/broker.ts"
import { makeClient, memoryClientOptions, memoryFakeBroker } from "./support.ts"

const SEND_TIMEOUT = 1_000

describe("a send its caller was told timed out", () => {
  it.effect("is not written again by the client on the next connection", () =>
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
      yield* TestClock.adjust(SEND_TIMEOUT + 10)
      const firstExit = yield* Fiber.join(first)
      assert.isTrue(Exit.isFailure(firstExit), "setup: the first send was expected to time out")
      // Another send ends connection 1 unanswered; the client reconnects and writes what it lost.
      const second = yield* Effect.forkChild(Effect.exit(client.send({ to: "peer", message: dropper })), { startImmediately: true })
      for (let i = 0; i < 20 && fake.connections() < 2; i++) yield* TestClock.adjust(50)
      yield* TestClock.adjust(200)
      yield* Fiber.join(second)
      assert.isAtLeast(fake.connections(), 2, "setup: the client reconnected")
      const resentAfterTimeout = fake.ofType("send").filter((f) => f.connection >= 2 && JSON.stringify(f.frame).includes(timedOut.id))
      assert.strictEqual(resentAfterTimeout.length, 0, "the client wrote again a send whose caller had been told it timed out")
    }))
})
