/**
 * An answered ask deeper than AnsweredCopies' ANSWERED_SCAN in the replier's backlog
 * (64 unconfirmed items ahead: no reply marks its copy), whose copy comes
 * back more than an hour after the reply — past AnsweredAsks' window, the
 * replay records' retention — but before the ask's own deadline (3 hours
 * here). A durable broker stores its debt with the reply that closed its
 * edge, found by the ask's key for as long as the reply is stored (review
 * revz Z4): after a restart the reply's loss still asks the replier again,
 * or, past the deadline, tells the asker `expired`. So too when the copy
 * comes back at the restart itself (restored and dropped as stale, before
 * the reply that answered it is restored).
 *
 * On memory brokers over a memory store (test/support/durable.ts), the clock
 * moved by TestClock. As stale-answered-durable.test.ts (review revx X2),
 * with the hour between the reply and the drop.
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

const ASK_TIMEOUT_MS = 3 * 3_600_000
const CONFIRMING = { frame: { features: [RECEIVED_V1] } }
const AHEAD = 64

/**
 * Carol sends bob 64 notes, alice asks him (his client reads all and
 * confirms none), leaves, and bob answers: the reply waits for alice. Then
 * 61 minutes pass (a send runs the clean-ups), well before the deadline.
 * Returns the ask, the reply, bob's and carol's sessions and the broker.
 */
const answeredDeep = (world: MemoryNetwork, disk: MemoryMailState) =>
  Effect.gen(function*() {
    const broker = yield* durableBroker(world, disk, { askTimeout: ASK_TIMEOUT_MS })
    const carol = yield* world.session({ sessionId: "carol", name: "carol" })
    const alice = yield* world.session({ sessionId: "alice", name: "alice" })
    const bob = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
    for (let i = 0; i < AHEAD; i++) assertDelivered(yield* send(carol.client, "bob", message(`note ${i}`)))
    const ask = message("still need this?", { expectsReply: true })
    assertDelivered(yield* send(alice.client, "bob", ask))
    yield* messageFor(bob.client, ask.id)
    yield* alice.client.destroy
    yield* carol.client.next("session_left", (frame) => frame.sessionId === "alice")
    const reply = message("yes", { replyTo: ask.id })
    assertDelivered(yield* send(bob.client, "alice", reply), "queued")
    yield* advance("61 minutes")
    assertDelivered(yield* send(carol.client, "alice", message("later")), "queued")
    return { ask, reply, bob, carol, broker }
  })

/** As `answeredDeep`, then bob's connection drops: the deep copy goes silently as answered; all committed, the broker crashes. */
const silencedPastWindow = (world: MemoryNetwork, disk: MemoryMailState) =>
  Effect.gen(function*() {
    const { ask, reply, bob, carol, broker } = yield* answeredDeep(world, disk)
    yield* bob.client.destroy
    yield* carol.client.next("session_left", (frame) => frame.sessionId === "bob")
    yield* advance(LAZY_FLUSH)
    assert.strictEqual(disk.mail.size, AHEAD + 2, "setup: not the 64 notes, the reply and the later note stored")
    assert.strictEqual(disk.silencedAsks.size, 1, "the debt of a deep ask dropped past the window, before its deadline, was not stored")
    yield* broker.crash
    return { ask, reply }
  })

describe("durable: a deep answered ask dropped over an hour after its reply, before its deadline (review revz Z4)", () => {
  it.effect("its debt is stored; the reply lost after a restart, bob is asked again", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const { ask, reply } = yield* silencedPastWindow(world, disk)

      yield* durableBroker(world, disk, { askTimeout: ASK_TIMEOUT_MS })
      const back = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
      yield* back.client.send({ type: "cancel_message", messageId: reply.id })
      yield* back.client.next("message", (frame) => frame.message.id === ask.id, "1 second")
    }))

  it.effect("the reply lost after a restart past the deadline: alice, back, is told the ask expired", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const { ask, reply } = yield* silencedPastWindow(world, disk)

      yield* durableBroker(world, disk, { askTimeout: ASK_TIMEOUT_MS })
      yield* advance(ASK_TIMEOUT_MS)
      const back = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
      yield* back.client.send({ type: "cancel_message", messageId: reply.id })
      yield* settled([back.client])
      assert.strictEqual(back.client.count("message"), AHEAD, "bob was asked again past the deadline, or not given back the notes")
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      yield* settled([alice.client])
      const receipt = yield* alice.client.next("message_receipt", (frame) => frame.receipt.messageId === ask.id, "1 second")
      assert.strictEqual(receipt.receipt.status, "expired")
    }))

  it.effect("the copy comes back at a restart (restored before its reply): the debt is stored, and a second restart keeps it", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const { ask, reply, broker } = yield* answeredDeep(world, disk)
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(disk.mail.size, AHEAD + 3, "setup: not the notes, the ask still held by bob, the reply and the later note stored")
      yield* broker.crash

      // The ask's copy is restored stale (its edge closed) and dropped, ahead of the reply restored after it.
      const second = yield* durableBroker(world, disk, { askTimeout: ASK_TIMEOUT_MS })
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(disk.mail.size, AHEAD + 2, "setup: the stale ask was not dropped at the restore")
      assert.strictEqual(disk.silencedAsks.size, 1, "the debt of the ask dropped at the restore was not stored")
      yield* second.crash

      yield* durableBroker(world, disk, { askTimeout: ASK_TIMEOUT_MS })
      const back = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
      yield* back.client.send({ type: "cancel_message", messageId: reply.id })
      yield* back.client.next("message", (frame) => frame.message.id === ask.id, "1 second")
    }))
})
