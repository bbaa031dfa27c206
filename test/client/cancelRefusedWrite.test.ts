/**
 * A write the transport refuses whole (the socket already destroyed or its write side ended:
 * `SocketConnection.write` hands over none of it and `unfinishedWrite()` is 0) wrote nothing, so a cancel in
 * it is told `takenBack` when the write fails, before the reader sees the close: it ends withdrawn, and its
 * question, redelivered by the next connection, is dropped as cancelled. Review `revar` AR2.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { dialUnixSocket } from "../../src/client/Dialer.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { fakeBroker, fakeClientOptions, makeClient, subscribe } from "./support.ts"
import { message } from "../support/broker.ts"

const ALICE = { id: "aaaaaaaa-5555-4000-8000-00000000000a", cwd: "/w", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }
const BOB_ID = "bbbbbbbb-5555-4000-8000-00000000000b"

describe("a cancel in a write the transport refused", () => {
  it.live("is never written: it ends withdrawn, and the question redelivered is dropped", () =>
    Effect.gen(function*() {
      const ask = message("still need this?", { expectsReply: true })
      const reply = message("yes", { replyTo: ask.id })
      const marker = message("after the copy")
      const dialled: Array<Connection> = []
      const dial = (socketPath: string) => Effect.tap(dialUnixSocket(socketPath), (c) => Effect.sync(() => dialled.push(c)))
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
      // The socket dies (destroyed: its 'close' comes a tick later); in the same turn bob cancels the reply. The
      // outbox hands the cancel to the transport, which refuses it whole: no byte of it is written.
      const first = dialled[0]
      assert.isDefined(first, "setup: no connection dialled")
      if (first === undefined) return
      yield* first.destroy
      const ended = yield* Effect.exit(bob.cancel(reply.id))
      assert.isTrue(ended._tag === "Failure", "setup: the cancel was answered")
      assert.strictEqual(first.unfinishedWrite(), 0, "setup: the transport took part of the cancel's write")
      yield* heard.next((m) => m.message.id === marker.id)
      assert.strictEqual(fake.ofType("cancel_message").length, 0, "setup: the cancel's frame reached the broker")
      const seen = heard.seen().map((m) => m.message.id).slice(1)
      assert.deepStrictEqual(seen, [marker.id], "the question, redelivered after a cancel the transport refused, was shown again")
    }))
})
