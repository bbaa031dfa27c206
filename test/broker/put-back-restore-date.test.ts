/**
 * Mail the mailbox's bounds push out to make room for a message that is then
 * not kept itself comes back "as it was" (Mailbox.put, `putBack`): at its
 * queue place and at the age it had — not at its `queuedAt` clamped to the
 * newest reading, which after a clock step back is later than the age the
 * step gave it (review mailbox S2). Shown across a durable broker's restart,
 * whose restore runs that path when its bounds are smaller than the last
 * run's: bob's question q, given back at 10 h, is dated 5 h by the step back
 * to 5 h (carol's X queued then), and erin's big Z (7 h) pushes q out of bob's
 * bytes and is refused by the overall bytes bound; q, put back, must expire a
 * retention after 5 h, as it would without the restart. The clock is the
 * TestClock, set to each reading the story needs (the step back is the
 * modelled fault); nothing waits on it but the store's lazy flush.
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

const HOUR = 3_600_000
const DAY = 24 * HOUR
const bobAs = { sessionId: "bob", name: "bob", frame: { features: [RECEIVED_V1] } }
/** Long enough that no ask here is over: the mailbox's retention decides. */
const ASKS = { askTimeout: 2 * DAY }
const text = (n: number) => "x".repeat(n)

describe("a durable broker's restore that pushes mail out of smaller bounds", () => {
  it.effect("puts a question it pushed out back at the age the clock's step back gave it: it expires a retention after that", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      yield* TestClock.setTime(10 * HOUR)
      const first = yield* durableBroker(world, disk, ASKS)
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      const carol = yield* world.session({ sessionId: "carol", name: "carol" })
      const erin = yield* world.session({ sessionId: "erin", name: "erin" })
      const dave = yield* world.session({ sessionId: "dave", name: "dave" })
      yield* dave.client.destroy
      const bob = yield* world.session(bobAs)
      const q = message(text(2_000), { expectsReply: true })
      assertDelivered(yield* send(alice.client, "bob", q))
      yield* messageFor(bob.client, q.id)
      yield* settled([alice.client, bob.client])
      yield* bob.client.destroy
      // Queued: bob's close was handled, q given back at 10 h.
      assertDelivered(yield* send(alice.client, "bob", message("probe")), "queued")
      // The clock steps back to 5 h: X queued then dates q 5 h (AgedMap's rule).
      yield* TestClock.setTime(5 * HOUR)
      assertDelivered(yield* send(carol.client, "dave", message(text(2_000))), "queued")
      yield* TestClock.setTime(7 * HOUR)
      const z = message(text(20_000))
      assertDelivered(yield* send(erin.client, "bob", z), "queued")
      yield* advance(LAZY_FLUSH)
      yield* first.crash

      // Bounds a little above Z's size (about 41 KB): q and Z together pass bob's, X and Z the overall one.
      const bound = 2 * 20_000 + 512 + 3_000
      yield* durableBroker(world, disk, { ...ASKS, mailboxRetention: 3 * HOUR, mailboxBytes: bound, mailboxBytesPerTarget: bound })
      yield* TestClock.setTime(9 * HOUR)
      const aliceBack = yield* world.session({ sessionId: "alice", name: "alice" })
      const bobBack = yield* world.session(bobAs)
      const receipt = yield* aliceBack.client.next("message_receipt", (frame) => frame.receipt.messageId === q.id)
      assert.strictEqual(receipt.receipt.status, "expired")
      // The restore refused Z (the path under test): erin is owed its eviction.
      const erinBack = yield* world.session({ sessionId: "erin", name: "erin" })
      const evicted = yield* erinBack.client.next("message_receipt", (frame) => frame.receipt.messageId === z.id)
      assert.include(evicted.receipt.detail, "bytes", "Z was not pushed out by a bytes bound: the test sets up nothing")
      yield* settled([aliceBack.client], [bobBack.client])
      assert.notInclude(bobBack.client.received().flatMap((frame) => frame.type === "message" ? [frame.message.id] : []), q.id)
    }))
})
