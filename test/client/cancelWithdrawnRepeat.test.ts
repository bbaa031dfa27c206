/**
 * A cancel whose `cancel_message` was withdrawn unwritten (its caller timed out while it was queued) leaves
 * the question its reply answered a repeat again: the broker never saw a cancel, so a copy of the question
 * it writes later is dropped (review revai AI2; before, the pair stayed reopened and the copy was shown).
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit } from "effect"
import { dialUnixSocket } from "../../src/client/Dialer.ts"
import { frameText } from "../../src/protocol/framing.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message } from "../support/broker.ts"
import { fakeBroker, fakeClientOptions, makeClient, subscribe } from "./support.ts"

const ALICE = { id: "aaaaaaaa-5555-4000-8000-00000000000a", cwd: "/w", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }
const BOB_ID = "bbbbbbbb-5555-4000-8000-00000000000b"

describe("a cancel whose frame was withdrawn unwritten", () => {
  it.live("leaves the question a repeat: a copy of it read later is dropped", () =>
    Effect.gen(function*() {
      const ask = message("still need this?", { expectsReply: true })
      const reply = message("yes", { replyTo: ask.id })
      const other = message("a send whose write the socket does not take at once")
      const marker = message("after the copy")
      let copies = false
      const release = Deferred.makeUnsafe<void>()
      const stalled = Deferred.makeUnsafe<void>()
      let stallNext = false
      // A dialer whose next write of a `send`, once armed, is not taken until `release` (a full socket buffer).
      const dial = (socketPath: string) =>
        Effect.map(dialUnixSocket(socketPath), (connection): Connection => ({
          id: connection.id,
          trustedLocal: connection.trustedLocal,
          read: connection.read,
          writeAll: connection.writeAll,
          write: (frames) => {
            if (!stallNext || !frames.some((f) => frameText(f).startsWith(`{"type":"send"`))) return connection.write(frames)
            stallNext = false
            Deferred.doneUnsafe(stalled, Exit.void)
            return Effect.andThen(Deferred.await(release), connection.writeAll(frames))
          },
          unfinishedWrite: () => connection.unfinishedWrite(),
          readProgress: () => connection.readProgress(),
          readPending: () => connection.readPending(),
          end: connection.end,
          destroy: connection.destroy
        }))
      const fake = yield* fakeBroker({ afterRegistered: () => [{ type: "message", from: ALICE, message: ask }], cancelAnswer: "cancelled",
        beforeList: () => copies ? [{ type: "message", from: ALICE, message: ask }, { type: "message", from: ALICE, message: marker }] : []
      })
      const { client: bob } = yield* makeClient(fakeClientOptions(fake, BOB_ID, { sendTimeoutMs: 300, dial }))
      const heard = yield* subscribe(bob.messages, "bob's messages")
      yield* bob.connect
      yield* heard.next((m) => m.message.id === ask.id)
      yield* bob.send({ to: ALICE.id, message: reply })
      stallNext = true
      yield* Effect.forkScoped(Effect.exit(bob.send({ to: ALICE.id, message: other })), { startImmediately: true })
      yield* Deferred.await(stalled)
      // Queued behind the stalled write, the cancel times out and its frame is taken back, never written.
      const first = yield* Effect.exit(bob.cancel(reply.id))
      assert.isTrue(first._tag === "Failure", "setup: the first cancel was answered")
      yield* Deferred.succeed(release, undefined)
      yield* bob.list
      assert.strictEqual(fake.ofType("cancel_message").length, 0, "setup: the first cancel's frame was written")
      copies = true
      yield* bob.list
      yield* heard.next((m) => m.message.id === marker.id)
      assert.deepStrictEqual(heard.seen().map((m) => m.message.id), [ask.id, marker.id], "the copy of the question passed")
    }))
})
