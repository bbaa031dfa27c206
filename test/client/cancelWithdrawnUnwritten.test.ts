/**
 * A cancel whose `cancel_message` never left the outbox (queued behind a write the socket did not take,
 * then withdrawn as its caller timed out) reached no broker: it ends with its last caller (review revai
 * AI1, AI2). So a later cancel of the same id writes its own `cancel_message` and gets the broker's answer
 * (before, it joined the withdrawn one, wrote nothing and timed out), and the question its reply answered
 * is a repeat again: a copy of it the broker writes later is dropped (before, it was shown twice). A cancel
 * that had joined it writes the cancel anew (before, it waited for nothing until its own timeout). And a
 * cancel whose caller gave up once its frame was in a write the socket had not taken whole is not taken for
 * withdrawn: that frame still goes, so the question the broker asks again ahead of its answer passes
 * (before, it was dropped: a lost question). Helper cancelb.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { message } from "../support/broker.ts"
import { fakeBroker, fakeClientOptions, makeClient, stallingDial, subscribe } from "./support.ts"

const ALICE = { id: "aaaaaaaa-5555-4000-8000-00000000000a", cwd: "/w", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }
const BOB_ID = "bbbbbbbb-5555-4000-8000-00000000000b"

/**
 * Bob read alice's question and replied; then a send of his stalls in a write the socket does not take (a
 * full socket buffer): what he writes next queues behind it. `copies()` arms the fake broker to write a copy
 * of the question and `marker` ahead of its next `list` answer.
 */
const stalledAfterReply = Effect.gen(function*() {
  const ask = message("still need this?", { expectsReply: true })
  const reply = message("yes", { replyTo: ask.id })
  const marker = message("after the copy")
  let copies = false
  const { dial, release, stall, stalled } = stallingDial()
  const fake = yield* fakeBroker({
    afterRegistered: () => [{ type: "message", from: ALICE, message: ask }],
    cancelAnswer: "cancelled",
    beforeList: () => copies ? [{ type: "message", from: ALICE, message: ask }, { type: "message", from: ALICE, message: marker }] : []
  })
  const { client: bob } = yield* makeClient(fakeClientOptions(fake, BOB_ID, { sendTimeoutMs: 300, dial }))
  const heard = yield* subscribe(bob.messages, "bob's messages")
  yield* bob.connect
  yield* heard.next((m) => m.message.id === ask.id)
  yield* bob.send({ to: ALICE.id, message: reply })
  stall()
  const other = message("a send whose write the socket does not take at once")
  yield* Effect.forkScoped(Effect.exit(bob.send({ to: ALICE.id, message: other })), { startImmediately: true })
  yield* Deferred.await(stalled)
  return { ask, bob, copies: () => (copies = true), fake, heard, marker, release, reply }
})

/** The first cancel, queued behind the stalled write, times out and its frame is taken back, never written. */
const withdrawnCancel = Effect.gen(function*() {
  const setup = yield* stalledAfterReply
  const { bob, fake, release, reply } = setup
  // Its own send timeout: the event under test, not a barrier.
  const first = yield* Effect.exit(bob.cancel(reply.id))
  assert.isTrue(first._tag === "Failure", "setup: the first cancel was answered")
  yield* Deferred.succeed(release, undefined)
  yield* bob.list
  assert.strictEqual(fake.ofType("cancel_message").length, 0, "setup: the first cancel's frame was written")
  return setup
})

describe("a cancel whose frame was withdrawn unwritten", () => {
  it.live("a later cancel of the same id writes its own cancel_message and gets the broker's answer", () =>
    Effect.gen(function*() {
      const { bob, fake, reply } = yield* withdrawnCancel
      const second = yield* Effect.exit(bob.cancel(reply.id))
      assert.strictEqual(fake.ofType("cancel_message").length, 1, "the second cancel wrote no cancel_message")
      assert.isTrue(second._tag === "Success", "the second cancel got no answer")
    }))

  it.live("leaves the question a repeat: a copy of it read later is dropped", () =>
    Effect.gen(function*() {
      const { ask, bob, copies, heard, marker } = yield* withdrawnCancel
      copies()
      yield* bob.list
      yield* heard.next((m) => m.message.id === marker.id)
      assert.deepStrictEqual(heard.seen().map((m) => m.message.id), [ask.id, marker.id], "the copy of the question passed")
    }))

  // Helper cancelb (b): a caller that joined it is not left waiting for nothing until its own timeout.
  it.live("a cancel that joined it writes the cancel anew and gets the broker's answer", () =>
    Effect.gen(function*() {
      const { bob, fake, release, reply } = yield* stalledAfterReply
      // Both forks run to their first wait at once: the first queues its frame, the second joins it.
      const first = yield* Effect.forkScoped(bob.cancel(reply.id), { startImmediately: true })
      const joined = yield* Effect.forkScoped(Effect.exit(bob.cancel(reply.id)), { startImmediately: true })
      // The first caller gives up while its frame is queued: the outbox takes it back.
      yield* Fiber.interrupt(first)
      yield* Deferred.succeed(release, undefined)
      const answer = yield* Fiber.join(joined)
      assert.isTrue(answer._tag === "Success" && answer.value, "the joined cancel got no answer")
      assert.strictEqual(fake.ofType("cancel_message").length, 1, "not one cancel_message was written")
    }))
})

// Helper cancelb: the outbox takes back only what is still queued; a frame already in a write the socket did not
// take whole goes out when that write ends.
describe("a cancel whose caller gave up while its frame was in a write the socket had not taken whole", () => {
  it.live("stays for its answer: the question the broker asks again ahead of it passes", () =>
    Effect.gen(function*() {
      const ask = message("still need this?", { expectsReply: true })
      const reply = message("yes", { replyTo: ask.id })
      const marker = message("after the answer")
      const { dial, release, stall, stalled } = stallingDial("cancel_message")
      // The broker carries the cancel out: the question asked again, then the answer, then a marker.
      const fake = yield* fakeBroker({
        afterRegistered: () => [{ type: "message", from: ALICE, message: ask }],
        cancelAnswer: "cancelled",
        beforeCancel: (id) => id === reply.id ? [{ type: "message", from: ALICE, message: ask }] : [],
        afterCancel: (id) => id === reply.id ? [{ type: "message", from: ALICE, message: marker }] : []
      })
      const { client: bob } = yield* makeClient(fakeClientOptions(fake, BOB_ID, { sendTimeoutMs: 300, dial }))
      const heard = yield* subscribe(bob.messages, "bob's messages")
      yield* bob.connect
      yield* heard.next((m) => m.message.id === ask.id)
      yield* bob.send({ to: ALICE.id, message: reply })
      stall()
      const cancel = yield* Effect.forkScoped(Effect.exit(bob.cancel(reply.id)), { startImmediately: true })
      yield* Deferred.await(stalled)
      // Its own send timeout ends the wait (the event under test, not a barrier); the frame is past taking back.
      const gaveUp = yield* Fiber.join(cancel)
      assert.isTrue(gaveUp._tag === "Failure", "setup: the cancel was answered while its write was stalled")
      yield* Deferred.succeed(release, undefined)
      yield* heard.next((m) => m.message.id === marker.id)
      assert.strictEqual(fake.ofType("cancel_message").length, 1, "setup: the cancel's frame was not written")
      assert.deepStrictEqual(heard.seen().map((m) => m.message.id), [ask.id, ask.id, marker.id], "the question asked again was dropped")
    }))
})
