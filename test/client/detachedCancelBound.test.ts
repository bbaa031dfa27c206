/**
 * A cancel whose callers all left unanswered stays, detached, for its late answer (review revag AG1) — at most
 * `DETACHED_CANCELS_PER_CONNECTION` of them per connection (review revai AI4, helper cancelb). Past that the
 * oldest goes: a later cancel of its id writes a `cancel_message` of its own (before, it joined the one the
 * broker never answered, wrote nothing and timed out), and the question its reply answered still passes
 * once more — a duplicate at worst, never a lost question.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DETACHED_CANCELS_PER_CONNECTION } from "../../src/client/PendingCancels.ts"
import { message } from "../support/broker.ts"
import { fakeBroker, fakeClientOptions, giveUpOnceWritten, makeClient, subscribe } from "./support.ts"

const ALICE = { id: "aaaaaaaa-5555-4000-8000-00000000000a", cwd: "/w", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }
const BOB_ID = "bbbbbbbb-5555-4000-8000-00000000000b"

describe("detached cancels on one connection", () => {
  it.live("past the bound the oldest goes: a later cancel of its id writes its own, and its question still passes once", () =>
    Effect.gen(function*() {
      const count = DETACHED_CANCELS_PER_CONNECTION + 1
      const asks = Array.from({ length: count }, (_, i) => message(`question ${i}`, { expectsReply: true }))
      const replies = asks.map((ask) => message("yes", { replyTo: ask.id }))
      const marker = message("after the copy")
      let copies = false
      // The broker never answers a cancel; armed, it writes a copy of the first question and a marker ahead of a
      // `list`'s answer.
      const fake = yield* fakeBroker({
        afterRegistered: () => asks.map((ask) => ({ type: "message", from: ALICE, message: ask })),
        beforeList: () =>
          copies ? [{ type: "message", from: ALICE, message: asks[0] }, { type: "message", from: ALICE, message: marker }] : []
      })
      // No cancel times out here: its caller gives up once its frame is read (`giveUpOnceWritten`).
      const { client: bob } = yield* makeClient(fakeClientOptions(fake, BOB_ID, { sendTimeoutMs: 60_000 }))
      const heard = yield* subscribe(bob.messages, "bob's messages")
      yield* bob.connect
      yield* heard.next((m) => m.message.id === asks[count - 1]!.id)
      yield* Effect.forEach(replies, (reply) => bob.send({ to: ALICE.id, message: reply }), { concurrency: 16, discard: true })
      // The first cancel is left first (its caller gives up: the event under test), so it is the oldest detached
      // one; then the others, together.
      yield* giveUpOnceWritten(fake, [bob.cancel(replies[0]!.id)], 1, "setup: the first cancel's frame")
      yield* giveUpOnceWritten(fake, replies.slice(1).map((reply) => bob.cancel(reply.id)), count, "setup: every cancel's frame")
      // The oldest went: this cancel writes its own frame (joined to the oldest, it would write none, and this fails).
      yield* giveUpOnceWritten(fake, [bob.cancel(replies[0]!.id)], count + 1, "the later cancel's own frame")
      assert.strictEqual(fake.ofType("cancel_message").length, count + 1, "the later cancel joined the oldest detached one")
      copies = true
      yield* bob.list
      yield* heard.next((m) => m.message.id === marker.id)
      const seen = heard.seen().map((m) => m.message.id)
      assert.deepStrictEqual(seen.slice(count), [asks[0]!.id, marker.id], "the first question, asked again, was dropped")
    }))
})
