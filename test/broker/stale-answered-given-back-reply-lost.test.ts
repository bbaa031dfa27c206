/**
 * A copy of an ask given back BEFORE its deadline while a reply has closed
 * its edge (the replier answered before confirming it, then its connection
 * dropped) is dropped as answered, and StaleAsks remembers it with the
 * reply's edge (`drop`), not only past the deadline. Should that reply then
 * be lost before its asker got it (here its sender withdraws it), the edge
 * opens again and the question is put back (StaleAsks.replyLost): the
 * replier is asked it again, and when the reopened edge expires unanswered
 * the asker is told `expired` (review revw W2).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, type Seen } from "../support/controlWorld.ts"

const ASK_TIMEOUT_MS = 60_000

const receipts = (frames: ReadonlyArray<Seen>) =>
  frames.flatMap((frame) => frame.type === "message_receipt" ? [`${frame.receipt?.status} ${frame.receipt?.messageId}`] : [])

/** b-1 answers d's ask before confirming it, b-1's connection drops before the deadline, and b, back, withdraws the reply. */
const replyWithdrawnAfterGiveBack = Effect.gen(function*() {
  const clock = { now: 1_000_000 }
  const w = yield* world(custodyFeatures, { askTimeout: ASK_TIMEOUT_MS }, clock)
  const ask = message("still need this?", { expectsReply: true })
  const reply = message("yes", { replyTo: ask.id })
  w.batch(w.d, [{ type: "send", to: "b", message: ask }])
  assert.deepStrictEqual(w.messagesOf(w.b1), [ask.id], "setup: the ask was not written to b-1")
  w.closeAbandoned(w.d)
  // b-1 answers before confirming the ask; the reply waits in the mailbox for d, which is away.
  w.batch(w.b1, [{ type: "send", to: "d", message: reply }])
  assert.strictEqual(w.router.stats().asks, 0, "setup: the reply did not close the edge")
  // b-1's connection drops before the deadline: the ask's copy, answered, is dropped.
  w.closeAbandoned(w.b1)
  assert.strictEqual(w.router.stats().mailbox, 1, "setup: the ask's copy was not dropped (only the reply waits)")
  // b, back, withdraws its reply before d read it: the ask is unanswered again, its edge open.
  const b2 = w.registerB("b-2")
  w.batch(b2, [{ type: "cancel_message", messageId: reply.id }])
  assert.strictEqual(w.router.stats().asks, 1, "setup: the edge did not open again")
  return { ask, b2, clock, w }
})

describe("an ask copy given back before its deadline while answered, the reply then lost", () => {
  it.effect("the replier, live, is asked the ask again", () =>
    Effect.gen(function*() {
      const { ask, b2, w } = yield* replyWithdrawnAfterGiveBack
      assert.include(w.messagesOf(b2), ask.id, "the ask was not asked again though its edge is open")
    }))

  it.effect("the replier gone again, the reopened edge expires unanswered: its asker, back, gets the expired receipt", () =>
    Effect.gen(function*() {
      const { ask, b2, clock, w } = yield* replyWithdrawnAfterGiveBack
      // b-2 drops without confirming the ask asked again: its copy goes back to the mailbox, its edge still open.
      w.closeAbandoned(b2)
      clock.now += ASK_TIMEOUT_MS
      // A send prunes the edges: the reopened edge expires, unanswered, and the mailbox drops its copy.
      const b3 = w.registerB("b-3")
      w.batch(b3, [{ type: "send", to: "b", message: message("tick") }])
      assert.strictEqual(w.router.stats().asks, 0, "setup: the reopened edge did not expire")
      const back = w.registerD()
      assert.include(receipts(w.framesOf(back)), `expired ${ask.id}`, "the ask expired unanswered and its asker was never told")
    }))
})
