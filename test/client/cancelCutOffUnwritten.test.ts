/**
 * A cancel whose `cancel_message` was still queued in the outbox when its connection closed (behind a write the
 * socket never finished) reached no broker, exactly as one its caller took back unwritten: the close ends it as
 * withdrawn, not abandoned. So its question is a repeat again, and a copy of it the next connection redelivers
 * is dropped (before, the close counted the cancel abandoned, the pair stayed reopened, and the copy was shown
 * twice). A cancel whose frame was in the unfinished write itself may have gone, and stays abandoned: the
 * question, asked again on the next connection, passes once. Helper cancelc.
 *
 * The same for a cancel written after a failed write stopped the outbox (a caller that joined the cancel the
 * failed write dropped, or a fresh cancel, before the reader sees the link end: review `revar` AR1), and for a
 * cancel in a write the transport refused whole (the socket already destroyed: `unfinishedWrite()` 0; AR2).
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { type Dialer, dialUnixSocket } from "../../src/client/Dialer.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message } from "../support/broker.ts"
import { fakeBroker, fakeClientOptions, makeClient, stallingDial, subscribe } from "./support.ts"

const ALICE = { id: "aaaaaaaa-5555-4000-8000-00000000000a", cwd: "/w", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }
const BOB_ID = "bbbbbbbb-5555-4000-8000-00000000000b"

/**
 * Bob (dialling through `dial`) read alice's question and replied to it; the next connection redelivers the
 * question, then a marker. `seen` is what bob showed after the first copy of the question.
 */
const repliedToAsk = (dial: Dialer) =>
  Effect.gen(function*() {
    const ask = message("still need this?", { expectsReply: true })
    const reply = message("yes", { replyTo: ask.id })
    const marker = message("after the copy")
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
    const seen = Effect.map(heard.next((m) => m.message.id === marker.id), () => heard.seen().map((m) => m.message.id).slice(1))
    return { ask, bob, fake, marker, reply, seen }
  })

/**
 * Bob read alice's question and replied. A write of `stalledType` stalls (the socket does not take it) while
 * a cancel of the reply is written, then the link is cut with that write unfinished — or, `writeFailsFirst`,
 * that write fails (and the socket refuses more) before the reader sees the link end. The next connection
 * redelivers the question, then a marker. What bob shows, in order, once the marker came.
 */
const cancelCutOff = (stalledType: "send" | "cancel_message", writeFailsFirst = false) =>
  Effect.gen(function*() {
    const { breakWrites, cut, dial, stall, stalled } = stallingDial(stalledType)
    const { ask, bob, fake, marker, reply, seen } = yield* repliedToAsk(dial)
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
    const shown = yield* seen
    assert.strictEqual(fake.ofType("cancel_message").length, 0, "setup: the cancel's frame reached the broker")
    return { ask: ask.id, marker: marker.id, seen: shown }
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

/** As `cancelCutOff`'s 'write ahead of it fails', with a second cancel of the same reply. */
const failedWriteThenSecondCancel = (second: "joined" | "after") =>
  Effect.gen(function*() {
    const { breakWrites, cut, dial, stall, stalled } = stallingDial("send")
    const { bob, fake, marker, reply, seen } = yield* repliedToAsk(dial)
    stall()
    yield* Effect.forkScoped(Effect.exit(bob.send({ to: ALICE.id, message: message("stalls") })), { startImmediately: true })
    yield* Deferred.await(stalled)
    const first = yield* Effect.forkScoped(Effect.exit(bob.cancel(reply.id)), { startImmediately: true })
    const joined = second === "joined"
      ? yield* Effect.forkScoped(Effect.exit(bob.cancel(reply.id)), { startImmediately: true })
      : undefined
    yield* breakWrites
    assert.isTrue((yield* Fiber.join(first))._tag === "Failure", "setup: the first cancel was answered")
    if (joined !== undefined) {
      assert.isTrue((yield* Fiber.join(joined))._tag === "Failure", "setup: the joined cancel was answered")
    } else {
      // The reader has not seen the link end: the connection is still open, its outbox stopped.
      assert.isTrue((yield* Effect.exit(bob.cancel(reply.id)))._tag === "Failure", "setup: the later cancel was answered")
    }
    yield* cut
    const shown = yield* seen
    assert.strictEqual(fake.ofType("cancel_message").length, 0, "setup: a cancel's frame reached the broker")
    return { marker: marker.id, seen: shown }
  })

describe("a cancel written into the outbox a failed write stopped", () => {
  it.live("a caller that joined the cancel the failed write dropped: never written, the question redelivered is dropped", () =>
    Effect.gen(function*() {
      const { marker, seen } = yield* failedWriteThenSecondCancel("joined")
      assert.deepStrictEqual(seen, [marker], "the question, redelivered after cancels that never left, was shown again")
    }))

  it.live("a cancel made after the write failed, before the reader saw the close: never written, the question redelivered is dropped", () =>
    Effect.gen(function*() {
      const { marker, seen } = yield* failedWriteThenSecondCancel("after")
      assert.deepStrictEqual(seen, [marker], "the question, redelivered after cancels that never left, was shown again")
    }))
})

describe("a cancel in a write the transport refused", () => {
  it.live("is never written: it ends withdrawn, and the question redelivered is dropped", () =>
    Effect.gen(function*() {
      const dialled: Array<Connection> = []
      const dial: Dialer = (socketPath) => Effect.tap(dialUnixSocket(socketPath), (c) => Effect.sync(() => dialled.push(c)))
      const { bob, fake, marker, reply, seen } = yield* repliedToAsk(dial)
      // The socket dies (destroyed: its 'close' comes a tick later); in the same turn bob cancels the reply. The
      // outbox hands the cancel to the transport, which refuses it whole: no byte of it is written.
      const first = dialled[0]
      assert.isDefined(first, "setup: no connection dialled")
      if (first === undefined) return
      yield* first.destroy
      const ended = yield* Effect.exit(bob.cancel(reply.id))
      assert.isTrue(ended._tag === "Failure", "setup: the cancel was answered")
      assert.strictEqual(first.unfinishedWrite(), 0, "setup: the transport took part of the cancel's write")
      const shown = yield* seen
      assert.strictEqual(fake.ofType("cancel_message").length, 0, "setup: the cancel's frame reached the broker")
      assert.deepStrictEqual(shown, [marker.id], "the question, redelivered after a cancel the transport refused, was shown again")
    }))
})
