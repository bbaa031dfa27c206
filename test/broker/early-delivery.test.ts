/**
 * Early delivery (StoreJournal.markDelivery): a durable broker writes a
 * message to a recipient whose client drops copies itself (`received-v1`)
 * without waiting for the commit, asks included; the sender's
 * acknowledgement still waits for it. A base client's deliveries keep
 * waiting. In memory, with a
 * memory store whose commits wait on a gate (../support/durable.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Ref } from "effect"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { assertDelivered, assertFailed } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { ackFor, message, messageFor, send } from "../support/broker.ts"
import { durableBroker, gatedStore } from "../support/durable.ts"
import { advance, memoryNetwork, step } from "../support/memory.ts"

const CONFIRMING = { frame: { features: [RECEIVED_V1] } }

/** A broker whose commits wait for `gate`, recording every batch it stores; alice, and bob who confirms receipt. */
const gatedBroker = Effect.gen(function*() {
  const world = yield* memoryNetwork()
  const disk = makeMemoryMailState()
  const { store, gate, commits, begun } = yield* gatedStore(disk)
  const broker = yield* world.startBroker({ store })
  const alice = yield* world.session({ sessionId: "alice", name: "alice" })
  const bob = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
  // Registration stores nothing: the gate holds no one yet.
  return { world, disk, gate, commits, begun, broker, alice, bob }
})

describe("early delivery to a client that confirms receipt (received-v1)", () => {
  /** `msg` from alice (a base client) reaches bob before its commit; alice's acknowledgement waits for it. */
  const deliveredBeforeCommit = (msg: ReturnType<typeof message>) =>
    Effect.gen(function*() {
      const { alice, bob, gate } = yield* gatedBroker
      yield* alice.client.send({ type: "send", to: "bob", message: msg })
      yield* messageFor(bob.client, msg.id)
      yield* settled([bob.client])
      yield* alice.client.expectNothing(["delivered", "delivery_failed"])
      yield* step(Deferred.succeed(gate, undefined))
      assertDelivered(yield* ackFor(alice.client, msg.id))
    })

  it.effect("the message reaches the recipient before its commit; the sender's acknowledgement waits for the commit", () =>
    deliveredBeforeCommit(message("early")))

  it.effect("an ask goes before its commit too; its acknowledgement waits for it", () =>
    deliveredBeforeCommit(message("which branch?", { expectsReply: true })))

  it.effect("an ask delivered and lost to a crash before its commit: the reply finds no ask until the asker sends it again", () =>
    Effect.gen(function*() {
      const { world, alice, bob, broker, disk, gate } = yield* gatedBroker
      const ask = message("which branch?", { expectsReply: true })
      yield* alice.client.send({ type: "send", to: "bob", message: ask })
      yield* messageFor(bob.client, ask.id)
      disk.down = true
      yield* Deferred.succeed(gate, undefined)
      yield* broker.crash

      yield* durableBroker(world, disk)
      const alice2 = yield* world.session({ sessionId: "alice", name: "alice", ...CONFIRMING })
      const bob2 = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
      const reply = message("main", { replyTo: ask.id })
      // What IntercomClient retries for its rejoin grace (test/client/rejoin.test.ts).
      assertFailed(yield* send(bob2.client, "alice", reply), "E_REPLY_TARGET")
      // The asker was never acknowledged: it sends the ask again, with the same id.
      yield* alice2.client.send({ type: "send", to: "bob", message: ask })
      yield* messageFor(bob2.client, ask.id)
      yield* bob2.client.send({ type: "send", to: "alice", message: reply })
      assert.strictEqual((yield* messageFor(alice2.client, reply.id)).message.replyTo, ask.id)
      // Both acknowledgements come with the commit the lazy flush makes (neither client confirms receipts).
      yield* advance(LAZY_FLUSH)
      assertDelivered(yield* ackFor(alice2.client, ask.id))
      assertDelivered(yield* ackFor(bob2.client, reply.id))
    }))

  it.effect("a base client's delivery still waits for the commit", () =>
    Effect.gen(function*() {
      const { world, alice, gate } = yield* gatedBroker
      const carol = yield* world.session({ sessionId: "carol", name: "carol" })
      const msg = message("held for a base client")
      yield* alice.client.send({ type: "send", to: "carol", message: msg })
      yield* step(Effect.void)
      yield* carol.client.expectNothing("message")
      yield* step(Deferred.succeed(gate, undefined))
      assertDelivered(yield* ackFor(alice.client, msg.id))
      yield* messageFor(carol.client, msg.id)
    }))

  it.effect("a broker killed before the commit: the sender's retry is delivered again, as a copy the client drops", () =>
    Effect.gen(function*() {
      const { world, alice, bob, broker, disk, gate } = yield* gatedBroker
      const msg = message("delivered, never acknowledged")
      yield* alice.client.send({ type: "send", to: "bob", message: msg })
      yield* messageFor(bob.client, msg.id)
      yield* alice.client.expectNothing(["delivered", "delivery_failed"])
      // The commit completes only as the process dies, and so writes nothing (as with kill -9).
      disk.down = true
      yield* Deferred.succeed(gate, undefined)
      yield* broker.crash
      assert.strictEqual(disk.records.size, 0, "nothing was stored, nothing acknowledged")

      yield* durableBroker(world, disk)
      const alice2 = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob2 = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
      assertDelivered(yield* send(alice2.client, "bob", msg))
      // The same (sender, id) again: received-v1 promises the client drops it (RecentMessages).
      const again = yield* messageFor(bob2.client, msg.id)
      assert.strictEqual(again.message.content.text, "delivered, never acknowledged")
    }))

  it.effect("a message to a session is not held behind the commit of its own last send; unread, that send's acknowledgement comes with the lazy commit", () =>
    Effect.gen(function*() {
      const { world, bob, begun, gate } = yield* gatedBroker
      const carol = yield* world.session({ sessionId: "carol", name: "carol", ...CONFIRMING })
      const first = message("from bob")
      yield* bob.client.send({ type: "send", to: "carol", message: first })
      yield* messageFor(carol.client, first.id)
      const second = message("to bob, while bob's acknowledgement waits")
      yield* carol.client.send({ type: "send", to: "bob", message: second })
      yield* messageFor(bob.client, second.id)
      yield* settled([bob.client, carol.client])
      // Neither recipient said it read its message, and no output waits for a commit: none has begun.
      yield* bob.client.expectNothing(["delivered", "delivery_failed"])
      yield* carol.client.expectNothing(["delivered", "delivery_failed"])
      assert.strictEqual(yield* Ref.get(begun), 0)
      // The lazy flush begins the commit; the acknowledgements come once it has stored both messages.
      yield* advance(LAZY_FLUSH)
      yield* settled([bob.client, carol.client])
      assert.strictEqual(yield* Ref.get(begun), 1)
      yield* bob.client.expectNothing(["delivered", "delivery_failed"])
      yield* step(Deferred.succeed(gate, undefined))
      assertDelivered(yield* ackFor(bob.client, first.id))
      assertDelivered(yield* ackFor(carol.client, second.id))
    }))

  it.effect("a plain message between confirming clients is acknowledged once its recipient reads it, before any commit", () =>
    Effect.gen(function*() {
      const { world, bob, disk, gate, commits } = yield* gatedBroker
      const carol = yield* world.session({ sessionId: "carol", name: "carol", ...CONFIRMING })
      const msg = message("read before it was stored")
      yield* bob.client.send({ type: "send", to: "carol", message: msg })
      yield* messageFor(carol.client, msg.id)
      yield* settled([bob.client])
      yield* bob.client.expectNothing(["delivered", "delivery_failed"])
      yield* carol.client.send({ type: "received", frames: carol.client.received().length })
      assertDelivered(yield* ackFor(bob.client, msg.id))
      assert.strictEqual(disk.commits, 0, "acknowledged with nothing stored")
      // Its replay record is stored by the lazy commit; its mail, read before that commit, never is.
      yield* advance(LAZY_FLUSH)
      yield* step(Deferred.succeed(gate, undefined))
      const stored = yield* Ref.get(commits)
      assert.isTrue(stored.some((batch) => batch.records.some((record) => record.key.endsWith(msg.id))), "its record is stored")
      assert.isFalse(stored.some((batch) => batch.mailPuts.length > 0), "the mail was never written")
    }))

  it.effect("an ask between confirming clients is acknowledged by the commit, not by its receipt", () =>
    Effect.gen(function*() {
      const { world, bob, gate } = yield* gatedBroker
      const carol = yield* world.session({ sessionId: "carol", name: "carol", ...CONFIRMING })
      const ask = message("which branch?", { expectsReply: true })
      yield* bob.client.send({ type: "send", to: "carol", message: ask })
      yield* messageFor(carol.client, ask.id)
      yield* carol.client.send({ type: "received", frames: carol.client.received().length })
      yield* advance(LAZY_FLUSH)
      yield* settled([bob.client, carol.client])
      // Read, but its edge is not stored: a crash now would leave a reply nothing to find.
      yield* bob.client.expectNothing(["delivered", "delivery_failed"])
      yield* step(Deferred.succeed(gate, undefined))
      assertDelivered(yield* ackFor(bob.client, ask.id))
    }))

  it.effect("an ask is acknowledged once its asker has read the reply that answers it, before any commit", () =>
    Effect.gen(function*() {
      const { world, bob, begun, gate } = yield* gatedBroker
      const carol = yield* world.session({ sessionId: "carol", name: "carol", ...CONFIRMING })
      const ask = message("which branch?", { expectsReply: true })
      yield* bob.client.send({ type: "send", to: "carol", message: ask })
      yield* messageFor(carol.client, ask.id)
      yield* carol.client.send({ type: "received", frames: carol.client.received().length })
      const reply = message("main", { replyTo: ask.id })
      yield* carol.client.send({ type: "send", to: "bob", message: reply })
      yield* messageFor(bob.client, reply.id)
      yield* settled([bob.client, carol.client])
      // The reply is written, not yet read: neither acknowledgement may go.
      yield* bob.client.expectNothing(["delivered", "delivery_failed"])
      yield* carol.client.expectNothing(["delivered", "delivery_failed"])
      yield* bob.client.send({ type: "received", frames: bob.client.received().length })
      assertDelivered(yield* ackFor(bob.client, ask.id))
      assertDelivered(yield* ackFor(carol.client, reply.id))
      assert.strictEqual(yield* Ref.get(begun), 0, "no commit was needed")
      yield* Deferred.succeed(gate, undefined) // the broker's last commit, at shutdown
    }))
})
