/**
 * Mail given back at a connection close counts the mailbox's retention from
 * that close (MailReturns.requeue: the copy is queued at the close), and a
 * durable broker restarted after it keeps that deadline: the store holds the
 * close's date, not the acceptance's (review mailbox S1: the row kept the
 * acceptance's, so after a restart the mail expired up to a retention early).
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
})
