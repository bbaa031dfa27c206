/**
 * A detached cancel dropped past the bound leaves its question's pair reopened (PendingCancels.ts): the broker
 * may have carried it out. A later cancel of the same id whose frame the outbox takes back unwritten reached no
 * broker and closes only what it reopened itself — not that pair: the question, asked again because of the
 * dropped cancel, still passes once (review revaj AJ1; before, it was dropped as a repeat — a lost question).
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect } from "effect"
import { DETACHED_CANCELS_PER_CONNECTION } from "../../src/client/PendingCancels.ts"
import { message } from "../support/broker.ts"
import { fakeBroker, fakeClientOptions, giveUpOnceWritten, makeClient, stallingDial, subscribe } from "./support.ts"

const ALICE = { id: "aaaaaaaa-5555-4000-8000-00000000000a", cwd: "/w", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }
const BOB_ID = "bbbbbbbb-5555-4000-8000-00000000000b"

describe("a cancel taken back unwritten after a dropped detached cancel of its id", () => {
  it.live("leaves the pair the dropped cancel reopened open: the question, asked again, passes once", () =>
    Effect.gen(function*() {
      const count = DETACHED_CANCELS_PER_CONNECTION + 1
      const asks = Array.from({ length: count }, (_, i) => message(`question ${i}`, { expectsReply: true }))
      const replies = asks.map((ask) => message("yes", { replyTo: ask.id }))
      const marker = message("after the copy")
      let copies = false
      const { dial, release, stall, stalled } = stallingDial()
      // The broker answers no cancel; armed, it writes a copy of the first question (it carried the first
      // cancel out at last) and a marker ahead of a `list`'s answer.
      const fake = yield* fakeBroker({
        afterRegistered: () => asks.map((ask) => ({ type: "message", from: ALICE, message: ask })),
        beforeList: () =>
          copies ? [{ type: "message", from: ALICE, message: asks[0] }, { type: "message", from: ALICE, message: marker }] : []
      })
      // Only the later cancel times out, behind a write that does not end until released: its timeout races nothing.
      const { client: bob } = yield* makeClient(fakeClientOptions(fake, BOB_ID, { sendTimeoutMs: 1000, dial }))
      const heard = yield* subscribe(bob.messages, "bob's messages")
      yield* bob.connect
      yield* heard.next((m) => m.message.id === asks[count - 1]!.id)
      yield* Effect.forEach(replies, (reply) => bob.send({ to: ALICE.id, message: reply }), { concurrency: 16, discard: true })
      // The first cancel of replies[0] is written and detached first: the oldest, dropped past the bound.
      yield* giveUpOnceWritten(fake, [bob.cancel(replies[0]!.id)], 1, "setup: the first cancel's frame")
      yield* giveUpOnceWritten(fake, replies.slice(1).map((reply) => bob.cancel(reply.id)), count, "setup: every cancel's frame")
      // A send stalls in a write the socket does not take: a later cancel of replies[0] queues behind it and,
      // timing out (its own send timeout: the event under test), is taken back unwritten.
      stall()
      yield* Effect.forkScoped(Effect.exit(bob.send({ to: ALICE.id, message: message("stalled") })), { startImmediately: true })
      yield* Deferred.await(stalled)
      const later = yield* Effect.exit(bob.cancel(replies[0]!.id))
      assert.isTrue(later._tag === "Failure", "setup: the later cancel was answered")
      yield* Deferred.succeed(release, undefined)
      yield* bob.list
      assert.strictEqual(fake.ofType("cancel_message").length, count, "setup: the later cancel's frame was written")
      // The broker carries the first (dropped) cancel out: the question it asks again must pass once.
      copies = true
      yield* bob.list
      yield* heard.next((m) => m.message.id === marker.id)
      const seen = heard.seen().map((m) => m.message.id)
      assert.deepStrictEqual(seen.slice(count), [asks[0]!.id, marker.id], "the first question, asked again, was dropped")
    }))
})
