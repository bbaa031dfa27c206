/**
 * A cancel of a message whose send timed out (the usual reason to cancel) is written at once: the send,
 * abandoned by its callers, is not waited for (`cancelAfterSend`), since the broker that never answered it may
 * never do. Review `revav` AV1.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { ASK_EXPIRY_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { makeClient, memoryClientOptions, memoryFakeBroker } from "./support.ts"

const SEND_TIMEOUT = 1_000

describe("cancelling a message whose send timed out", () => {
  it.effect("the cancel is written and answered though the send was never answered", () =>
    Effect.gen(function*() {
      // A broker that settles asks (`ask-expiry-v1`) writes details on every send answer: a bare one is a cancel's.
      const fake = yield* memoryFakeBroker({
        features: [ASK_EXPIRY_V1],
        detailedSendAnswers: true,
        leaveSendUnanswered: () => true,
        cancelAnswer: "cancelled"
      })
      const { client } = yield* makeClient(
        memoryClientOptions(fake, "sender-0000-0001", "sender", { sendTimeoutMs: SEND_TIMEOUT })
      )
      yield* client.connect
      const msg = message("hello")
      const sending = yield* Effect.forkChild(Effect.exit(client.send({ to: "peer", message: msg })), { startImmediately: true })
      yield* TestClock.adjust(SEND_TIMEOUT + 10)
      const sent = yield* Fiber.join(sending)
      assert.isTrue(Exit.isFailure(sent), "setup: the send was expected to time out")
      const cancelling = yield* Effect.forkChild(Effect.exit(client.cancel(msg.id)), { startImmediately: true })
      yield* TestClock.adjust(50)
      yield* TestClock.adjust(SEND_TIMEOUT + 10)
      const cancelled = yield* Fiber.join(cancelling)
      assert.strictEqual(fake.ofType("cancel_message").length, 1, "the cancel_message frame was never written to the broker")
      assert.isTrue(Exit.isSuccess(cancelled) && cancelled.value === true, `the cancel ended: ${String(cancelled)}`)
    }))
})
