/**
 * Receipt routes outlive a reconnect (P70–P72, ours): a route names both
 * sides by session (scope and id), so a receipt, a cancel or a supersede
 * still travels along it after either side's connection closed — seen closed
 * by the broker, the session gone from `list` — and the session registered
 * again under the same id. Ids stay per sender; a receipt for a sender that
 * is away is held for its return; a cancel or supersede needs both sides
 * live; and a route, or a held receipt, still lapses after an hour. Real Unix sockets, except
 * the hour, which runs on the in-memory broker under TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { assertDelivered, assertFailed } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { ackFor, infoOf, message, messageFor, send, senderReceiverThird, type TestBroker } from "../support/broker.ts"
import { advance, withMemoryBroker } from "../support/memory.ts"
import type { WireClient } from "../support/wire.ts"

const HOUR = 3_600_000

const receipt = (messageId: string, status: "receiver_received" | "injected" | "acknowledged" = "acknowledged") => ({
  type: "message_receipt",
  receipt: { messageId, status, timestamp: 1 }
})

/** The ids of the receipts `client` has read. */
const receiptIds = (client: WireClient): ReadonlyArray<string> =>
  client.received().flatMap((frame) => frame.type === "message_receipt" ? [frame.receipt.messageId] : [])

const trio = senderReceiverThird

/** Sends `msg` from `from` to `to` and waits until `receiver` read it: it has a route. */
const deliver = (from: WireClient, to: string, receiver: WireClient, msg: ReturnType<typeof message>) =>
  Effect.gen(function*() {
    assertDelivered(yield* send(from, to, msg))
    yield* messageFor(receiver, msg.id)
    return msg
  })

/** Closes `leaving`'s connection and waits until the broker saw it leave (`observer` got its `session_left`). */
const leave = (leaving: WireClient, id: string, observer: WireClient) =>
  Effect.andThen(leaving.destroy, observer.next("session_left", (frame) => frame.sessionId === id))

/** `leave`, then registers `id` again on a new connection. */
const reconnect = (
  broker: TestBroker,
  leaving: WireClient,
  id: string,
  observer: WireClient
) => Effect.andThen(leave(leaving, id, observer), broker.session({ sessionId: id }))

describe("receipt routes across a reconnect", () => {
  it.live("the receiver reconnects: its receipt for a message of its earlier connection reaches the sender", () =>
    Effect.gen(function*() {
      const { broker, sender, receiver } = yield* trio
      const msg = yield* deliver(sender.client, "receiver", receiver.client, message("before the reconnect"))
      const back = yield* reconnect(broker, receiver.client, "receiver", sender.client)
      yield* back.client.send(receipt(msg.id, "injected"))
      const forwarded = yield* sender.client.next("message_receipt")
      assert.strictEqual(forwarded.receipt.messageId, msg.id)
      assert.strictEqual(forwarded.receipt.status, "injected")
      assert.strictEqual(forwarded.from.id, "receiver")
      assert.deepStrictEqual(forwarded.from, yield* infoOf(sender.client, "receiver"), "from is the new registration")
    }))

  it.live("the sender reconnects: it gets the receipt for a message it sent before", () =>
    Effect.gen(function*() {
      const { broker, sender, receiver } = yield* trio
      const msg = yield* deliver(sender.client, "receiver", receiver.client, message("sent on the first connection"))
      const back = yield* reconnect(broker, sender.client, "sender", receiver.client)
      yield* receiver.client.send(receipt(msg.id))
      const forwarded = yield* back.client.next("message_receipt")
      assert.strictEqual(forwarded.receipt.messageId, msg.id)
      assert.strictEqual(forwarded.from.id, "receiver")
    }))

  it.live("both sides reconnect: the receipt still reaches the sender", () =>
    Effect.gen(function*() {
      const { broker, sender, receiver, third } = yield* trio
      const msg = yield* deliver(sender.client, "receiver", receiver.client, message("both away"))
      yield* leave(sender.client, "sender", third.client)
      yield* leave(receiver.client, "receiver", third.client)
      const senderBack = yield* broker.session({ sessionId: "sender" })
      const receiverBack = yield* broker.session({ sessionId: "receiver" })
      yield* receiverBack.client.send(receipt(msg.id))
      const forwarded = yield* senderBack.client.next("message_receipt")
      assert.strictEqual(forwarded.receipt.messageId, msg.id)
    }))

  it.live("a session of another id that reuses the message id gets nothing; the returning sender does", () =>
    Effect.gen(function*() {
      const { broker, sender, receiver, third } = yield* trio
      const msg = yield* deliver(sender.client, "receiver", receiver.client, message("mine"))
      yield* leave(sender.client, "sender", receiver.client)
      // Another session sends a message of its own under the same id, to a third session.
      const other = yield* broker.session({ sessionId: "other" })
      assertDelivered(yield* send(other.client, "third", { ...msg, content: { text: "not yours" } }))
      yield* messageFor(third.client, msg.id)
      const receiverBack = yield* reconnect(broker, receiver.client, "receiver", third.client)
      const senderBack = yield* broker.session({ sessionId: "sender" })
      yield* receiverBack.client.send(receipt(msg.id))
      yield* senderBack.client.next("message_receipt")
      yield* settled([receiverBack.client], [other.client, senderBack.client])
      yield* other.client.expectNothing("message_receipt")
      assert.deepStrictEqual(receiptIds(senderBack.client), [msg.id], "one copy, to its sender only")
    }))

  it.live("a receipt for a sender that is away is held: the sender gets it when it registers again, once", () =>
    Effect.gen(function*() {
      const { broker, sender, receiver, third } = yield* trio
      const msg = yield* deliver(sender.client, "receiver", receiver.client, message("nobody home"))
      yield* leave(sender.client, "sender", receiver.client)
      yield* receiver.client.send(receipt(msg.id, "injected"))
      yield* receiver.client.send(receipt(msg.id, "acknowledged"))
      yield* receiver.client.roundTrip
      // A session of another id does not get them.
      const stranger = yield* broker.session({ sessionId: "stranger" })
      const back = yield* broker.session({ sessionId: "sender" })
      const statuses: Array<string> = []
      for (let i = 0; i < 2; i++) statuses.push((yield* back.client.next("message_receipt")).receipt.status)
      assert.deepStrictEqual(statuses, ["injected", "acknowledged"], "in the order they were posted")
      // Held receipts go once: a later registration of the sender gets none.
      const again = yield* reconnect(broker, back.client, "sender", third.client)
      yield* settled([receiver.client, stranger.client], [again.client, stranger.client])
      yield* again.client.expectNothing("message_receipt")
      yield* stranger.client.expectNothing("message_receipt")
    }))

  it.live("after the receiver reconnects, the sender can still cancel: the new connection gets the control", () =>
    Effect.gen(function*() {
      const { broker, sender, receiver } = yield* trio
      const msg = yield* deliver(sender.client, "receiver", receiver.client, message("take it back"))
      const back = yield* reconnect(broker, receiver.client, "receiver", sender.client)
      yield* sender.client.send({ type: "cancel_message", messageId: msg.id })
      const ack = yield* ackFor(sender.client, msg.id)
      assert.deepStrictEqual({ ...ack }, { type: "delivered", messageId: msg.id })
      const control = yield* back.client.next("message_control")
      assert.strictEqual(control.control.action, "cancel")
      assert.strictEqual(control.control.messageId, msg.id)
    }))

  it.live("after the sender reconnects, it can supersede a message it sent before", () =>
    Effect.gen(function*() {
      const { broker, sender, receiver } = yield* trio
      const first = yield* deliver(sender.client, "receiver", receiver.client, message("draft"))
      const back = yield* reconnect(broker, sender.client, "sender", receiver.client)
      const second = message("final", { supersedes: first.id })
      assertDelivered(yield* send(back.client, "receiver", second))
      const control = yield* receiver.client.next("message_control")
      assert.strictEqual(control.control.action, "supersede")
      assert.strictEqual(control.control.messageId, first.id)
      assert.strictEqual(control.control.supersededBy, second.id)
      yield* messageFor(receiver.client, second.id)
    }))

  it.live("another session cannot cancel or supersede a message because it reused the id", () =>
    Effect.gen(function*() {
      const { broker, sender, receiver } = yield* trio
      const msg = yield* deliver(sender.client, "receiver", receiver.client, message("the sender's"))
      yield* leave(sender.client, "sender", receiver.client)
      const other = yield* broker.session({ sessionId: "other" })
      yield* other.client.send({ type: "cancel_message", messageId: msg.id })
      assert.deepStrictEqual({ ...(yield* ackFor(other.client, msg.id)) }, {
        type: "delivery_failed",
        messageId: msg.id,
        reason: "Message cannot be cancelled by this session"
      })
      assertFailed(
        yield* send(other.client, "receiver", message("mine now", { supersedes: msg.id })),
        "E_SUPERSEDE_TARGET",
        "Supersede target does not match a previous message from this sender to this receiver"
      )
      yield* settled([other.client], [receiver.client])
      yield* receiver.client.expectNothing("message_control")
    }))
})

/** "sender" and "receiver" on the in-memory broker, under TestClock. */
const memoryPair = Effect.gen(function*() {
  const broker = yield* withMemoryBroker()
  const sender = yield* broker.session({ sessionId: "sender" })
  const receiver = yield* broker.session({ sessionId: "receiver" })
  return { broker, sender, receiver }
})

describe("receipt routes still lapse", () => {
  it.effect("after an hour, even across a reconnect: a receipt for an older message is dropped, a younger one forwarded", () =>
    Effect.gen(function*() {
      const { broker, sender, receiver } = yield* memoryPair
      const older = yield* deliver(sender.client, "receiver", receiver.client, message("an hour old"))
      yield* advance(120_000)
      const younger = yield* deliver(sender.client, "receiver", receiver.client, message("two minutes younger"))
      yield* leave(receiver.client, "receiver", sender.client)
      // Past the older route's hour (by 1 ms), inside the younger one's.
      yield* advance(HOUR - 120_000 + 1)
      const back = yield* broker.session({ sessionId: "receiver" })
      yield* back.client.send(receipt(older.id))
      yield* back.client.send(receipt(younger.id))
      yield* settled([back.client], [sender.client])
      assert.deepStrictEqual(receiptIds(sender.client), [younger.id])
    }))

  it.effect("a receipt held for an away sender for more than an hour is not sent when it returns", () =>
    Effect.gen(function*() {
      const { broker, sender, receiver } = yield* memoryPair
      const msg = yield* deliver(sender.client, "receiver", receiver.client, message("late"))
      yield* leave(sender.client, "sender", receiver.client)
      yield* receiver.client.send(receipt(msg.id, "receiver_received"))
      yield* advance(HOUR - 1_000)
      yield* receiver.client.send(receipt(msg.id, "acknowledged"))
      // The first was held an hour and 1 ms ago, the second a second less than that.
      yield* advance(1_001)
      const back = yield* broker.session({ sessionId: "sender" })
      yield* settled([receiver.client], [back.client])
      assert.deepStrictEqual(
        back.client.received().flatMap((frame) => frame.type === "message_receipt" ? [frame.receipt.status] : []),
        ["acknowledged"]
      )
    }))

  it.live("while the receiver stays away the sender cannot cancel, and a new session of another id cannot receipt", () =>
    Effect.gen(function*() {
      const { broker, sender, receiver } = yield* trio
      const msg = yield* deliver(sender.client, "receiver", receiver.client, message("never coming back"))
      yield* leave(receiver.client, "receiver", sender.client)
      yield* sender.client.send({ type: "cancel_message", messageId: msg.id })
      assert.strictEqual((yield* ackFor(sender.client, msg.id)).type, "delivery_failed")
      const stranger = yield* broker.session({ sessionId: "stranger" })
      yield* stranger.client.send(receipt(msg.id))
      yield* settled([stranger.client], [sender.client])
      yield* sender.client.expectNothing("message_receipt")
    }))
})
