/**
 * Asks and replies across departures (Asks.ts, MailDelivery.ts):
 *
 * - An ask that went back to its recipient's mailbox (written, never
 *   confirmed read with `received-v1`, and the connection dropped) is not
 *   asked again once the ask is over: withdrawn by `cancel_ask`, or expired
 *   — in memory, and across a durable broker's restart (one withdrawn by
 *   `cancel_ask` and restored past its deadline gets its asker no `expired`
 *   receipt: stale-closed-ask.test.ts has the same in memory). One withdrawn by
 *   `cancel_message` is given again to the client that read it, with the
 *   cancel behind it (WithdrawnCopies.ts).
 * - A replace-mode ask stored while staged, whose edge opens at a durable
 *   restart, tells its asker granted `ask-expiry-v1` when it expires.
 * - A reply to an asker that left waits for that asker: P49's sole live
 *   holder of the asker's name and cwd, which never asked, does not get it,
 *   live or when it registers; a reply sent to it by name is told why it
 *   does not match, and how to reach the asker.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DEFAULT_REPLACE_WINDOW_MS } from "../../src/broker/options.ts"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { Reason } from "../../src/protocol/delivery.ts"
import { ASK_EXPIRY_V1, ASK_TIMEOUT_V1, DELIVERY_V1, RECEIVED_V1 } from "../../src/protocol/features.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { assertDelivered, assertFailed } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { message, messageFor, send, type Session } from "../support/broker.ts"
import { durableBroker } from "../support/durable.ts"
import { advance, type MemoryNetwork, memoryNetwork, withMemoryBroker } from "../support/memory.ts"

const CONFIRMING = { frame: { features: [RECEIVED_V1] } }

/** Alice, and bob, whose client confirms what it reads (`received-v1`). */
const aliceAndBob = (world: MemoryNetwork) =>
  Effect.gen(function*() {
    const alice = yield* world.session({ sessionId: "alice", name: "alice" })
    const bob = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
    return { alice, bob }
  })

/** Alice asks bob, whose client read the question and never confirmed it; returns the question. */
const askedUnconfirmed = (alice: Session, bob: Session) =>
  Effect.gen(function*() {
    const question = message("still need this?", { expectsReply: true })
    assertDelivered(yield* send(alice.client, "bob", question))
    yield* messageFor(bob.client, question.id)
    return question
  })

/** Bob's connection drops; alice sees him leave. */
const bobDrops = (alice: Session, bob: Session) =>
  Effect.gen(function*() {
    yield* bob.client.destroy
    yield* alice.client.next("session_left", (frame) => frame.sessionId === "bob")
  })

/** Bob comes back and is asked nothing; alice got no message and no receipt meanwhile. */
const bobBackAskedNothing = (world: MemoryNetwork, alice: Session) =>
  Effect.gen(function*() {
    const back = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
    yield* settled([back.client], [alice.client])
    assert.strictEqual(back.client.count("message"), 0, "the withdrawn question was asked again")
    return back
  })

describe("an ask that went back to the mailbox is not asked once it is over", () => {
  it.effect("cancel_ask before the recipient's connection dropped: the returning recipient is not asked", () =>
    Effect.gen(function*() {
      const world = yield* withMemoryBroker()
      const { alice, bob } = yield* aliceAndBob(world)
      const question = yield* askedUnconfirmed(alice, bob)
      yield* alice.client.send({ type: "cancel_ask", messageId: question.id })
      yield* settled([alice.client])
      yield* bobDrops(alice, bob)
      assert.strictEqual((yield* world.broker.stats).mailbox, 0, "the withdrawn question went back to the mailbox")
      yield* bobBackAskedNothing(world, alice)
      yield* alice.client.expectNothing("message_receipt")
    }))

  it.effect("cancel_ask while the question waits in the mailbox: it leaves the mailbox at once", () =>
    Effect.gen(function*() {
      const world = yield* withMemoryBroker()
      const { alice, bob } = yield* aliceAndBob(world)
      const question = yield* askedUnconfirmed(alice, bob)
      yield* bobDrops(alice, bob)
      assert.strictEqual((yield* world.broker.stats).mailbox, 1, "the unconfirmed question went back to the mailbox")
      yield* alice.client.send({ type: "cancel_ask", messageId: question.id })
      yield* settled([alice.client])
      assert.strictEqual((yield* world.broker.stats).mailbox, 0)
      // Its replay record says what alice was told, not "queued": a same-id retry is answered so, not asked.
      assertDelivered(yield* send(alice.client, "bob", question))
      yield* bobBackAskedNothing(world, alice)
      yield* alice.client.expectNothing("message_receipt")
    }))

  // Its client read it: kept for that client, like any cancelled message it read (review revi I5, WithdrawnCopies.ts).
  it.effect("cancel_message on the unconfirmed question: the same client's return gets it with the cancel behind it, and its record stays cancelled", () =>
    Effect.gen(function*() {
      const world = yield* withMemoryBroker()
      const { alice, bob } = yield* aliceAndBob(world)
      const question = yield* askedUnconfirmed(alice, bob)
      yield* alice.client.send({ type: "cancel_message", messageId: question.id })
      yield* alice.client.next("delivered", (frame) => frame.messageId === question.id)
      yield* bobDrops(alice, bob)
      const back = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
      const control = yield* back.client.next("message_control", (frame) => frame.control.messageId === question.id)
      assert.strictEqual(control.control.action, "cancel")
      // The question comes right before its cancel, and once (review revl L4: the order was not checked).
      const shown = back.client.received().flatMap((frame) =>
        frame.type === "message" ? [`message ${frame.message.id}`] :
        frame.type === "message_control" ? [`${frame.control.action} ${frame.control.messageId}`] : []
      )
      assert.deepStrictEqual(shown, [`message ${question.id}`, `cancel ${question.id}`])
      assertFailed(yield* send(alice.client, "bob", question), "E_DELIVERY_CANCELLED")
    }))

  it.effect("an ask that times out while its recipient is away is withdrawn, and its asker gets an `expired` receipt", () =>
    Effect.gen(function*() {
      const askTimeout = 60_000
      const world = yield* withMemoryBroker({ askTimeout })
      const { alice, bob } = yield* aliceAndBob(world)
      const carol = yield* world.session({ sessionId: "carol", name: "carol" })
      const question = yield* askedUnconfirmed(alice, bob)
      yield* bobDrops(alice, bob)
      yield* advance(askTimeout)
      // Any send prunes expired edges: the question leaves the mailbox then, and alice is told.
      assertDelivered(yield* send(carol.client, "alice", message("tick")))
      const receipt = yield* alice.client.next("message_receipt", (frame) => frame.receipt.messageId === question.id)
      assert.strictEqual(receipt.receipt.status, "expired")
      assert.strictEqual(receipt.receipt.detail, Reason.askExpired)
      assert.strictEqual((yield* world.broker.stats).mailbox, 0)
      yield* bobBackAskedNothing(world, alice)
      assertFailed(yield* send(alice.client, "bob", question), "E_DELIVERY_EXPIRED", Reason.expired)
    }))

  it.effect("an ask that timed out with no send since is not flushed to its returning recipient either", () =>
    Effect.gen(function*() {
      const askTimeout = 60_000
      const world = yield* withMemoryBroker({ askTimeout })
      const { alice, bob } = yield* aliceAndBob(world)
      const question = yield* askedUnconfirmed(alice, bob)
      yield* bobDrops(alice, bob)
      yield* advance(askTimeout)
      yield* bobBackAskedNothing(world, alice)
      const receipt = yield* alice.client.next("message_receipt", (frame) => frame.receipt.messageId === question.id)
      assert.strictEqual(receipt.receipt.detail, Reason.askExpired)
    }))

  it.effect("an ask still open goes back to its recipient as before, and its reply is accepted", () =>
    Effect.gen(function*() {
      const world = yield* withMemoryBroker()
      const { alice, bob } = yield* aliceAndBob(world)
      const question = yield* askedUnconfirmed(alice, bob)
      yield* bobDrops(alice, bob)
      const back = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
      yield* messageFor(back.client, question.id)
      const answer = message("yes", { replyTo: question.id })
      assertDelivered(yield* send(back.client, "alice", answer))
      yield* messageFor(alice.client, answer.id)
    }))

  it.effect("durable: a question withdrawn before the broker restarted is not asked after the restart, and leaves the store", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const first = yield* durableBroker(world, disk)
      const { alice, bob } = yield* aliceAndBob(world)
      const question = yield* askedUnconfirmed(alice, bob)
      yield* alice.client.send({ type: "cancel_ask", messageId: question.id })
      yield* settled([alice.client])
      yield* advance(LAZY_FLUSH) // the cancel is committed
      assert.strictEqual(disk.mail.size, 1, "the unconfirmed question is stored")
      yield* first.crash

      const second = yield* durableBroker(world, disk)
      assert.strictEqual((yield* second.core.stats).mailbox, 0, "the withdrawn question was restored to the mailbox")
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(disk.mail.size, 0, "the withdrawn question stayed stored")
      const back = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
      yield* settled([back.client])
      assert.strictEqual(back.client.count("message"), 0, "the withdrawn question was asked after the restart")
    }))

  it.effect("durable: a question withdrawn by cancel_ask, restored past its deadline after a restart: its asker gets no expired receipt and a retry still hears delivered", () =>
    Effect.gen(function*() {
      const askTimeout = 60_000
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const first = yield* durableBroker(world, disk, { askTimeout })
      const { alice, bob } = yield* aliceAndBob(world)
      const question = yield* askedUnconfirmed(alice, bob)
      yield* alice.client.send({ type: "cancel_ask", messageId: question.id })
      yield* settled([alice.client])
      yield* advance(LAZY_FLUSH) // the cancel is committed
      assert.strictEqual(disk.mail.size, 1, "the unconfirmed question is stored")
      yield* first.crash
      yield* advance(askTimeout)

      yield* durableBroker(world, disk, { askTimeout })
      const back = yield* world.session({ sessionId: "alice", name: "alice" })
      // Its replay record says what alice was told: a same-id retry is answered so, not "expired".
      assertDelivered(yield* send(back.client, "bob", question))
      yield* settled([back.client])
      yield* back.client.expectNothing("message_receipt")
    }))

  it.effect("a replace-mode ask answered, then back in the mailbox unconfirmed: not asked again", () =>
    Effect.gen(function*() {
      const world = yield* withMemoryBroker()
      const both = { frame: { features: [DELIVERY_V1, RECEIVED_V1] } }
      const alice = yield* world.session({ sessionId: "alice", name: "alice", ...both })
      const bob = yield* world.session({ sessionId: "bob", name: "bob", ...both })
      const question = message("still need this?", { expectsReply: true })
      yield* alice.client.send({ type: "send", to: "bob", message: question, delivery: "queue", queueMode: "replace", threadId: "t" })
      yield* alice.client.next("delivery_queued", (f) => f.messageId === question.id)
      yield* advance(DEFAULT_REPLACE_WINDOW_MS)
      yield* messageFor(bob.client, question.id)
      const answer = message("yes", { replyTo: question.id })
      assertDelivered(yield* send(bob.client, "alice", answer))
      yield* messageFor(alice.client, answer.id)
      yield* bobDrops(alice, bob)
      yield* bobBackAskedNothing(world, alice)
    }))

  it.effect("durable: a replace-mode ask stored while staged (no edge yet) is still asked after a restart, and its answer accepted", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const first = yield* durableBroker(world, disk)
      const withDelivery = { frame: { features: [DELIVERY_V1] } }
      const alice = yield* world.session({ sessionId: "alice", name: "alice", ...withDelivery })
      yield* world.session({ sessionId: "bob", name: "bob", ...withDelivery })
      const question = message("staged question", { expectsReply: true })
      yield* alice.client.send({
        type: "send", to: "bob", message: question, delivery: "queue", queueMode: "replace", threadId: "t", askTimeoutMs: 600_000
      })
      const ack = yield* alice.client.next(["delivered", "delivery_failed", "delivery_queued"], (f) => f.messageId === question.id)
      assert.strictEqual(ack.type, "delivery_queued")
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(disk.mail.size, 1, "the staged ask is stored")
      yield* first.crash

      yield* durableBroker(world, disk)
      const alice2 = yield* world.session({ sessionId: "alice", name: "alice", label: "alice2", ...withDelivery })
      const back = yield* world.session({ sessionId: "bob", name: "bob", label: "bob2", ...withDelivery })
      yield* messageFor(back.client, question.id)
      // Its edge opened at the restore: the answer is accepted and reaches the asker.
      const answer = message("yes", { replyTo: question.id })
      assertDelivered(yield* send(back.client, "alice", answer))
      yield* messageFor(alice2.client, answer.id)
    }))
})

describe("a staged ask restored at a restart tells its asker when it expires (ask-expiry-v1)", () => {
  it.effect("durable: a replace-mode ask stored while staged reopens told: its asker, granted ask-expiry-v1, gets ask_expired at the deadline", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const first = yield* durableBroker(world, disk)
      const expiring = { frame: { features: [DELIVERY_V1, ASK_TIMEOUT_V1, ASK_EXPIRY_V1] } }
      const alice = yield* world.session({ sessionId: "alice", name: "alice", ...expiring })
      yield* world.session({ sessionId: "bob", name: "bob", frame: { features: [DELIVERY_V1] } })
      const question = message("staged question", { expectsReply: true })
      yield* alice.client.send({
        type: "send", to: "bob", message: question, delivery: "queue", queueMode: "replace", threadId: "t", askTimeoutMs: 60_000
      })
      const ack = yield* alice.client.next(["delivered", "delivery_failed", "delivery_queued"], (f) => f.messageId === question.id)
      assert.strictEqual(ack.type, "delivery_queued")
      yield* advance(LAZY_FLUSH)
      yield* first.crash

      yield* durableBroker(world, disk)
      const alice2 = yield* world.session({ sessionId: "alice", name: "alice", label: "alice2", ...expiring })
      const back = yield* world.session({ sessionId: "bob", name: "bob", label: "bob2", frame: { features: [DELIVERY_V1] } })
      yield* messageFor(back.client, question.id)
      // Unanswered: at its deadline (from when the first broker received it) the asker is told.
      yield* advance(60_000)
      assert.strictEqual((yield* alice2.client.next("ask_expired")).messageId, question.id)
    }))
})

describe("an ask that went back to the mailbox waits for the session asked", () => {
  it.effect("another session with its name and cwd does not collect it: only the session asked can answer it", () =>
    Effect.gen(function*() {
      const world = yield* withMemoryBroker()
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob = yield* world.session({ sessionId: "bob", name: "bob", cwd: "/tmp", ...CONFIRMING })
      const question = yield* askedUnconfirmed(alice, bob)
      yield* bobDrops(alice, bob)
      const other = yield* world.session({ sessionId: "bob-2", name: "bob", cwd: "/tmp", ...CONFIRMING })
      yield* settled([other.client])
      yield* other.client.expectNothing("message")
      yield* other.client.destroy
      yield* alice.client.next("session_left", (frame) => frame.sessionId === "bob-2")
      const back = yield* world.session({ sessionId: "bob", name: "bob", cwd: "/tmp", ...CONFIRMING })
      yield* messageFor(back.client, question.id)
      const answer = message("yes", { replyTo: question.id })
      assertDelivered(yield* send(back.client, "alice", answer))
    }))
})

describe("a reply to an asker that left waits for that asker (not P49's sole holder)", () => {
  /** alice-1 (name alice, cwd /tmp) asked bob and left; alice-2 holds the same name and cwd now. */
  const askerReplaced = Effect.gen(function*() {
    const world = yield* withMemoryBroker()
    const first = yield* world.session({ sessionId: "alice-1", name: "alice", cwd: "/tmp" })
    const bob = yield* world.session({ sessionId: "bob", name: "bob" })
    const question = message("q?", { expectsReply: true })
    assertDelivered(yield* send(first.client, "bob", question))
    yield* messageFor(bob.client, question.id)
    yield* first.client.destroy
    yield* bob.client.next("session_left", (frame) => frame.sessionId === "alice-1")
    return { world, bob, question }
  })

  it.effect("a reply by the asker's id is queued for it, not delivered to the other holder of its name", () =>
    Effect.gen(function*() {
      const { world, bob, question } = yield* askerReplaced
      const second = yield* world.session({ sessionId: "alice-2", name: "alice", cwd: "/tmp" })
      const answer = message("a", { replyTo: question.id })
      assertDelivered(yield* send(bob.client, "alice-1", answer), "queued")
      yield* settled([bob.client], [second.client])
      yield* second.client.expectNothing("message")
      // An ordinary message for the departed session still goes to the sole holder (P49).
      const plain = message("fyi")
      assertDelivered(yield* send(bob.client, "alice-1", plain))
      yield* messageFor(second.client, plain.id)

      const back = yield* world.session({ sessionId: "alice-1", name: "alice", cwd: "/tmp" })
      assert.strictEqual((yield* messageFor(back.client, answer.id)).message.replyTo, question.id)
    }))

  it.effect("a reply queued before the other holder registered is not collected by its registration", () =>
    Effect.gen(function*() {
      const { world, bob, question } = yield* askerReplaced
      const answer = message("a", { replyTo: question.id })
      assertDelivered(yield* send(bob.client, "alice-1", answer), "queued")
      const second = yield* world.session({ sessionId: "alice-2", name: "alice", cwd: "/tmp" })
      yield* settled([second.client])
      yield* second.client.expectNothing("message")
      const back = yield* world.session({ sessionId: "alice-1", name: "alice", cwd: "/tmp" })
      yield* messageFor(back.client, answer.id)
    }))

  it.effect("a reply by name, which the other holder now answers to, is refused saying the asker left", () =>
    Effect.gen(function*() {
      const { world, bob, question } = yield* askerReplaced
      const second = yield* world.session({ sessionId: "alice-2", name: "alice", cwd: "/tmp" })
      assertFailed(
        yield* send(bob.client, "alice", message("a", { replyTo: question.id })),
        "E_REPLY_TARGET",
        Reason.replyAskerLeft
      )
      assert.isTrue(Reason.replyAskerLeft.startsWith(Reason.replyWrongAsk))
      yield* settled([bob.client], [second.client])
      yield* second.client.expectNothing("message")
      // The edge stays: the reply by id still goes through.
      assertDelivered(yield* send(bob.client, "alice-1", message("a", { replyTo: question.id })), "queued")
    }))
})
