/**
 * A message that left the broker's hands without reaching its receiver —
 * written to a `received-v1` connection that closed before confirming it,
 * given back, and evicted by the mailbox's bounds — leaves no receipt route
 * (Receipts.ts, MailDelivery.lost): its sender was told it expired, so a
 * cancel or supersede of it sends the receiver no `message_control` for a
 * message it never got, and is answered as for mail evicted from the
 * mailbox (found by the simulation, `--settle-hold --client-timings` seed 11641).
 * So does one its sender cancelled on its way, given back unconfirmed with
 * its receiver away: a cancel again is answered from its record, no control
 * (its client's return gets the message and the first cancel again, once).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { assertDelivered, assertFailed } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { ackFor, message, messageFor, send } from "../support/broker.ts"
import { withMemoryBroker } from "../support/memory.ts"

const CONFIRMING = { frame: { features: [RECEIVED_V1] } }

/**
 * alice sends bob (confirming) two messages, written and never confirmed;
 * bob's connection drops, both come back to a mailbox that holds one, so
 * the first is evicted (alice told `expired`); bob registers again and gets
 * the second.
 */
const evictedAfterDelivery = Effect.gen(function*() {
  const world = yield* withMemoryBroker({ mailboxCapacity: 1 })
  const alice = yield* world.session({ sessionId: "alice", name: "alice" })
  const bob = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
  const evicted = message("written, unconfirmed, then evicted")
  const kept = message("written, unconfirmed, then kept")
  for (const msg of [evicted, kept]) {
    assertDelivered(yield* send(alice.client, "bob", msg))
    yield* messageFor(bob.client, msg.id)
  }
  yield* settled([bob.client, alice.client])
  yield* bob.client.destroy
  const notice = yield* alice.client.next("message_receipt")
  assert.deepStrictEqual([notice.receipt.messageId, notice.receipt.status], [evicted.id, "expired"])
  const back = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
  yield* messageFor(back.client, kept.id)
  yield* settled([back.client, alice.client])
  return { alice, back, evicted, kept }
})

describe("a message evicted after it was written, never confirmed: no control follows it", () => {
  it.effect("its cancel is answered that it cannot be cancelled, and the receiver reads no message_control", () =>
    Effect.gen(function*() {
      const { alice, back, evicted } = yield* evictedAfterDelivery
      yield* alice.client.send({ type: "cancel_message", messageId: evicted.id })
      const ack = yield* ackFor(alice.client, evicted.id)
      assert.deepStrictEqual({ ...ack }, {
        type: "delivery_failed",
        messageId: evicted.id,
        reason: "Message cannot be cancelled by this session"
      })
      yield* back.client.roundTrip
      yield* back.client.expectNothing("message_control")
      // Its replay record still says evicted.
      assertFailed(yield* send(alice.client, "bob", evicted), "E_DELIVERY_EVICTED")
    }))

  it.effect("a send superseding it is refused E_SUPERSEDE_TARGET, and the receiver reads no message_control", () =>
    Effect.gen(function*() {
      const { alice, back, evicted } = yield* evictedAfterDelivery
      const newer = message("supersedes the evicted one", { supersedes: evicted.id })
      assertFailed(yield* send(alice.client, "bob", newer), "E_SUPERSEDE_TARGET")
      yield* back.client.roundTrip
      yield* back.client.expectNothing("message_control")
      yield* back.client.expectNothing("message")
    }))

  it.effect("the message it kept is still cancelled along its route", () =>
    Effect.gen(function*() {
      const { alice, back, kept } = yield* evictedAfterDelivery
      yield* alice.client.send({ type: "cancel_message", messageId: kept.id })
      assert.strictEqual((yield* ackFor(alice.client, kept.id)).type, "delivered")
      const control = yield* back.client.next("message_control")
      assert.deepStrictEqual([control.control.messageId, control.control.action], [kept.id, "cancel"])
    }))
})

describe("a message cancelled on its way, written and never confirmed: a cancel again sends no control", () => {
  // Its client read it (and the cancel), so its return — a reconnect the broker takes for the same client —
  // is given both again, once (WithdrawnCopies.ts, helper mbctl); the cancel again adds nothing.
  it.effect("its receiver, back after the close, reads the message and the cancel once; the cancel again is answered delivered and sends nothing more", () =>
    Effect.gen(function*() {
      const world = yield* withMemoryBroker({})
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
      const msg = message("written, cancelled, never confirmed")
      assertDelivered(yield* send(alice.client, "bob", msg))
      yield* messageFor(bob.client, msg.id)
      yield* alice.client.send({ type: "cancel_message", messageId: msg.id })
      assert.strictEqual((yield* ackFor(alice.client, msg.id)).type, "delivered")
      yield* bob.client.next("message_control")
      yield* bob.client.destroy
      yield* alice.client.next("session_left", (f) => f.sessionId === "bob")
      const back = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
      yield* messageFor(back.client, msg.id)
      yield* back.client.next("message_control", (f) => f.control.messageId === msg.id)
      yield* settled([back.client, alice.client])
      yield* alice.client.send({ type: "cancel_message", messageId: msg.id })
      assert.strictEqual((yield* ackFor(alice.client, msg.id)).type, "delivered")
      yield* back.client.roundTrip
      yield* back.client.expectNothing(["message", "message_control"])
      assert.strictEqual(back.client.count("message_control"), 1)
    }))
})
