/**
 * An ask whose copy is dropped from the mailbox once its edge expired is lost as expired — its asker gets an
 * `expired` receipt — by its own due time on the broker's clock (StaleAsks.drop, AskEdges.askDueOf), also when it
 * was sent while the stamps led that clock (stepped forward, then back): its `brokerReceivedAt + askTimeoutMs`, a
 * stamp, is then still ahead of the clock, and read as such the ask would go silently as one answered (review
 * revbu bu1). The same with the clock unmoved alongside.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect } from "effect"
import { TestClock } from "effect/testing"
import { Reason } from "../../src/protocol/delivery.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { assertDelivered } from "../support/assertions.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { advance, withMemoryBroker } from "../support/memory.ts"

const HOUR = 60 * 60 * 1000
const ASK_TIMEOUT = 60_000

/** The receipt alice reads for an ask to bob that timed out while bob was away, the clock `ahead` then set back. */
const receiptAfterTimeout = (ahead: number) =>
  Effect.gen(function*() {
    yield* TestClock.adjust(ahead)
    const world = yield* withMemoryBroker({ askTimeout: ASK_TIMEOUT })
    const alice = yield* world.session({ sessionId: "alice", name: "alice" })
    const bob = yield* world.session({ sessionId: "bob", name: "bob", frame: { features: [RECEIVED_V1] } })
    const carol = yield* world.session({ sessionId: "carol", name: "carol" })
    // Stamped while the clock reads `ahead`; then the clock is set back by as much (the stamps stay).
    assertDelivered(yield* send(carol.client, "alice", message("m0")))
    yield* TestClock.setTime((yield* Clock.currentTimeMillis) - ahead)
    const question = message("still need this?", { expectsReply: true })
    assertDelivered(yield* send(alice.client, "bob", question))
    yield* messageFor(bob.client, question.id) // read, never confirmed
    yield* bob.client.destroy
    yield* alice.client.next("session_left", (frame) => frame.sessionId === "bob")
    yield* advance(ASK_TIMEOUT)
    // Any send prunes expired edges: the question leaves the mailbox then, and alice is told.
    assertDelivered(yield* send(carol.client, "alice", message("tick")))
    const receipt = yield* alice.client.next("message_receipt", (frame) => frame.receipt.messageId === question.id)
    return receipt.receipt
  })

describe("an ask that timed out while its recipient was away gets its asker an expired receipt", () => {
  it.effect("the clock unmoved", () =>
    Effect.gen(function*() {
      const receipt = yield* receiptAfterTimeout(0)
      assert.strictEqual(receipt.status, "expired")
      assert.strictEqual(receipt.detail, Reason.askExpired)
    }))

  it.effect("sent after the clock stepped forward an hour and back", () =>
    Effect.gen(function*() {
      const receipt = yield* receiptAfterTimeout(HOUR)
      assert.strictEqual(receipt.status, "expired")
      assert.strictEqual(receipt.detail, Reason.askExpired)
    }))
})
