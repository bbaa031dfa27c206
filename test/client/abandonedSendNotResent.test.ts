/**
 * A plain send every caller gave up on is not written again by the client after a drop (ConnectionLifetime.ts
 * re-sends an abandoned send only for an ask still settling with the broker):
 * - one whose caller was told it timed out (the session's DeliveryUnknown: check with the recipient before
 *   sending it again) — a caller who sends it again under a new id would otherwise have it delivered twice
 *   when the broker never read the first frame (P46 de-duplicates by id only); review `revav` AV2;
 * - one whose caller was interrupted once its frame was out (the user gave up the operation: its scope
 *   closed): nothing settles it, and the caller withdrew it; review `revav` AV3.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import type { Message } from "../../src/protocol/frames.ts"
import { message } from "../support/broker.ts"
import { type FakeBrokerState, makeClient, memoryClientOptions, memoryFakeBroker } from "./support.ts"

const SEND_TIMEOUT = 1_000

/**
 * A client whose send of `first` the broker never answers; `giveUp` ends its caller. Another send then ends
 * connection 1 unanswered, and the client reconnects and writes what it lost. Returns how often `first` was
 * written on a later connection.
 */
const resentAfterGivingUp = (
  giveUp: (fake: FakeBrokerState, sending: Fiber.Fiber<Exit.Exit<unknown, unknown>>) => Effect.Effect<void, unknown>
) =>
  Effect.gen(function*() {
    const first: Message = message("first")
    const dropper = message("second")
    const fake = yield* memoryFakeBroker({
      detailedSendAnswers: true,
      leaveSendUnanswered: (id) => id === first.id,
      dropOnSend: (connection, id) => connection === 1 && id === dropper.id
    })
    const { client } = yield* makeClient(
      memoryClientOptions(fake, "sender-0000-0001", "sender", { sendTimeoutMs: SEND_TIMEOUT, reconnectBaseMs: 100, reconnectMaxMs: 100 })
    )
    yield* client.connect
    const sending = yield* Effect.forkChild(Effect.exit(client.send({ to: "peer", message: first })), { startImmediately: true })
    yield* giveUp(fake, sending)
    const second = yield* Effect.forkChild(Effect.exit(client.send({ to: "peer", message: dropper })), { startImmediately: true })
    for (let i = 0; i < 20 && fake.connections() < 2; i++) yield* TestClock.adjust(50)
    yield* TestClock.adjust(200)
    yield* Fiber.join(second)
    assert.isAtLeast(fake.connections(), 2, "setup: the client reconnected")
    return fake.ofType("send").filter((f) => f.connection >= 2 && JSON.stringify(f.frame).includes(first.id)).length
  })

describe("a plain send every caller gave up on", () => {
  it.effect("told it timed out: not written again by the client on the next connection", () =>
    Effect.gen(function*() {
      const resent = yield* resentAfterGivingUp((_, sending) =>
        Effect.gen(function*() {
          yield* TestClock.adjust(SEND_TIMEOUT + 10)
          assert.isTrue(Exit.isFailure(yield* Fiber.join(sending)), "setup: the send was expected to time out")
        })
      )
      assert.strictEqual(resent, 0, "the client wrote again a send whose caller had been told it timed out")
    }))

  it.effect("interrupted once its frame was out: not written again by the client on the next connection", () =>
    Effect.gen(function*() {
      const resent = yield* resentAfterGivingUp((fake, sending) =>
        Effect.gen(function*() {
          // The frame is out (the fake read it), then the user gives up the operation (its scope closed).
          yield* fake.until("the send read", () => fake.ofType("send").length === 1)
          yield* Fiber.interrupt(sending)
        })
      )
      assert.strictEqual(resent, 0, "the client wrote again a send its caller interrupted")
    }))
})
