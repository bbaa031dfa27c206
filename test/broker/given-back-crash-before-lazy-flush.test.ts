/**
 * A give-back to the mailbox wakes the store writer at once
 * (StoreJournal.mailGivenBack), so the row's rewrite (the return's date and
 * mark) is committed without waiting `LAZY_FLUSH` for a commit to ride with:
 * a broker killed in that window restarted with the acceptance's date, and
 * the mail expired up to a retention early (review revs1 probe 2). Alice's
 * m0 is delivered to bob at 0, never confirmed; half an hour later bob's
 * connection drops (alice sees bob leave: the close, and so the give-back,
 * was handled); the disk already holds the rewritten row, with the TestClock
 * not moved since; the broker is killed there. Restarted a retention and a
 * quarter after m0's acceptance (three quarters after its return), bob gets
 * m0 and alice is told nothing. The broker, its store and the clients run
 * in one process over the memory network: the woken writer's commit, a
 * memory store's, runs before the frame carrying bob's departure reaches
 * alice — asserted, not waited for.
 * The clock moves only on the TestClock; its jumps are the time the test is
 * about, not barriers.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { assertDelivered } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { durableBroker } from "../support/durable.ts"
import { advance, memoryNetwork } from "../support/memory.ts"

const HOUR = 3_600_000
const bobAs = { sessionId: "bob", name: "bob", frame: { features: [RECEIVED_V1] } }

describe("a give-back wakes the store writer", () => {
  it.effect("its row is rewritten before the clock moves, and a broker killed then keeps the mail a retention from its return", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const first = yield* durableBroker(world, disk, { mailboxRetention: HOUR })
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob = yield* world.session(bobAs)
      const m0 = message("m0")
      assertDelivered(yield* send(alice.client, "bob", m0))
      yield* messageFor(bob.client, m0.id)
      yield* advance(HOUR / 2)
      yield* settled([alice.client, bob.client])
      yield* bob.client.destroy
      // Bob's departure reaches alice in the close's own step, after m0 went back to the mailbox.
      yield* alice.client.next("session_left", (frame) => frame.sessionId === "bob")
      // The clock has not moved since the close: no lazy flush ran; the give-back's own wake committed the rewrite.
      assert.isTrue([...disk.mail.values()].some((row) => row.text.includes('"givenBack"')), "m0's row is not rewritten given back")
      yield* first.crash
      yield* TestClock.setTime(HOUR + HOUR / 4)
      yield* durableBroker(world, disk, { mailboxRetention: HOUR })
      const alice2 = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob2 = yield* world.session(bobAs)
      yield* settled([bob2.client], [alice2.client])
      // With the rewrite left to the lazy flush (2092d5ff): m0 expired at the restart, alice told `expired`.
      const got = bob2.client.received().flatMap((frame) => frame.type === "message" ? [frame.message.id] : [])
      const told = alice2.client.received().flatMap((frame) => frame.type === "message_receipt" ? [frame.receipt.status] : [])
      assert.deepStrictEqual({ got, told }, { got: [m0.id], told: [] })
    }))
})
