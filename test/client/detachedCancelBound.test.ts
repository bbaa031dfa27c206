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
import { fakeBroker, fakeClientOptions, makeClient, subscribe } from "./support.ts"

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
      const { client: bob } = yield* makeClient(fakeClientOptions(fake, BOB_ID, { sendTimeoutMs: 300 }))
      const heard = yield* subscribe(bob.messages, "bob's messages")
      yield* bob.connect
      yield* heard.next((m) => m.message.id === asks[count - 1]!.id)
      yield* Effect.forEach(replies, (reply) => bob.send({ to: ALICE.id, message: reply }), { concurrency: 16, discard: true })
      // The first cancel is left first (its own timeout: the event under test), so it is the oldest detached one;
      // then the others, together.
      const first = yield* Effect.exit(bob.cancel(replies[0]!.id))
      assert.isTrue(first._tag === "Failure", "setup: the first cancel was answered")
      const rest = yield* Effect.forEach(replies.slice(1), (reply) => Effect.exit(bob.cancel(reply.id)), {
        concurrency: "unbounded"
      })
      assert.isTrue(rest.every((exit) => exit._tag === "Failure"), "setup: a cancel was answered")
      assert.strictEqual(fake.ofType("cancel_message").length, count, "setup: not every cancel wrote its frame")
      // The oldest went: this cancel writes its own frame (and times out: the broker answers none).
      yield* Effect.exit(bob.cancel(replies[0]!.id))
      assert.strictEqual(fake.ofType("cancel_message").length, count + 1, "the later cancel joined the oldest detached one")
      copies = true
      yield* bob.list
      yield* heard.next((m) => m.message.id === marker.id)
      const seen = heard.seen().map((m) => m.message.id)
      assert.deepStrictEqual(seen.slice(count), [asks[0]!.id, marker.id], "the first question, asked again, was dropped")
    }))
})
