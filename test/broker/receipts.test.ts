/** P70–P73: receipts forwarded to senders; cancel and supersede via message_control. */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { assertDelivered, assertFailed } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { ackFor, infoOf, message, messageFor, register, send, senderReceiverThird } from "../support/broker.ts"

const pair = senderReceiverThird

describe("P70 message_receipt", () => {
  it.live("a receipt from the receiver is forwarded to the original sender with `from`", () =>
    Effect.gen(function*() {
      const { sender, receiver } = yield* pair
      const msg = message("track me")
      assertDelivered(yield* send(sender.client, "receiver", msg))
      yield* messageFor(receiver.client, msg.id)
      const statuses = ["receiver_received", "injected", "acknowledged"] as const
      for (const status of statuses) {
        const receipt = { messageId: msg.id, status, timestamp: Date.now(), detail: `detail ${status}` }
        yield* receiver.client.send({ type: "message_receipt", receipt })
        const forwarded = yield* sender.client.next("message_receipt")
        assert.deepStrictEqual(forwarded.receipt, receipt)
        assert.deepStrictEqual(forwarded.from, yield* infoOf(sender.client, "receiver"))
      }
      yield* receiver.client.roundTrip
      yield* receiver.client.expectNothing("message_receipt") // not echoed to its author
    }))

  it.live("receipts for unknown messages or from sessions that did not receive it are dropped silently", () =>
    Effect.gen(function*() {
      const { sender, receiver, third } = yield* pair
      const msg = message("private")
      assertDelivered(yield* send(sender.client, "receiver", msg))
      yield* third.client.send({
        type: "message_receipt",
        receipt: { messageId: msg.id, status: "acknowledged", timestamp: 1 }
      })
      yield* receiver.client.send({
        type: "message_receipt",
        receipt: { messageId: "never-sent", status: "acknowledged", timestamp: 1 }
      })
      // The sender cannot receipt its own message either.
      yield* sender.client.send({ type: "message_receipt", receipt: { messageId: msg.id, status: "queued", timestamp: 1 } })
      yield* settled([third.client, receiver.client, sender.client], [sender.client, receiver.client])
      yield* sender.client.expectNothing("message_receipt")
      yield* receiver.client.expectNothing("message_receipt")
      assert.isFalse(third.client.isClosed())
      assert.isFalse(receiver.client.isClosed())
    }))

  it.live("routes are created on mailbox flush too", () =>
    Effect.gen(function*() {
      const { broker, sender, receiver } = yield* pair
      yield* receiver.client.destroy
      yield* sender.client.next("session_left", (f) => f.sessionId === "receiver")
      const msg = message("queued")
      assertDelivered(yield* send(sender.client, "receiver", msg), "queued")
      const back = yield* broker.connect("back")
      yield* register(back, { sessionId: "receiver" })
      yield* messageFor(back, msg.id)
      yield* back.send({ type: "message_receipt", receipt: { messageId: msg.id, status: "receiver_received", timestamp: 1 } })
      const forwarded = yield* sender.client.next("message_receipt")
      assert.strictEqual(forwarded.from.id, "receiver")
    }))
  it.live("a message flushed after its sender left has a route too: the receiver's receipt waits for the sender's return", () =>
    Effect.gen(function*() {
      const { broker, sender, receiver, third } = yield* pair
      yield* receiver.client.destroy
      yield* sender.client.next("session_left", (f) => f.sessionId === "receiver")
      const msg = message("queued, then its sender left")
      assertDelivered(yield* send(sender.client, "receiver", msg), "queued")
      yield* sender.client.destroy
      yield* third.client.next("session_left", (f) => f.sessionId === "sender")
      const back = yield* broker.connect("back")
      yield* register(back, { sessionId: "receiver" })
      yield* messageFor(back, msg.id)
      yield* back.send({ type: "message_receipt", receipt: { messageId: msg.id, status: "receiver_received", timestamp: 1 } })
      // A round trip behind the receipt: the broker has handled it (held it, or dropped it) by now.
      yield* back.roundTrip
      const senderBack = yield* broker.connect("sender back")
      yield* register(senderBack, { sessionId: "sender" })
      const forwarded = yield* senderBack.next("message_receipt")
      assert.strictEqual(forwarded.receipt.messageId, msg.id)
      assert.strictEqual(forwarded.from.id, "receiver")
    }))
  // A route across either side's reconnect, and when it lapses: receipt-routes.test.ts.
})

describe("P71 cancel_message", () => {
  it.live("a message flushed after its sender left can be cancelled once the sender is back: the receiver gets the control", () =>
    Effect.gen(function*() {
      const { broker, sender, receiver, third } = yield* pair
      yield* receiver.client.destroy
      yield* sender.client.next("session_left", (f) => f.sessionId === "receiver")
      const msg = message("queued, then its sender left")
      assertDelivered(yield* send(sender.client, "receiver", msg), "queued")
      yield* sender.client.destroy
      yield* third.client.next("session_left", (f) => f.sessionId === "sender")
      const back = yield* broker.connect("back")
      yield* register(back, { sessionId: "receiver" })
      yield* messageFor(back, msg.id)
      const senderBack = yield* broker.connect("sender back")
      yield* register(senderBack, { sessionId: "sender" })
      yield* senderBack.send({ type: "cancel_message", messageId: msg.id })
      const ack = yield* ackFor(senderBack, msg.id)
      assert.deepStrictEqual({ ...ack }, { type: "delivered", messageId: msg.id })
      const control = yield* back.next("message_control")
      assert.strictEqual(control.control.action, "cancel")
      assert.strictEqual(control.control.messageId, msg.id)
    }))

  it.live("a delivered message: the receiver gets message_control cancel, the caller a bare delivered", () =>
    Effect.gen(function*() {
      const { sender, receiver } = yield* pair
      const msg = message("oops")
      assertDelivered(yield* send(sender.client, "receiver", msg))
      yield* messageFor(receiver.client, msg.id)
      yield* sender.client.send({ type: "cancel_message", messageId: msg.id })
      const control = yield* receiver.client.next("message_control")
      assert.strictEqual(control.control.action, "cancel")
      assert.strictEqual(control.control.messageId, msg.id)
      assert.isNumber(control.control.timestamp)
      assert.strictEqual(control.from.id, "sender")
      const ack = yield* ackFor(sender.client, msg.id)
      assert.deepStrictEqual({ ...ack }, { type: "delivered", messageId: msg.id })
      // The replay record now says cancelled.
      assertFailed(yield* send(sender.client, "receiver", msg), "E_DELIVERY_CANCELLED", "Sender cancelled the delivery")
      yield* settled([sender.client], [receiver.client])
      yield* receiver.client.expectNothing("message")
    }))

  it.live("a cancel of a queued message repeated after it was carried out is answered delivered again", () =>
    Effect.gen(function*() {
      const { broker, sender, receiver } = yield* pair
      yield* receiver.client.destroy
      yield* sender.client.next("session_left", (f) => f.sessionId === "receiver")
      const msg = message("never mind, twice")
      assertDelivered(yield* send(sender.client, "receiver", msg), "queued")
      for (let i = 0; i < 2; i++) {
        yield* sender.client.send({ type: "cancel_message", messageId: msg.id })
        assert.deepStrictEqual({ ...(yield* ackFor(sender.client, msg.id)) }, { type: "delivered", messageId: msg.id })
      }
      const back = yield* broker.session({ sessionId: "receiver" })
      yield* back.client.roundTrip
      yield* back.client.expectNothing(["message", "message_control"])
    }))

  it.live("a queued message is dequeued: it is never flushed", () =>
    Effect.gen(function*() {
      const { broker, sender, receiver } = yield* pair
      yield* receiver.client.destroy
      yield* sender.client.next("session_left", (f) => f.sessionId === "receiver")
      const msg = message("never mind")
      const kept = message("keep this one")
      assertDelivered(yield* send(sender.client, "receiver", msg), "queued")
      assertDelivered(yield* send(sender.client, "receiver", kept), "queued")
      yield* sender.client.send({ type: "cancel_message", messageId: msg.id })
      const ack = yield* ackFor(sender.client, msg.id)
      assert.deepStrictEqual({ ...ack }, { type: "delivered", messageId: msg.id })
      const back = yield* broker.session({ sessionId: "receiver" })
      yield* messageFor(back.client, kept.id)
      yield* back.client.roundTrip // everything flushed at registration was queued before its answer
      yield* back.client.expectNothing(["message", "message_control"])
      assertFailed(yield* send(sender.client, "receiver", msg), "E_DELIVERY_CANCELLED", "Sender cancelled the queued delivery")
    }))

  it.live("an unknown message, or someone else's, cannot be cancelled: bare delivery_failed, no code", () =>
    Effect.gen(function*() {
      const { sender, receiver, third } = yield* pair
      const msg = message("mine")
      assertDelivered(yield* send(sender.client, "receiver", msg))
      yield* messageFor(receiver.client, msg.id)
      for (const [client, id] of [[sender.client, "never-sent"], [third.client, msg.id], [receiver.client, msg.id]] as const) {
        yield* client.send({ type: "cancel_message", messageId: id })
        const ack = yield* ackFor(client, id)
        assert.deepStrictEqual({ ...ack }, {
          type: "delivery_failed",
          messageId: id,
          reason: "Message cannot be cancelled by this session"
        })
      }
      yield* receiver.client.roundTrip
      yield* receiver.client.expectNothing("message_control")
    }))

  it.live("a delivered message cannot be cancelled while its receiver is away (a route needs both sides live)", () =>
    Effect.gen(function*() {
      const { sender, receiver } = yield* pair
      const msg = message("read already")
      assertDelivered(yield* send(sender.client, "receiver", msg))
      yield* messageFor(receiver.client, msg.id)
      yield* receiver.client.destroy
      yield* sender.client.next("session_left", (f) => f.sessionId === "receiver")
      yield* sender.client.send({ type: "cancel_message", messageId: msg.id })
      const ack = yield* ackFor(sender.client, msg.id)
      assert.deepStrictEqual({ ...ack }, {
        type: "delivery_failed",
        messageId: msg.id,
        reason: "Message cannot be cancelled by this session"
      })
    }))

  it.live("cancelling an ask drops its edge: a later reply fails", () =>
    Effect.gen(function*() {
      const { sender, receiver } = yield* pair
      const question = message("q", { expectsReply: true })
      assertDelivered(yield* send(sender.client, "receiver", question))
      yield* sender.client.send({ type: "cancel_message", messageId: question.id })
      yield* ackFor(sender.client, question.id)
      assertFailed(
        yield* send(receiver.client, "sender", message("a", { replyTo: question.id })),
        "E_REPLY_TARGET",
        "Reply target does not match a pending ask"
      )
    }))
})

describe("P72/P73 supersede", () => {
  it.live("the target gets message_control supersede, then the new message; the old id replays as superseded", () =>
    Effect.gen(function*() {
      const { sender, receiver } = yield* pair
      const first = message("draft")
      assertDelivered(yield* send(sender.client, "receiver", first))
      yield* messageFor(receiver.client, first.id)
      const second = message("final", { supersedes: first.id })
      assertDelivered(yield* send(sender.client, "receiver", second))
      const control = yield* receiver.client.next("message_control")
      assert.strictEqual(control.control.action, "supersede")
      assert.strictEqual(control.control.messageId, first.id)
      assert.strictEqual(control.control.supersededBy, second.id)
      assert.strictEqual(control.from.id, "sender")
      const replacement = yield* messageFor(receiver.client, second.id)
      assert.strictEqual(replacement.message.supersedes, first.id)
      const frames = receiver.client.received()
      const controlAt = frames.findIndex((f) => f.type === "message_control")
      const messageAt = frames.findIndex((f) => f.type === "message" && f.message.id === second.id)
      assert.isBelow(controlAt, messageAt, "the control must precede the new message")
      assertFailed(yield* send(sender.client, "receiver", first), "E_DELIVERY_SUPERSEDED", `Superseded by ${second.id}`)
      yield* settled([sender.client], [receiver.client])
      yield* receiver.client.expectNothing("message")
    }))

  it.live("superseding a message never sent to that target → E_SUPERSEDE_TARGET, nothing sent", () =>
    Effect.gen(function*() {
      const { sender, receiver, third } = yield* pair
      const toThird = message("for third")
      assertDelivered(yield* send(sender.client, "third", toThird))
      yield* messageFor(third.client, toThird.id)
      const reason = "Supersede target does not match a previous message from this sender to this receiver"
      assertFailed(
        yield* send(sender.client, "receiver", message("x", { supersedes: toThird.id })),
        "E_SUPERSEDE_TARGET",
        reason
      )
      assertFailed(
        yield* send(sender.client, "receiver", message("y", { supersedes: "unknown" })),
        "E_SUPERSEDE_TARGET",
        reason
      )
      // Another sender cannot supersede the sender's message.
      const mine = message("mine")
      assertDelivered(yield* send(sender.client, "receiver", mine))
      yield* messageFor(receiver.client, mine.id)
      assertFailed(yield* send(third.client, "receiver", message("z", { supersedes: mine.id })), "E_SUPERSEDE_TARGET", reason)
      yield* settled([sender.client, third.client], [receiver.client])
      yield* receiver.client.expectNothing(["message", "message_control"])
    }))

  it.live("superseding towards a disconnected target → E_SUPERSEDE_TARGET \"…is not connected\"", () =>
    Effect.gen(function*() {
      const { sender, receiver } = yield* pair
      const first = message("draft")
      assertDelivered(yield* send(sender.client, "receiver", first))
      yield* messageFor(receiver.client, first.id)
      yield* receiver.client.destroy
      yield* sender.client.next("session_left", (f) => f.sessionId === "receiver")
      assertFailed(
        yield* send(sender.client, "receiver", message("final", { supersedes: first.id })),
        "E_SUPERSEDE_TARGET",
        "Supersede target is not connected"
      )
    }))
})
