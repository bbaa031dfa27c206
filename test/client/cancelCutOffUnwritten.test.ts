/**
 * A cancel whose `cancel_message` was still queued in the outbox when its connection closed (behind a write the
 * socket never finished) reached no broker, exactly as one its caller took back unwritten: the close ends it as
 * withdrawn, not abandoned. So its question is a repeat again, and a copy of it the next connection redelivers
 * is dropped (before, the close counted the cancel abandoned, the pair stayed reopened, and the copy was shown
 * twice). A cancel whose frame was in the unfinished write itself may have gone, and stays abandoned: the
 * question, asked again on the next connection, passes once. Helper cancelc.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { message } from "../support/broker.ts"
import { fakeBroker, fakeClientOptions, makeClient, stallingDial, subscribe } from "./support.ts"

const ALICE = { id: "aaaaaaaa-5555-4000-8000-00000000000a", cwd: "/w", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }
const BOB_ID = "bbbbbbbb-5555-4000-8000-00000000000b"

/**
 * Bob read alice's question and replied. A write of `stalledType` stalls (the socket does not take it) while
 * a cancel of the reply is written, then the link is cut with that write unfinished — or, `writeFailsFirst`,
 * that write fails (and the socket refuses more) before the reader sees the link end. The next connection
 * redelivers the question, then a marker. What bob shows, in order, once the marker came.
 */
const cancelCutOff = (stalledType: "send" | "cancel_message", writeFailsFirst = false) =>
  Effect.gen(function*() {
    const ask = message("still need this?", { expectsReply: true })
    const reply = message("yes", { replyTo: ask.id })
    const marker = message("after the copy")
    const { breakWrites, cut, dial, stall, stalled } = stallingDial(stalledType)
    const fake = yield* fakeBroker({
      afterRegistered: (connection) =>
        connection === 1
          ? [{ type: "message", from: ALICE, message: ask }]
          : [{ type: "message", from: ALICE, message: ask }, { type: "message", from: ALICE, message: marker }]
    })
    // Timeouts far past the test: the close is what ends the cancel, not its own timeout.
    const { client: bob } = yield* makeClient(fakeClientOptions(fake, BOB_ID, { sendTimeoutMs: 60_000, reconnectBaseMs: 10, dial }))
    const heard = yield* subscribe(bob.messages, "bob's messages")
    yield* bob.connect
    yield* heard.next((m) => m.message.id === ask.id)
    yield* bob.send({ to: ALICE.id, message: reply })
    stall()
    if (stalledType === "send") {
      yield* Effect.forkScoped(Effect.exit(bob.send({ to: ALICE.id, message: message("stalls") })), { startImmediately: true })
      yield* Deferred.await(stalled)
    }
    // Runs to its first wait at once: its frame is queued behind the stalled send, or is the stalled write.
    const cancel = yield* Effect.forkScoped(Effect.exit(bob.cancel(reply.id)), { startImmediately: true })
    yield* Deferred.await(stalled)
    if (writeFailsFirst) {
      yield* breakWrites
      // The failed write ends the cancel's wait: its caller is gone before the reader sees the link end.
      assert.isTrue((yield* Fiber.join(cancel))._tag === "Failure", "setup: the cancel was answered")
    }
    yield* cut
    const ended = yield* Fiber.join(cancel)
    assert.isTrue(ended._tag === "Failure", "setup: the cancel was answered")
    yield* heard.next((m) => m.message.id === marker.id)
    assert.strictEqual(fake.ofType("cancel_message").length, 0, "setup: the cancel's frame reached the broker")
    return { ask: ask.id, marker: marker.id, seen: heard.seen().map((m) => m.message.id).slice(1) }
  })

describe("a cancel its connection's close cut off", () => {
  it.live("still queued behind an unfinished write: ends withdrawn, and the question redelivered is dropped", () =>
    Effect.gen(function*() {
      const { marker, seen } = yield* cancelCutOff("send")
      assert.deepStrictEqual(seen, [marker], "the question, redelivered after a cancel that never left, was shown again")
    }))

  it.live("still queued when the write ahead of it fails, before the reader sees the link end: ends withdrawn too", () =>
    Effect.gen(function*() {
      const { marker, seen } = yield* cancelCutOff("send", true)
      assert.deepStrictEqual(seen, [marker], "the question, redelivered after a cancel that never left, was shown again")
    }))

  it.live("in the unfinished write: ends abandoned, and the question asked again passes once", () =>
    Effect.gen(function*() {
      const { ask, marker, seen } = yield* cancelCutOff("cancel_message")
      assert.deepStrictEqual(seen, [ask, marker], "the question, asked again after a cancel that may have gone, was dropped")
    }))
})
