/**
 * A durable broker restarted with a smaller mailbox (`mailboxCapacity`)
 * pushes mail out as it restores it — the oldest of the sender with the most
 * queued — and that moves nothing else: a question given back to the mailbox
 * before the restart keeps its queue place and its date (review mailbox S2,
 * disproved for the messages bound: a put the count bound refuses puts
 * nothing back; the bytes bounds' put-back is put-back-restore-date.test.ts's).
 * alice's q, read by bob and given back at his close at 30 min, then carol's
 * c1 and c2 queued at 31 min; the restart keeps two messages: c1 goes, q and
 * c2 stay, q first, and expired a retention after 30 min (its restored row
 * keeps the acceptance's date, so it may expire sooner: docs/store.md, open;
 * the restart is at 50 min, inside both). The clock is the
 * TestClock, set to each reading the story needs; nothing waits on it but the
 * store's lazy flush.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { assertDelivered } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { durableBroker } from "../support/durable.ts"
import { advance, memoryNetwork } from "../support/memory.ts"

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const bobAs = { sessionId: "bob", name: "bob", frame: { features: [RECEIVED_V1] } }
const OPTIONS = { mailboxRetention: HOUR, askTimeout: 24 * HOUR }

const story = Effect.gen(function*() {
  const world = yield* memoryNetwork()
  const disk = makeMemoryMailState()
  const first = yield* durableBroker(world, disk, OPTIONS)
  const alice = yield* world.session({ sessionId: "alice", name: "alice" })
  const carol = yield* world.session({ sessionId: "carol", name: "carol" })
  const bob = yield* world.session(bobAs)
  const q = message("q", { expectsReply: true })
  assertDelivered(yield* send(alice.client, "bob", q))
  yield* messageFor(bob.client, q.id)
  yield* advance(30 * MINUTE)
  yield* settled([alice.client, bob.client])
  yield* bob.client.destroy
  yield* advance(MINUTE)
  const c1 = message("c1")
  const c2 = message("c2")
  // Queued: bob's close was handled, q given back before them.
  assertDelivered(yield* send(carol.client, "bob", c1), "queued")
  assertDelivered(yield* send(carol.client, "bob", c2), "queued")
  yield* advance(LAZY_FLUSH)
  yield* first.crash
  return { world, disk, q, c2 }
})

describe("a durable broker's restore into a smaller mailbox", () => {
  it.effect("pushes carol's oldest out, and the question given back keeps its place: bob gets q, then c2", () =>
    Effect.gen(function*() {
      const { world, disk, q, c2 } = yield* story
      yield* durableBroker(world, disk, { ...OPTIONS, mailboxCapacity: 2 })
      yield* TestClock.setTime(50 * MINUTE)
      const bob = yield* world.session(bobAs)
      const first = yield* bob.client.next("message")
      const second = yield* bob.client.next("message")
      assert.deepStrictEqual([first.message.id, second.message.id], [q.id, c2.id])
    }))

  it.effect("and past a retention after its return it has expired, while c2, queued after it, is flushed", () =>
    Effect.gen(function*() {
      const { world, disk, q, c2 } = yield* story
      yield* durableBroker(world, disk, { ...OPTIONS, mailboxCapacity: 2 })
      yield* TestClock.setTime(HOUR + 30 * MINUTE + 30_000)
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob = yield* world.session(bobAs)
      const receipt = yield* alice.client.next("message_receipt", (frame) => frame.receipt.messageId === q.id)
      assert.strictEqual(receipt.receipt.status, "expired")
      const flushed = yield* bob.client.next("message")
      assert.strictEqual(flushed.message.id, c2.id)
    }))
})
