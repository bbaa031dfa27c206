/**
 * Review revu U1 (probe): a silenced-ask debt is stored even when its reply
 * has already left the store (read by its asker before the ask's copy was
 * given back past its deadline). Nothing ever deletes that row while the
 * broker runs (`mailGone` for the reply came before `askSilenced`), so
 * `silenced_asks` grows by one row per such ask, and SilencedJournal.held by
 * one key, contrary to docs/store.md ("never more rows than stored replies").
 * Shown end to end (memory broker over a memory store) and on StoreJournal
 * alone (the put of a debt whose reply the journal no longer holds).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Mail } from "../src/broker/Peer.ts"
import { StoreJournal } from "../src/broker/StoreJournal.ts"
import { LAZY_FLUSH } from "../src/broker/StoreWriter.ts"
import { RECEIVED_V1 } from "../src/protocol/features.ts"
import { makeMemoryMailState } from "../src/store/MailStore.ts"
import { assertDelivered } from "./support/assertions.ts"
import { settled } from "./support/barrier.ts"
import { message, messageFor, send } from "./support/broker.ts"
import { durableBroker } from "./support/durable.ts"
import { advance, memoryNetwork } from "./support/memory.ts"

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

describe("review revu U1", () => {
  it.effect("a debt for a reply its asker already read is not left in silenced_asks", () =>
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
      yield* alice.client.expectNothing("message_receipt")
      assert.strictEqual(disk.silencedAsks.size, 0, "a debt row for a reply no longer stored, never deleted")
    }))

  it("StoreJournal: a debt for a reply that already left the store is not put in a batch", () => {
    const journal = new StoreJournal(() => {}, 3_600_000)
    const reply = mailOf("bob", "alice", "r1", { replyTo: "q1" })
    journal.putMail(reply)
    const first = journal.take(1)
    assert.isDefined(first)
    if (first !== undefined) journal.committed(first)
    journal.mailGone(reply.senderKey, reply.message.id) // read by its asker: its row goes
    journal.askSilenced(reply.recordKey, mailOf("alice", "bob", "q1", { expectsReply: true }), 2)
    const taken = journal.take(3)
    assert.deepStrictEqual(taken?.batch.mailDeletes.length, 1, "the reply's delete: the test sets up nothing")
    assert.deepStrictEqual(taken?.batch.silencedPuts ?? [], [], "a debt row stored for a reply no longer stored")
  })
})
