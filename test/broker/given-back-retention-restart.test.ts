/**
 * Mail given back at a connection close counts the mailbox's retention from
 * that close (MailReturns.requeue: the copy is queued at the close), and a
 * durable broker restarted after it keeps that deadline: the store holds the
 * close's date, not the acceptance's (review mailbox S1: the row kept the
 * acceptance's, so after a restart the mail expired up to a retention early).
 * Its date is out of the rows' acceptance order: a row accepted after the
 * message and before its return (carol's, here) is dated earlier, and must
 * not read, at the restore, as a clock step back that re-dates the given-back
 * mail down to it (Router.restore queues a given-back row at its return:
 * after the rows accepted before it, RestoreOrder.ts).
 * The clock moves only on the TestClock; its jumps are the time the tests are
 * about, not barriers.
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
const bobAs = { sessionId: "bob", name: "bob", frame: { features: [RECEIVED_V1] } }

/**
 * Alice's m0 is delivered to bob at 0, read and never confirmed; half an hour later bob's connection drops and m0
 * goes back to the mailbox (a probe queued behind it proves the close was handled); committed.
 */
const givenBackAtHalfHour = Effect.gen(function*() {
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
  const probe = message("probe")
  assertDelivered(yield* send(alice.client, "bob", probe), "queued")
  yield* advance(LAZY_FLUSH)
  return { world, disk, first, m0, probe }
})

describe("mail given back at a close, across a durable broker's restart", () => {
  it.effect("is still flushed to bob past a retention from its acceptance, before one from its return", () =>
    Effect.gen(function*() {
      const { world, disk, first, m0, probe } = yield* givenBackAtHalfHour
      yield* first.crash
      // A retention and a quarter after m0 was accepted, three quarters after it came back.
      yield* TestClock.setTime(HOUR + HOUR / 4)
      yield* durableBroker(world, disk, { mailboxRetention: HOUR })
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob = yield* world.session(bobAs)
      yield* messageFor(bob.client, m0.id)
      yield* messageFor(bob.client, probe.id)
      yield* settled([bob.client], [alice.client])
      yield* alice.client.expectNothing("message_receipt")
    }))

  it.effect("expires past a retention from its return, as without the restart", () =>
    Effect.gen(function*() {
      const { world, disk, first, m0 } = yield* givenBackAtHalfHour
      yield* first.crash
      // A minute past a retention from its return (the test's own steps take some milliseconds of the TestClock).
      yield* TestClock.setTime(HOUR / 2 + HOUR + 60_000)
      yield* durableBroker(world, disk, { mailboxRetention: HOUR })
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob = yield* world.session(bobAs)
      const receipt = yield* alice.client.next("message_receipt", (frame) => frame.receipt.messageId === m0.id)
      assert.strictEqual(receipt.receipt.status, "expired")
      yield* settled([alice.client], [bob.client])
      yield* bob.client.expectNothing("message")
    }))

  it.effect("is not re-dated by mail accepted before its return, whose row is dated earlier", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const first = yield* durableBroker(world, disk, { mailboxRetention: HOUR })
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob = yield* world.session(bobAs)
      const carol = yield* world.session({ sessionId: "carol", name: "carol" })
      yield* carol.client.destroy
      const m0 = message("m0")
      assertDelivered(yield* send(alice.client, "bob", m0))
      yield* messageFor(bob.client, m0.id)
      // Ten minutes in, carol's mail is queued: its row, after m0's, is dated ten minutes.
      yield* advance(HOUR / 6)
      assertDelivered(yield* send(alice.client, "carol", message("c0")), "queued")
      // Half an hour in, bob's connection drops: m0 goes back to the mailbox, dated then.
      yield* advance(HOUR / 3)
      yield* settled([alice.client, bob.client])
      yield* bob.client.destroy
      const probe = message("probe")
      assertDelivered(yield* send(alice.client, "bob", probe), "queued")
      yield* advance(LAZY_FLUSH)
      yield* first.crash
      // A retention and a quarter after m0 was accepted: past a retention from carol's ten minutes, not from its return.
      yield* TestClock.setTime(HOUR + HOUR / 4)
      yield* durableBroker(world, disk, { mailboxRetention: HOUR })
      const bobAgain = yield* world.session(bobAs)
      yield* messageFor(bobAgain.client, m0.id)
      yield* messageFor(bobAgain.client, probe.id)
    }))
})
