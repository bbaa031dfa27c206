/**
 * An ask given back past its deadline goes silently when a reply answered
 * that very copy; should that reply be lost later, its asker is owed the
 * ask's `expired` after all (stale-ask-ended-early.test.ts, Q4). A durable
 * broker keeps that debt across a restart (review revs S1): a reply restored
 * from the store and lost after the restart still tells the asker, and the
 * debt leaves the store once the reply reached the asker or was lost.
 *
 * On memory brokers over a memory store (test/support/durable.ts), the clock
 * moved by TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { makeMemoryMailState, type MemoryMailState } from "../../src/store/MailStore.ts"
import { assertDelivered } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { durableBroker } from "../support/durable.ts"
import { advance, type MemoryNetwork, memoryNetwork } from "../support/memory.ts"

const ASK_TIMEOUT_MS = 60_000
const CONFIRMING = { frame: { features: [RECEIVED_V1] } }

/**
 * Alice asks bob (whose client reads it and never confirms it), leaves, and
 * bob answers: the reply waits for alice in the mailbox. Past the ask's
 * deadline bob's connection drops: the answered copy of the ask goes
 * silently, and alice is owed its `expired` should the reply be lost. The
 * broker then crashes, all committed. Returns the ask and the reply.
 */
const answeredThenSilenced = (world: MemoryNetwork, disk: MemoryMailState) =>
  Effect.gen(function*() {
    const first = yield* durableBroker(world, disk, { askTimeout: ASK_TIMEOUT_MS })
    const carol = yield* world.session({ sessionId: "carol", name: "carol" })
    const alice = yield* world.session({ sessionId: "alice", name: "alice" })
    const bob = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
    const ask = message("still need this?", { expectsReply: true })
    assertDelivered(yield* send(alice.client, "bob", ask))
    yield* messageFor(bob.client, ask.id)
    yield* alice.client.destroy
    yield* carol.client.next("session_left", (frame) => frame.sessionId === "alice")
    const reply = message("yes", { replyTo: ask.id })
    assertDelivered(yield* send(bob.client, "alice", reply), "queued")
    yield* advance(ASK_TIMEOUT_MS + 1)
    yield* bob.client.destroy
    yield* carol.client.next("session_left", (frame) => frame.sessionId === "bob")
    yield* advance(LAZY_FLUSH) // the ask's drop is committed
    assert.strictEqual(disk.mail.size, 1, "only the reply is stored: the test sets up nothing")
    yield* first.crash
    return { ask, reply }
  })

describe("durable: the expired owed for an ask that went silently as answered survives a restart (review revs S1)", () => {
  it.effect("the reply restored after the restart, then cancelled by its sender: alice, back, is told the ask expired", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const { ask, reply } = yield* answeredThenSilenced(world, disk)

      yield* durableBroker(world, disk, { askTimeout: ASK_TIMEOUT_MS })
      const bob = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
      yield* bob.client.send({ type: "cancel_message", messageId: reply.id })
      yield* settled([bob.client])
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      yield* settled([alice.client])
      assert.strictEqual(alice.client.count("message"), 0, "the reply reached alice: the test sets up nothing")
      const receipt = yield* alice.client.next("message_receipt", (frame) => frame.receipt.messageId === ask.id, "1 second")
      assert.strictEqual(receipt.receipt.status, "expired")
    }))

  it.effect("the reply restored and read by alice: she is told nothing more, and the debt leaves the store", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const { reply } = yield* answeredThenSilenced(world, disk)
      assert.strictEqual(disk.silencedAsks.size, 1, "the debt was not stored")

      yield* durableBroker(world, disk, { askTimeout: ASK_TIMEOUT_MS })
      const alice = yield* world.session({ sessionId: "alice", name: "alice", ...CONFIRMING })
      yield* messageFor(alice.client, reply.id)
      yield* alice.client.send({ type: "received", frames: alice.client.received().length })
      yield* settled([alice.client])
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(disk.mail.size, 0, "the reply stayed stored: the test sets up nothing")
      assert.strictEqual(disk.silencedAsks.size, 0, "the debt stayed stored")
      yield* alice.client.expectNothing("message_receipt")
    }))

  it.effect("a stored debt whose reply is not stored at the restart leaves the store then", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      yield* answeredThenSilenced(world, disk)
      // The reply gone from the disk alone (no commit of this build leaves it so: its delete ends the debt too).
      disk.mail.clear()
      assert.strictEqual(disk.silencedAsks.size, 1, "the debt was not stored")

      yield* durableBroker(world, disk, { askTimeout: ASK_TIMEOUT_MS })
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(disk.silencedAsks.size, 0, "the debt of a reply not restored stayed stored")
    }))
})

describe("durable: an ask that went silently as answered before its deadline, its reply lost after a restart (review revw W2)", () => {
  it.effect("the ask is asked again of the replier, and stored again", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const first = yield* durableBroker(world, disk, { askTimeout: ASK_TIMEOUT_MS })
      const carol = yield* world.session({ sessionId: "carol", name: "carol" })
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
      const ask = message("still need this?", { expectsReply: true })
      assertDelivered(yield* send(alice.client, "bob", ask))
      yield* messageFor(bob.client, ask.id)
      yield* alice.client.destroy
      yield* carol.client.next("session_left", (frame) => frame.sessionId === "alice")
      const reply = message("yes", { replyTo: ask.id })
      assertDelivered(yield* send(bob.client, "alice", reply), "queued")
      // Before the deadline bob's connection drops: the answered copy of the ask goes, its debt stored.
      yield* bob.client.destroy
      yield* carol.client.next("session_left", (frame) => frame.sessionId === "bob")
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(disk.mail.size, 1, "setup: only the reply is stored")
      assert.strictEqual(disk.silencedAsks.size, 1, "the debt of an ask dropped before its deadline was not stored")
      yield* first.crash

      yield* durableBroker(world, disk, { askTimeout: ASK_TIMEOUT_MS })
      const back = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
      yield* back.client.send({ type: "cancel_message", messageId: reply.id })
      yield* back.client.next("message", (frame) => frame.message.id === ask.id, "1 second")
      yield* settled([back.client])
      yield* advance(LAZY_FLUSH)
      assert.deepStrictEqual(
        [...disk.mail.values()].map((row) => row.text.includes(ask.id) && !row.text.includes(reply.id)),
        [true],
        "the ask asked again is not stored alone (the cancelled reply stayed, or the ask was not stored again)"
      )
      assert.strictEqual(disk.silencedAsks.size, 0, "the debt stayed stored after its reply was lost")
    }))
})

describe("durable: an answered ask deeper than Asks' scan, dropped before its deadline, its reply lost after a restart (review revx X2)", () => {
  it.effect("its debt is stored, and the ask is asked again of the replier", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const first = yield* durableBroker(world, disk, { askTimeout: ASK_TIMEOUT_MS })
      const carol = yield* world.session({ sessionId: "carol", name: "carol" })
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
      // 64 notes ahead (AnsweredCopies' ANSWERED_SCAN), read by bob's client and never confirmed: the reply marks no copy.
      for (let i = 0; i < 64; i++) assertDelivered(yield* send(carol.client, "bob", message(`note ${i}`)))
      const ask = message("still need this?", { expectsReply: true })
      assertDelivered(yield* send(alice.client, "bob", ask))
      yield* messageFor(bob.client, ask.id)
      yield* alice.client.destroy
      yield* carol.client.next("session_left", (frame) => frame.sessionId === "alice")
      const reply = message("yes", { replyTo: ask.id })
      assertDelivered(yield* send(bob.client, "alice", reply), "queued")
      // Before the deadline bob's connection drops: the answered copy of the ask goes, its debt stored.
      yield* bob.client.destroy
      yield* carol.client.next("session_left", (frame) => frame.sessionId === "bob")
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(disk.mail.size, 65, "setup: not the 64 notes and the reply stored")
      assert.strictEqual(disk.silencedAsks.size, 1, "the debt of a deep ask dropped before its deadline was not stored")
      yield* first.crash

      yield* durableBroker(world, disk, { askTimeout: ASK_TIMEOUT_MS })
      const back = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
      yield* back.client.send({ type: "cancel_message", messageId: reply.id })
      yield* back.client.next("message", (frame) => frame.message.id === ask.id, "1 second")
    }))
})
