/**
 * The debt of an ask that went silently as answered (StaleAsks.drop) is
 * stored only while its reply is (review revu U1): a reply its asker has
 * read already can be lost no more, so when the ask's copy is given back
 * past its deadline after that read (the usual order: the asker online, the
 * reply written at once), no `silenced_asks` row is written, and none is
 * left behind that no later `mailGone` would delete. Shown end to end (a
 * memory broker over a memory store) and on StoreJournal alone, where the
 * debt is a flag on the reply's own entry (JournalMail.silenced). And on a
 * memory broker without a store: the debt StaleAsks keeps in memory for
 * such a reply is never claimed, as nothing can lose a reply once read.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Mail } from "../../src/broker/Peer.ts"
import { StoreJournal } from "../../src/broker/StoreJournal.ts"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { assertDelivered } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { durableBroker } from "../support/durable.ts"
import { advance, memoryNetwork } from "../support/memory.ts"

const ASK_TIMEOUT_MS = 60_000

/** `sender`'s message `id` to `target` (keys as the broker makes them). */
const mailOf = (sender: string, target: string, id: string, extra: Partial<Mail["message"]>): Mail => ({
  recordKey: `scope\u0000${sender}\u0001${id}`,
  senderKey: `scope\u0000${sender}`,
  senderId: sender,
  senderIdentity: undefined,
  fromJson: "{}",
  message: { id, timestamp: 1, content: { text: "?" }, ...extra },
  brokerReceivedAt: 1,
  spaceKey: "scope",
  targetKey: `scope\u0000${target}`,
  targetId: target,
  targetIdentity: undefined,
  queuedAt: 1,
  askTimeoutMs: ASK_TIMEOUT_MS
})
const CONFIRMING = { frame: { features: [RECEIVED_V1] } }

describe("a silenced ask's debt is stored only while its reply is (review revu U1)", () => {
  it.effect("an ask silenced after its asker read the reply: no debt row is written, nor receipt sent", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      yield* durableBroker(world, disk, { askTimeout: ASK_TIMEOUT_MS })
      const carol = yield* world.session({ sessionId: "carol", name: "carol" })
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
      const ask = message("still need this?", { expectsReply: true })
      assertDelivered(yield* send(alice.client, "bob", ask))
      yield* messageFor(bob.client, ask.id) // bob's client reads it and never confirms it
      const reply = message("yes", { replyTo: ask.id })
      assertDelivered(yield* send(bob.client, "alice", reply)) // written to alice, live: it left the store
      yield* messageFor(alice.client, reply.id)
      yield* settled([alice.client])
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(disk.mail.size, 1, "only the ask (unconfirmed by bob) is stored: the test sets up nothing")
      yield* advance(ASK_TIMEOUT_MS + 1)
      yield* bob.client.destroy // the ask's copy given back past its deadline: silenced as answered
      yield* carol.client.next("session_left", (frame) => frame.sessionId === "bob")
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(disk.mail.size, 0, "the ask left the store: the test sets up nothing")
      yield* settled([alice.client])
      yield* alice.client.expectNothing("message_receipt")
      assert.strictEqual(disk.silencedAsks.size, 0, "a debt row written for a reply no longer stored")
    }))

  it.effect("memory broker: alice confirms the reply and leaves, the ask goes silently, bob cancels the reply: alice, back, hears nothing of the ask", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ askTimeout: ASK_TIMEOUT_MS })
      const carol = yield* world.session({ sessionId: "carol", name: "carol" })
      const alice = yield* world.session({ sessionId: "alice", name: "alice", ...CONFIRMING })
      const bob = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
      const ask = message("still need this?", { expectsReply: true })
      assertDelivered(yield* send(alice.client, "bob", ask))
      yield* messageFor(bob.client, ask.id) // bob's client reads it and never confirms it
      const reply = message("yes", { replyTo: ask.id })
      assertDelivered(yield* send(bob.client, "alice", reply))
      yield* messageFor(alice.client, reply.id)
      // Confirmed: the reply can be lost no more (unconfirmed, alice's drop would give it back, and bob's cancel lose it).
      yield* alice.client.send({ type: "received", frames: alice.client.received().length })
      yield* settled([alice.client])
      yield* alice.client.destroy
      yield* carol.client.next("session_left", (frame) => frame.sessionId === "alice")
      yield* advance(ASK_TIMEOUT_MS + 1)
      yield* bob.client.destroy // the ask's copy given back past its deadline: silenced as answered
      yield* carol.client.next("session_left", (frame) => frame.sessionId === "bob")
      const bob2 = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
      yield* bob2.client.send({ type: "cancel_message", messageId: reply.id })
      yield* settled([bob2.client])
      const alice2 = yield* world.session({ sessionId: "alice", name: "alice", ...CONFIRMING })
      yield* settled([alice2.client])
      const receipts = alice2.client.received().filter((frame) =>
        frame.type === "message_receipt" && frame.receipt.messageId === ask.id
      )
      assert.deepStrictEqual(receipts, [], "alice told her ask, answered and read, expired")
    }))

  it("StoreJournal: no debt is put for a reply that already left the store", () => {
    const journal = new StoreJournal(() => {}, 3_600_000)
    const reply = mailOf("bob", "alice", "r1", { replyTo: "q1" })
    journal.putMail(reply)
    const first = journal.take(1)
    assert.isDefined(first)
    if (first !== undefined) journal.committed(first)
    journal.mailGone(reply.senderKey, reply.message.id, reply.targetKey) // read by its asker: its row goes
    journal.askSilenced(reply, mailOf("alice", "bob", "q1", { expectsReply: true }), 2)
    const taken = journal.take(3)
    assert.deepStrictEqual(taken?.batch.mailDeletes.length, 1, "the reply's delete: the test sets up nothing")
    assert.deepStrictEqual(taken?.batch.silencedPuts ?? [], [], "a debt put for a reply no longer stored")
  })

  it("StoreJournal: a reply stored with its debt deletes it as it leaves; a second copy of the ask puts none again", () => {
    const journal = new StoreJournal(() => {}, 3_600_000)
    const reply = mailOf("bob", "alice", "r1", { replyTo: "q1" })
    const ask = mailOf("alice", "bob", "q1", { expectsReply: true })
    journal.putMail(reply)
    journal.askSilenced(reply, ask, 2)
    const first = journal.take(3)
    assert.deepStrictEqual(first?.batch.silencedPuts, [{ replyKey: reply.recordKey, at: 2, ask }])
    if (first !== undefined) journal.committed(first)
    journal.askSilenced(reply, ask, 4) // the same ask's copy on another connection, answered by the same reply
    journal.mailGone(reply.senderKey, reply.message.id, reply.targetKey)
    const second = journal.take(5)
    assert.deepStrictEqual(second?.batch.silencedPuts ?? [], [], "the debt put again")
    assert.deepStrictEqual(second?.batch.silencedDeletes, [reply.recordKey], "the stored debt left behind its reply")
  })

  it("StoreJournal: a message stored again under the same sender and id ends the debt of the one it replaces", () => {
    const journal = new StoreJournal(() => {}, 3_600_000)
    const reply = mailOf("bob", "alice", "r1", { replyTo: "q1" })
    journal.putMail(reply)
    journal.askSilenced(reply, mailOf("alice", "bob", "q1", { expectsReply: true }), 2)
    const first = journal.take(3)
    if (first !== undefined) journal.committed(first)
    journal.putMail(mailOf("bob", "alice", "r1", { replyTo: "q2" }))
    const second = journal.take(4)
    assert.deepStrictEqual(second?.batch.silencedDeletes, [reply.recordKey], "the old reply's debt passed to the new")
  })
})
