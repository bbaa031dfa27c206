/**
 * Two edges of a send its callers abandoned (PendingSends.ts):
 * - a cancel written at once behind it to a broker whose send answers may be bare (no `ask-expiry-v1`): the
 *   broker answers in frame order, so the first bare answer is the send's and the cancel's own refusal is the
 *   cancel's outcome (review `revax` AX-A1);
 * - a plain send whose write the transport refused whole before the close was read: its caller leaves, so a
 *   retry that joins and times out abandons it, and it is not written again after the drop though its caller
 *   was told it timed out (AX-A3).
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { message } from "../support/broker.ts"
import { fakeBroker, fakeClientOptions, makeClient, memoryClientOptions, memoryFakeBroker, stallingDial } from "./support.ts"

const SEND_TIMEOUT = 1_000

describe("a cancel written at once behind an abandoned send, to a base broker (bare send answers)", () => {
  it.effect("the broker's refusal of the cancel is the cancel's outcome, not the send's late bare delivered", () =>
    Effect.gen(function*() {
      // A base broker: a send's `delivered` is bare (as a cancel's answer, P71), and answered in frame order —
      // here only when the next frame comes (`holdSendAnswers`), so it goes out just ahead of the cancel's answer.
      const fake = yield* memoryFakeBroker({ holdSendAnswers: true, cancelAnswer: "refused", features: [] })
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

describe("a plain send whose write the transport refused whole while the socket still reads", () => {
  it.live("its caller told it timed out, it is not written again by the client on the next connection", () =>
    Effect.gen(function*() {
      const plain = message("stalls, then its write is refused")
      const { breakWrites, cut, dial, stall, stalled } = stallingDial("send")
      const fake = yield* fakeBroker({ detailedSendAnswers: true })
      const { client } = yield* makeClient(
        fakeClientOptions(fake, "cccccccc-5555-4000-8000-00000000000e", { sendTimeoutMs: 300, reconnectBaseMs: 10, dial })
      )
      yield* client.connect
      stall()
      const sending = yield* Effect.forkScoped(Effect.exit(client.send({ to: "peer", message: plain })), { startImmediately: true })
      yield* Deferred.await(stalled)
      // The write fails before the reader sees the link end: its frames never reached the broker.
      yield* breakWrites
      const sent = yield* Fiber.join(sending)
      assert.isTrue(
        Exit.isFailure(sent) && String(sent.cause).includes("RequestTimeout"),
        `setup: the caller was expected to be told the send timed out: ${String(sent)}`
      )
      yield* cut
      yield* fake.until("the client reconnected", () => fake.connections() >= 2)
      // A round trip on the new connection: anything the client writes again on it is written before this.
      yield* client.list
      const resent = fake.ofType("send").filter((f) => JSON.stringify(f.frame).includes(plain.id))
      assert.strictEqual(resent.length, 0, "the client wrote again a send whose caller had been told it timed out (review revav AV2)")
    }))
})
