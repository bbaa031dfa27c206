/**
 * Review revax (commit dcf9b107, client sends abandoned by their callers): probes that FAIL on main today.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { message } from "./support/broker.ts"
import { makeClient, memoryClientOptions, memoryFakeBroker } from "./client/support.ts"

const SEND_TIMEOUT = 1_000

describe("review revax AX-A1: a cancel written at once behind an abandoned send, to a base broker (bare send answers)", () => {
  it.effect("the broker's refusal of the cancel is the cancel's outcome, not the send's late bare delivered", () =>
    Effect.gen(function*() {
      // A base broker: a send's `delivered` is bare (as a cancel's answer, P71), and answered in frame order —
      // here only when the next frame comes (`holdSendAnswers`), so it goes out just ahead of the cancel's answer.
      const fake = yield* memoryFakeBroker({ holdSendAnswers: true, cancelAnswer: "refused" })
      const { client } = yield* makeClient(
        memoryClientOptions(fake, "sender-0000-0001", "sender", { sendTimeoutMs: SEND_TIMEOUT })
      )
      yield* client.connect
      const msg = message("hello")
      const sending = yield* Effect.forkChild(Effect.exit(client.send({ to: "peer", message: msg })), { startImmediately: true })
      yield* TestClock.adjust(SEND_TIMEOUT + 10)
      assert.isTrue(Exit.isFailure(yield* Fiber.join(sending)), "setup: the send was expected to time out")
      const cancelling = yield* Effect.forkChild(Effect.exit(client.cancel(msg.id)), { startImmediately: true })
      yield* TestClock.adjust(50)
      yield* TestClock.adjust(SEND_TIMEOUT + 10)
      const cancelled = yield* Fiber.join(cancelling)
      assert.strictEqual(fake.ofType("cancel_message").length, 1, "setup: the cancel was written")
      // The broker refused the cancel (bare delivery_failed); the bare `delivered` read first was the send's.
      assert.isFalse(
        Exit.isSuccess(cancelled) && cancelled.value === true,
        `the cancel the broker refused was reported carried out: ${String(cancelled)}`
      )
    }))
})
