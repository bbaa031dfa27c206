/**
 * A reply's `expired` receipt read while a cancel of that reply waits queued (behind a write the socket has
 * not taken) reopens the question for good (RecentMessages.replyLost); the cancel, taken back unwritten as its
 * caller gives up, does not close it again: the question the broker asks again after the receipt passes once
 * (review revam AM1: before, it was dropped as a repeat — a lost question).
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
import { dialUnixSocket } from "../../src/client/Dialer.ts"
import { frameText } from "../../src/protocol/framing.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message } from "../support/broker.ts"
import { fakeBroker, fakeClientOptions, makeClient, subscribe } from "./support.ts"

const ALICE = { id: "aaaaaaaa-5555-4000-8000-00000000000a", cwd: "/w", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }
const BOB_ID = "bbbbbbbb-5555-4000-8000-00000000000b"

/**
 * A dialer that can hold back a read batch holding a `message_receipt` until `readGate` opens, and stall the
 * next write holding a `send` until `writeGate` opens (`stalled` completes as it begins).
 */
const gatedDial = () => {
  const readGate = Deferred.makeUnsafe<void>()
  const writeGate = Deferred.makeUnsafe<void>()
  const stalled = Deferred.makeUnsafe<void>()
  const held = Deferred.makeUnsafe<void>()
  let holdReceipts = false
  let stallNext = false
  const dial = (socketPath: string) =>
    Effect.map(dialUnixSocket(socketPath), (connection): Connection => ({
      id: connection.id,
      trustedLocal: connection.trustedLocal,
      read: Effect.flatMap(connection.read, (batch) => {
        if (!holdReceipts || !batch.some((text) => text.includes(`"message_receipt"`))) return Effect.succeed(batch)
        holdReceipts = false
        Deferred.doneUnsafe(held, Exit.void)
        return Effect.as(Deferred.await(readGate), batch)
      }),
      writeAll: connection.writeAll,
      write: (frames) => {
        if (!stallNext || !frames.some((f) => frameText(f).startsWith(`{"type":"send"`))) return connection.write(frames)
        stallNext = false
        Deferred.doneUnsafe(stalled, Exit.void)
        return Effect.andThen(Deferred.await(writeGate), connection.writeAll(frames))
      },
      unfinishedWrite: () => connection.unfinishedWrite(),
      readProgress: () => connection.readProgress(),
      readPending: () => connection.readPending(),
      end: connection.end,
      destroy: connection.destroy
    }))
  return {
    dial,
    readGate,
    writeGate,
    stalled,
    held,
    holdReceipts: () => (holdReceipts = true),
    stall: () => (stallNext = true)
  }
}

describe("a reply lost while its cancel waits queued", () => {
  it.live("the question the broker asks again after the reply's expired receipt passes, though the cancel is taken back", () =>
    Effect.gen(function*() {
      const ask = message("still need this?", { expectsReply: true })
      const reply = message("yes", { replyTo: ask.id })
      const marker = message("after the copy")
      let phase: "none" | "receipt" | "askAgain" = "none"
      const gates = gatedDial()
      const fake = yield* fakeBroker({
        afterRegistered: () => [{ type: "message", from: ALICE, message: ask }],
        beforeList: () =>
          phase === "receipt"
            ? [{
              type: "message_receipt",
              from: ALICE,
              receipt: { messageId: reply.id, status: "expired", timestamp: 1, detail: "evicted" }
            }]
            : phase === "askAgain"
            ? [{ type: "message", from: ALICE, message: ask }, { type: "message", from: ALICE, message: marker }]
            : []
      })
      const { client: bob } = yield* makeClient(fakeClientOptions(fake, BOB_ID, { sendTimeoutMs: 5000, dial: gates.dial }))
      const heard = yield* subscribe(bob.messages, "bob's messages")
      yield* bob.connect
      yield* heard.next((m) => m.message.id === ask.id)
      yield* bob.send({ to: ALICE.id, message: reply })
      // The broker writes the reply's `expired` receipt; bob's reader holds the batch back for now.
      phase = "receipt"
      gates.holdReceipts()
      const listed = yield* Effect.forkScoped(bob.list, { startImmediately: true })
      yield* Deferred.await(gates.held)
      phase = "none"
      // A send stalls in a write the socket does not take; the cancel of the reply queues behind it.
      gates.stall()
      yield* Effect.forkScoped(Effect.exit(bob.send({ to: ALICE.id, message: message("stalled") })), { startImmediately: true })
      yield* Deferred.await(gates.stalled)
      const cancelling = yield* Effect.forkScoped(Effect.exit(bob.cancel(reply.id)), { startImmediately: true })
      // The receipt is read (its list's answer behind it): the reply was lost, the broker will ask again.
      yield* Deferred.succeed(gates.readGate, undefined)
      yield* Fiber.join(listed)
      // The cancel's caller gives up while its frame is still queued: taken back, it reached no broker.
      yield* Fiber.interrupt(cancelling)
      yield* Deferred.succeed(gates.writeGate, undefined)
      yield* bob.list
      assert.strictEqual(fake.ofType("cancel_message").length, 0, "setup: the cancel's frame was written")
      // The broker asks the question again, after the receipt: it must pass once.
      phase = "askAgain"
      yield* bob.list
      yield* heard.next((m) => m.message.id === marker.id)
      const seen = heard.seen().map((m) => m.message.id)
      assert.deepStrictEqual(seen, [ask.id, ask.id, marker.id], "the question asked again after the reply's loss was dropped")
    }))
})
