/**
 * The durable broker (`store` option, StoreJournal.ts, StoreWriter.ts) over
 * the in-memory network, with a memory store whose state plays the disk
 * (../support/durable.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Ref } from "effect"
import {
  MailStoreError,
  type MailStoreService,
  makeMemory,
  makeMemoryMailState
} from "../../src/store/MailStore.ts"
import { assertDelivered, assertFailed } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { ackFor, message, messageFor, send } from "../support/broker.ts"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { durableBroker, gatedStore } from "../support/durable.ts"
import { advance, memoryNetwork, step } from "../support/memory.ts"

/** A durable broker over a memory disk, with alice registered and bob gone (his client destroyed). */
const bobAway = Effect.gen(function*() {
  const world = yield* memoryNetwork()
  const disk = makeMemoryMailState()
  const first = yield* durableBroker(world, disk)
  const alice = yield* world.session({ sessionId: "alice", name: "alice" })
  const bob = yield* world.session({ sessionId: "bob", name: "bob" })
  yield* bob.client.destroy
  yield* settled([alice.client])
  return { world, disk, first, alice }
})

describe("durable broker: crash and restart", () => {
  it.effect("mail queued for an absent session survives a crash and reaches it when it registers", () =>
    Effect.gen(function*() {
      const { world, disk, first, alice } = yield* bobAway
      const msg = message("while you were out")
      assertDelivered(yield* send(alice.client, "bob", msg), "queued")
      yield* first.crash

      yield* durableBroker(world, disk)
      const back = yield* world.session({ sessionId: "bob", name: "bob" })
      const received = yield* messageFor(back.client, msg.id)
      assert.strictEqual(received.message.content.text, "while you were out")
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(disk.mail.size, 0, "written mail leaves the store")
    }))

  it.effect("a retry of an acknowledged send after a crash gets the recorded answer and is not delivered again", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const first = yield* durableBroker(world, disk)
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob = yield* world.session({ sessionId: "bob", name: "bob" })
      const msg = message("exactly once")
      assertDelivered(yield* send(alice.client, "bob", msg))
      yield* messageFor(bob.client, msg.id)
      yield* advance(LAZY_FLUSH) // the delivered mail's delete is committed: only the retry could bring it again
      yield* first.crash

      yield* durableBroker(world, disk)
      const alice2 = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob2 = yield* world.session({ sessionId: "bob", name: "bob" })
      assertDelivered(yield* send(alice2.client, "bob", msg))
      yield* settled([alice2.client], [bob2.client])
      yield* bob2.client.expectNothing("message")
    }))

  it.effect("without a store the same retry after a crash is delivered a second time (what durability prevents)", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const first = yield* world.startBroker()
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      yield* world.session({ sessionId: "bob", name: "bob" })
      const msg = message("twice")
      assertDelivered(yield* send(alice.client, "bob", msg))
      yield* first.crash
      yield* world.startBroker()
      const alice2 = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob2 = yield* world.session({ sessionId: "bob", name: "bob" })
      assertDelivered(yield* send(alice2.client, "bob", msg))
      yield* messageFor(bob2.client, msg.id)
    }))

  it.effect("a cancel stored before the crash is answered delivered again when its sender repeats it after the restart", () =>
    Effect.gen(function*() {
      // Sim seed 9848 (--delivery): the first answer never reached the sender, whose connection died with the broker.
      const { world, disk, first, alice } = yield* bobAway
      const msg = message("never mind")
      assertDelivered(yield* send(alice.client, "bob", msg), "queued")
      yield* alice.client.send({ type: "cancel_message", messageId: msg.id })
      assert.deepStrictEqual({ ...(yield* ackFor(alice.client, msg.id)) }, { type: "delivered", messageId: msg.id })
      yield* first.crash

      yield* durableBroker(world, disk)
      const alice2 = yield* world.session({ sessionId: "alice", name: "alice" })
      yield* alice2.client.send({ type: "cancel_message", messageId: msg.id })
      assert.deepStrictEqual({ ...(yield* ackFor(alice2.client, msg.id)) }, { type: "delivered", messageId: msg.id })
      const bob2 = yield* world.session({ sessionId: "bob", name: "bob" })
      assertFailed(yield* send(alice2.client, "bob", msg), "E_DELIVERY_CANCELLED", "Sender cancelled the queued delivery")
      yield* settled([alice2.client], [bob2.client])
      yield* bob2.client.expectNothing(["message", "message_control"])
    }))

  it.effect("a reply to an ask made before the crash is accepted after it (the ask edge was stored)", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const first = yield* durableBroker(world, disk)
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob = yield* world.session({ sessionId: "bob", name: "bob" })
      const ask = message("which branch?", { expectsReply: true })
      assertDelivered(yield* send(alice.client, "bob", ask))
      yield* messageFor(bob.client, ask.id)
      yield* first.crash

      yield* durableBroker(world, disk)
      const alice2 = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob2 = yield* world.session({ sessionId: "bob", name: "bob" })
      const reply = message("main", { replyTo: ask.id })
      assertDelivered(yield* send(bob2.client, "alice", reply))
      assert.strictEqual((yield* messageFor(alice2.client, reply.id)).message.replyTo, ask.id)
      // Without the edge the broker refuses a reply (control: a made-up replyTo).
      assertFailed(yield* send(bob2.client, "alice", message("?", { replyTo: "no-such-ask" })), "E_REPLY_TARGET")
    }))

  it.effect("mail accepted but not yet committed when the broker dies was never acknowledged", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const gate = yield* Deferred.make<void>()
      // A commit that does not complete before the process dies (and then writes nothing).
      const store: MailStoreService = { ...makeMemory(disk), commit: () => Deferred.await(gate) }
      const first = yield* world.startBroker({ store })
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob = yield* world.session({ sessionId: "bob", name: "bob" })
      const msg = message("held")
      yield* alice.client.send({ type: "send", to: "bob", message: msg })
      yield* step(Effect.void)
      // Accepted in memory, but neither the ack nor the delivery leaves before the commit.
      yield* alice.client.expectNothing(["delivered", "delivery_failed"])
      yield* bob.client.expectNothing("message")
      disk.down = true
      yield* Deferred.succeed(gate, undefined)
      yield* first.crash
      assert.strictEqual(disk.records.size, 0)
      assert.strictEqual(disk.mail.size, 0)
    }))
})

describe("durable broker: commits gate output", () => {
  it.effect("the acks and the deliveries are written once the commit completes, one commit for a burst of sends", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const { store, gate, commits } = yield* gatedStore(makeMemoryMailState())
      yield* world.startBroker({ store })
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob = yield* world.session({ sessionId: "bob", name: "bob" })
      const msgs = [message("one"), message("two"), message("three")]
      yield* alice.client.sendRaw(Buffer.concat(msgs.map((msg) => frame({ type: "send", to: "bob", message: msg }))))
      yield* step(Effect.void)
      yield* bob.client.expectNothing("message")
      yield* alice.client.expectNothing(["delivered", "delivery_failed"])
      yield* step(Deferred.succeed(gate, undefined))
      for (const msg of msgs) assertDelivered(yield* ackFor(alice.client, msg.id))
      for (const msg of msgs) yield* messageFor(bob.client, msg.id)
      const first = (yield* Ref.get(commits)).find((batch) => batch.records.length > 0)
      assert.isDefined(first)
      assert.strictEqual(first?.records.length, 3, "one commit holds the whole read batch")
    }))

  it.effect("while commits fail, new sends are refused with a clear error and the unsaved send is held; it goes once a commit succeeds", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const memory = makeMemory(disk)
      let full = true
      const store: MailStoreService = {
        ...memory,
        commit: (batch) =>
          full ? Effect.fail(new MailStoreError({ operation: "commit", detail: "database or disk is full" })) : memory.commit(batch)
      }
      yield* world.startBroker({ store })
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob = yield* world.session({ sessionId: "bob", name: "bob" })
      const carol = yield* world.session({ sessionId: "carol", name: "carol" })
      const unsaved = message("unsaved")
      yield* alice.client.send({ type: "send", to: "bob", message: unsaved })
      yield* step(Effect.void)
      yield* alice.client.expectNothing(["delivered", "delivery_failed"])
      yield* bob.client.expectNothing("message")

      // Another sender, with nothing held, hears at once that sends are refused.
      const refused = yield* send(carol.client, "bob", message("refused"))
      assertFailed(refused, "E_DELIVERY_FAILED")
      assert.include(refused.type === "delivery_failed" ? refused.reason : "", "database or disk is full")
      assert.include(refused.type === "delivery_failed" ? refused.reason : "", "nothing was sent")
      assert.strictEqual(refused.type === "delivery_failed" ? refused.retryable : undefined, true)

      full = false
      yield* advance("1 second") // the writer's retry
      assertDelivered(yield* ackFor(alice.client, unsaved.id))
      yield* messageFor(bob.client, unsaved.id)
      assertDelivered(yield* send(carol.client, "bob", message("accepted again")))
    }))

  it.effect("a held send whose mail waits for an absent recipient is refused when its commit fails, and is never delivered later", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const memory = makeMemory(disk)
      let full = false
      const store: MailStoreService = {
        ...memory,
        commit: (batch) =>
          full ? Effect.fail(new MailStoreError({ operation: "commit", detail: "database or disk is full" })) : memory.commit(batch)
      }
      yield* world.startBroker({ store })
      // A client that confirms what it reads (`received-v1`, as IntercomClient, the CLI and pi do): its
      // acknowledgement waits for the commit aside, in the journal.
      const alice = yield* world.session({ sessionId: "alice", name: "alice", frame: { features: [RECEIVED_V1] } })
      const bob = yield* world.session({ sessionId: "bob", name: "bob" })
      yield* bob.client.destroy
      yield* settled([alice.client])
      full = true

      const unsaved = message("unsaved")
      const answer = yield* send(alice.client, "bob", unsaved)
      assertFailed(answer, "E_DELIVERY_FAILED")
      assert.include(answer.type === "delivery_failed" ? answer.reason : "", "database or disk is full")
      assert.include(answer.type === "delivery_failed" ? answer.reason : "", "nothing was sent")
      assert.strictEqual(answer.type === "delivery_failed" ? answer.retryable : undefined, true)

      full = false
      yield* advance("1 second") // the writer's retry, which now succeeds
      const resent = message("unsaved, sent again")
      assertDelivered(yield* send(alice.client, "bob", resent), "queued")
      const back = yield* world.session({ sessionId: "bob", name: "bob" })
      yield* messageFor(back.client, resent.id)
      yield* settled([alice.client], [back.client])
      yield* back.client.expectNothing("message")
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(disk.mail.size, 0, "the refused send was never stored")
    }))
})

/** A length-prefixed frame (P01). */
const frame = (value: unknown): Buffer => {
  const payload = Buffer.from(JSON.stringify(value), "utf8")
  const header = Buffer.alloc(4)
  header.writeUInt32BE(payload.length, 0)
  return Buffer.concat([header, payload])
}
