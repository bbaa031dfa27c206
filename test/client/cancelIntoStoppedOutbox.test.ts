/**
 * A cancel written into an outbox that a failed transport write has stopped (`Outbox.drop`: the reader has
 * not yet seen the link end, so the connection still counts as open) is never written: the outbox tells it
 * `takenBack` as it refuses the write, so the cancel ends withdrawn and its question, redelivered by the next
 * connection, is dropped as cancelled. Two ways in: a caller that joined the cancel the failed write dropped
 * (told `withdrawn`, it writes the cancel anew), and a fresh cancel made in that window. Review `revar` AR1.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { fakeBroker, fakeClientOptions, makeClient, stallingDial, subscribe } from "./support.ts"
import { message } from "../support/broker.ts"

const ALICE = { id: "aaaaaaaa-5555-4000-8000-00000000000a", cwd: "/w", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }
const BOB_ID = "bbbbbbbb-5555-4000-8000-00000000000b"

/** As cancelCutOffUnwritten.test.ts's 'write ahead of it fails', with a second cancel of the same reply. */
const failedWriteThenSecondCancel = (second: "joined" | "after") =>
  Effect.gen(function*() {
    const ask = message("still need this?", { expectsReply: true })
    const reply = message("yes", { replyTo: ask.id })
    const marker = message("after the copy")
    const { breakWrites, cut, dial, stall, stalled } = stallingDial("send")
    const fake = yield* fakeBroker({
      afterRegistered: (connection) =>
        connection === 1
          ? [{ type: "message", from: ALICE, message: ask }]
          : [{ type: "message", from: ALICE, message: ask }, { type: "message", from: ALICE, message: marker }]
    })
    const { client: bob } = yield* makeClient(fakeClientOptions(fake, BOB_ID, { sendTimeoutMs: 60_000, reconnectBaseMs: 10, dial }))
    const heard = yield* subscribe(bob.messages, "bob's messages")
    yield* bob.connect
    yield* heard.next((m) => m.message.id === ask.id)
    yield* bob.send({ to: ALICE.id, message: reply })
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
    yield* heard.next((m) => m.message.id === marker.id)
    assert.strictEqual(fake.ofType("cancel_message").length, 0, "setup: a cancel's frame reached the broker")
    return { marker: marker.id, seen: heard.seen().map((m) => m.message.id).slice(1) }
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
