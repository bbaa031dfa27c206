/**
 * Review revar AR2 (probe; fails on main at 6931273d / 1c36d13d). A write the transport REFUSES (the socket is
 * already destroyed or its write side ended; SocketConnection.write hands over none of it, `unfinishedWrite()`
 * 0) is a write that failed before the reader saw the close — the case helper cancelc made end withdrawn. But
 * `Outbox.writeQueued` forgets the batch's `takenBack`s as it hands the batch to the transport, before it knows
 * the transport refused it, so a cancel in that batch, surely never written, stays "maybe sent" and the close
 * counts it abandoned: its question, redelivered by the next connection, is shown again.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { dialUnixSocket } from "../src/client/Dialer.ts"
import type { Connection } from "../src/transport/Connection.ts"
import { fakeBroker, fakeClientOptions, makeClient, subscribe } from "./client/support.ts"
import { message } from "./support/broker.ts"

const ALICE = { id: "aaaaaaaa-5555-4000-8000-00000000000a", cwd: "/w", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }
const BOB_ID = "bbbbbbbb-5555-4000-8000-00000000000b"

describe("review revar AR2: a cancel in a write the transport refused", () => {
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
