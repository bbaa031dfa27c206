/**
 * `ephemeral-v1`: a short-lived session (the CLI's one-shot commands) is
 * forgotten when it leaves. Nothing sent to its name or id afterwards is
 * queued for it (P34/P49 remember other sessions a day), and no later
 * session of the same name and directory inherits mail meant for it. A
 * client that does not ask for the extension keeps the base behaviour, with
 * or without the field. One that ends by `unregister` will not come back: mail
 * it had not read fails at once (its sender told); one whose connection
 * dropped gets it when it registers again under its id.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { Reason } from "../../src/protocol/delivery.ts"
import { EPHEMERAL_V1, RECEIVED_V1 } from "../../src/protocol/features.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { assertDelivered, assertFailed } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { message, messageFor, register, send } from "../support/broker.ts"
import { durableBroker } from "../support/durable.ts"
import { advance, memoryNetwork, withMemoryBroker } from "../support/memory.ts"

/** A one-shot command's registration whose client confirms what it read (`received-v1`), as the CLI's does. */
const ONE_SHOT = { frame: { features: [EPHEMERAL_V1, RECEIVED_V1], ephemeral: true } }

describe("ephemeral-v1: a short-lived session is forgotten when it leaves", () => {
  it.effect("after it leaves, a send to its name or id is not found, not queued", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const sender = yield* broker.session({ sessionId: "sender", name: "sender" })
      const once = yield* broker.session({
        sessionId: "once-1",
        name: "dave",
        frame: { features: [EPHEMERAL_V1], ephemeral: true }
      })
      assert.include(once.registered.features ?? [], EPHEMERAL_V1)
      // While it runs it is a session like any other.
      assertDelivered(yield* send(sender.client, "dave", message("while it runs")))
      yield* once.client.destroy
      yield* sender.client.next("session_left")
      assertFailed(yield* send(sender.client, "dave", message("after it ended")), "E_TARGET_NOT_FOUND", "Session not found")
      assertFailed(yield* send(sender.client, "once-1", message("after it ended")), "E_TARGET_NOT_FOUND", "Session not found")
    }))

  it.effect("it has no mailbox identity: mail queued for a departed session of its name and directory waits for that one", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const sender = yield* broker.session({ sessionId: "sender", name: "sender" })
      // A session that stays (a watch, pi) leaves mail behind it for its next self; an ephemeral one of the
      // same name and directory, run in between, is not given it.
      const watch = yield* broker.session({ sessionId: "watch-1", name: "dave", cwd: "/work" })
      yield* watch.client.destroy
      yield* sender.client.next("session_left")
      assertDelivered(yield* send(sender.client, "dave", message("for dave's watch")), "queued")
      const once = yield* broker.session({
        sessionId: "once-2",
        name: "dave",
        cwd: "/work",
        frame: { features: [EPHEMERAL_V1], ephemeral: true }
      })
      yield* settled([once.client]) // the registration's flush has been read
      yield* once.client.expectNothing("message")
      yield* once.client.destroy
      const back = yield* broker.connect("back")
      yield* register(back, { sessionId: "watch-2", name: "dave", cwd: "/work" })
      assert.strictEqual((yield* back.next("message")).message.content.text, "for dave's watch")
    }))

  it.effect("an ephemeral registration that takes a live session's id over (P16) is that session: remembered when it leaves", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const sender = yield* broker.session({ sessionId: "sender", name: "sender" })
      yield* broker.session({ sessionId: "kept-1", name: "frank" })
      const taker = yield* broker.session({
        sessionId: "kept-1",
        name: "frank",
        frame: { features: [EPHEMERAL_V1], ephemeral: true }
      })
      yield* taker.client.destroy
      yield* sender.client.next("session_left")
      assertDelivered(yield* send(sender.client, "frank", message("for frank's next self")), "queued")
    }))

  it.effect("without the extension the field is ignored: the session is remembered and mail is queued for it", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const sender = yield* broker.session({ sessionId: "sender", name: "sender" })
      const base = yield* broker.session({ sessionId: "base-1", name: "erin", frame: { ephemeral: true } })
      assert.notInclude(base.registered.features ?? [], EPHEMERAL_V1)
      yield* base.client.destroy
      yield* sender.client.next("session_left")
      assertDelivered(yield* send(sender.client, "erin", message("queued for erin")), "queued")
    }))
})

describe("ephemeral-v1: mail a short-lived session did not read", () => {
  it.effect("an orderly unregister fails it at once: its sender gets an expired receipt naming the session", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const sender = yield* broker.session({ sessionId: "sender", name: "sender" })
      const once = yield* broker.session({ sessionId: "once-3", name: "dave", ...ONE_SHOT })
      const unread = message("never read")
      assertDelivered(yield* send(sender.client, "dave", unread))
      yield* messageFor(once.client, unread.id) // on its socket, never confirmed
      yield* once.client.send({ type: "unregister" })
      // Told on the unregister itself, while the connection is still open.
      const receipt = yield* sender.client.next("message_receipt", (frame) => frame.receipt.messageId === unread.id)
      assert.isFalse(once.client.isClosed())
      assert.strictEqual(receipt.receipt.status, "expired")
      assert.strictEqual(receipt.receipt.detail, Reason.endedUnread("dave (once-3)"))
      assert.strictEqual(receipt.from.id, "once-3")
      assert.strictEqual(receipt.from.name, "dave")
      // Gone for good: nothing is queued for it afterwards either.
      assertFailed(yield* send(sender.client, "once-3", message("later")), "E_TARGET_NOT_FOUND", "Session not found")
    }))

  it.effect("mail still unwritten when it unregisters fails too, with the read-but-unconfirmed mail ahead of it", () =>
    Effect.gen(function*() {
      // Two frames fit the link: the rest waits in the broker's outbox, unwritten.
      const broker = yield* withMemoryBroker({ linkCapacity: 2 })
      const sender = yield* broker.session({ sessionId: "sender", name: "sender" })
      const once = yield* broker.session({ sessionId: "once-4", ...ONE_SHOT })
      const sent = Array.from({ length: 6 }, (_, i) => message(`unread ${i}`))
      for (const msg of sent) assertDelivered(yield* send(sender.client, "once-4", msg))
      yield* once.client.send({ type: "unregister" })
      yield* once.client.destroy
      for (const msg of sent) {
        const receipt = yield* sender.client.next("message_receipt", (frame) => frame.receipt.messageId === msg.id)
        assert.strictEqual(receipt.receipt.detail, Reason.endedUnread("once-4"))
      }
      const order = sender.client.received().flatMap((frame) => frame.type === "message_receipt" ? [frame.receipt.messageId] : [])
      assert.deepStrictEqual(order, sent.map((msg) => msg.id))
    }))

  it.effect("a dropped connection (no unregister) keeps it: it reaches the session when it registers again under its id", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const sender = yield* broker.session({ sessionId: "sender", name: "sender" })
      const once = yield* broker.session({ sessionId: "once-5", name: "dave", ...ONE_SHOT })
      const unread = message("on its way when the connection dropped")
      assertDelivered(yield* send(sender.client, "dave", unread))
      yield* messageFor(once.client, unread.id)
      yield* once.client.destroy
      yield* sender.client.next("session_left")
      const back = yield* broker.connect("back")
      yield* register(back, { sessionId: "once-5", name: "dave", ...ONE_SHOT })
      assert.strictEqual((yield* messageFor(back, unread.id)).message.content.text, unread.content.text)
      yield* settled([back, sender.client])
      yield* sender.client.expectNothing("message_receipt")
    }))

  it.effect("a durable broker stores the failure: a sender away then is told after a restart", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const first = yield* durableBroker(world, disk)
      const sender = yield* world.session({ sessionId: "sender", name: "sender" })
      const once = yield* world.session({ sessionId: "once-6", name: "dave", ...ONE_SHOT })
      const unread = message("never read, stored")
      assertDelivered(yield* send(sender.client, "dave", unread))
      yield* messageFor(once.client, unread.id)
      yield* sender.client.destroy
      yield* once.client.next("session_left")
      yield* once.client.send({ type: "unregister" })
      yield* once.client.destroy
      // The commit that drops the mail stores the notice owed to the sender.
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(disk.mail.size, 0)
      assert.strictEqual(disk.notices.size, 1)
      yield* first.crash

      yield* durableBroker(world, disk)
      const back = yield* world.session({ sessionId: "sender", name: "sender" })
      const receipt = yield* back.client.next("message_receipt", (frame) => frame.receipt.messageId === unread.id)
      assert.strictEqual(receipt.receipt.detail, Reason.endedUnread("dave (once-6)"))
    }))
})
