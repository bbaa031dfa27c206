/**
 * After a clock step back, mail of one age leaves the mailbox in queue order:
 * one the bounds pushed out and put back (Mailbox.put's `putBack`) goes back
 * ahead of the mail of its age queued after it (AgedMap.setAged's `aheadOf`,
 * review revdf), and a durable broker's restart keeps that order — its
 * restore takes the rows in their stored order, which is the queue order, and
 * dates them by AgedMap's step-back rule as the last run did (review mailbox
 * S3: disproved; this pins it). alice's a1 and a2 to away bob are queued at
 * 10 h; the clock steps back to 5 h and carol's c1 dates them 5 h; erin's big
 * Z pushes a1 out of bob's bytes and is refused itself: a1 comes back. At
 * their expiry alice is told of a1, then a2 — with or without a restart in
 * between. The clock is the TestClock, set to each reading the story needs
 * (the step back is the modelled fault); nothing waits on it but the store's
 * lazy flush.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { assertDelivered, assertFailed } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { message, send } from "../support/broker.ts"
import { durableBroker } from "../support/durable.ts"
import { advance, memoryNetwork } from "../support/memory.ts"

const HOUR = 3_600_000
const text = (n: number) => "x".repeat(n)
/** About Z's size in the mailbox (Mailbox.ts's estimate, its sender's info about 250 characters). */
const Z_BYTES = 2 * (250 + 20_000 + 60) + 512
/** About a1's, a2's and c1's. */
const SMALL_BYTES = 2 * (250 + 2_000 + 60) + 512
/** Bob's bytes hold a2, c1 and Z, not a1 too; the overall bytes hold Z and less than two small ones. */
const OPTIONS = {
  mailboxRetention: 3 * HOUR,
  mailboxBytesPerTarget: Z_BYTES + 2.5 * SMALL_BYTES,
  mailboxBytes: Z_BYTES + SMALL_BYTES / 2
}

/** The story up to the put-back, on a durable broker over `disk`; returns the broker and the messages. */
const putBack = Effect.gen(function*() {
  const world = yield* memoryNetwork()
  const disk = makeMemoryMailState()
  yield* TestClock.setTime(10 * HOUR)
  const broker = yield* durableBroker(world, disk, OPTIONS)
  const alice = yield* world.session({ sessionId: "alice", name: "alice" })
  const carol = yield* world.session({ sessionId: "carol", name: "carol" })
  const erin = yield* world.session({ sessionId: "erin", name: "erin" })
  const bob = yield* world.session({ sessionId: "bob", name: "bob" })
  yield* bob.client.destroy
  const a1 = message(text(2_000))
  const a2 = message(text(2_000))
  assertDelivered(yield* send(alice.client, "bob", a1), "queued")
  assertDelivered(yield* send(alice.client, "bob", a2), "queued")
  yield* TestClock.setTime(5 * HOUR)
  assertDelivered(yield* send(carol.client, "bob", message(text(2_000))), "queued")
  // Z pushes a1 out of bob's bytes, then is refused itself by the overall bytes: a1 comes back.
  assertFailed(yield* send(erin.client, "bob", message(text(20_000))), "E_DELIVERY_EVICTED")
  yield* settled([alice.client])
  assert.strictEqual(alice.client.count("message_receipt"), 0, "a1 was evicted, not put back: the test sets up nothing")
  yield* advance(LAZY_FLUSH)
  return { world, disk, broker, alice, a1, a2 }
})

describe("mail put back after a clock step back", () => {
  it.effect("expires in queue order: alice is told of a1, then a2", () =>
    Effect.gen(function*() {
      const { world, alice, a1, a2 } = yield* putBack
      yield* TestClock.setTime(8 * HOUR + 1)
      yield* world.session({ sessionId: "bob", name: "bob" })
      const first = yield* alice.client.next("message_receipt")
      const second = yield* alice.client.next("message_receipt")
      assert.deepStrictEqual([first.receipt.messageId, second.receipt.messageId], [a1.id, a2.id])
    }))

  it.effect("and after a durable broker's restart, in the same order", () =>
    Effect.gen(function*() {
      const { world, disk, broker, a1, a2 } = yield* putBack
      yield* broker.crash
      yield* durableBroker(world, disk, OPTIONS)
      yield* TestClock.setTime(8 * HOUR + 1)
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      yield* world.session({ sessionId: "bob", name: "bob" })
      const first = yield* alice.client.next("message_receipt")
      const second = yield* alice.client.next("message_receipt")
      assert.deepStrictEqual([first.receipt.messageId, second.receipt.messageId], [a1.id, a2.id])
    }))
})
