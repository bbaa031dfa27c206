/**
 * Review revw W2 (probe, not a product test; the same root as W1, older than
 * the replyclose merge, which extends it to a takeover's old connection): a
 * copy of an ask given back BEFORE its deadline while a reply has closed its
 * edge is dropped silently and for good, with no debt remembered
 * (MailDelivery.dropStale records `silencedAnswered` only past the deadline).
 * Should that reply then be lost before it reaches the asker, the edge opens
 * again (Asks.answerLost) but no copy of the question is left: the reopened
 * edge expires unanswered and the asker is never told `expired`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "./support/broker.ts"
import { controlWorld as world, custodyFeatures, type Seen } from "./support/controlWorld.ts"

const ASK_TIMEOUT_MS = 60_000

const receipts = (frames: ReadonlyArray<Seen>) =>
  frames.flatMap((frame) => frame.type === "message_receipt" ? [`${frame.receipt?.status} ${frame.receipt?.messageId}`] : [])

describe("review revw W2: an ask copy given back before its deadline while answered, the reply then lost", () => {
  it.effect("the reopened edge expires unanswered: its asker, back, gets the ask's expired receipt", () =>
    Effect.gen(function*() {
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
      // b-1's connection drops before the deadline: the ask's copy, answered, goes silently.
      w.closeAbandoned(w.b1)
      // b, back, withdraws its reply before d read it: the ask is unanswered again, its edge open.
      const b2 = w.registerB("b-2")
      w.batch(b2, [{ type: "cancel_message", messageId: reply.id }])
      assert.strictEqual(w.router.stats().asks, 1, "setup: the edge did not open again")
      clock.now += ASK_TIMEOUT_MS
      // A send prunes the edges: the reopened edge expires, unanswered.
      w.batch(b2, [{ type: "send", to: "b", message: message("tick") }])
      assert.strictEqual(w.router.stats().asks, 0, "setup: the reopened edge did not expire")
      const back = w.registerD()
      assert.include(receipts(w.framesOf(back)), `expired ${ask.id}`, "the ask expired unanswered and its asker was never told")
    }))
})
