/**
 * An answered ask deeper in the replier's backlog than AnsweredCopies' ANSWERED_SCAN
 * (64 unconfirmed items ahead of it), so no reply marked its copy: given
 * back at the replier connection's close before its deadline, it is dropped
 * and remembered by its key (StaleAsks.drop). Its reply then lost before the
 * deadline (cancelled by its sender), the edge opens again and the ask is
 * put back: the replier, live, is asked again, and when the reopened edge
 * expires unanswered its asker is told `expired` (review revx X2).
 * As stale-answered-given-back-reply-lost.test.ts, with 64 messages ahead.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, type Seen } from "../support/controlWorld.ts"

const ASK_TIMEOUT_MS = 60_000
const AHEAD = 64

const receipts = (frames: ReadonlyArray<Seen>) =>
  frames.flatMap((frame) => frame.type === "message_receipt" ? [`${frame.receipt?.status} ${frame.receipt?.messageId}`] : [])

const deepAskReplyWithdrawn = Effect.gen(function*() {
  const clock = { now: 1_000_000 }
  const w = yield* world(custodyFeatures, { askTimeout: ASK_TIMEOUT_MS }, clock)
  const ask = message("still need this?", { expectsReply: true })
  const reply = message("yes", { replyTo: ask.id })
  for (let i = 0; i < AHEAD; i++) w.batch(w.d, [{ type: "send", to: "b", message: message(`note ${i}`) }])
  w.batch(w.d, [{ type: "send", to: "b", message: ask }])
  assert.include(w.messagesOf(w.b1), ask.id, "setup: the ask was not written to b-1")
  assert.strictEqual(w.messagesOf(w.b1).length, AHEAD + 1, "setup: b-1 was not written all")
  w.closeAbandoned(w.d)
  w.batch(w.b1, [{ type: "send", to: "d", message: reply }])
  assert.strictEqual(w.router.stats().asks, 0, "setup: the reply did not close the edge")
  w.closeAbandoned(w.b1)
  const b2 = w.registerB("b-2")
  w.batch(b2, [{ type: "cancel_message", messageId: reply.id }])
  assert.strictEqual(w.router.stats().asks, 1, "setup: the edge did not open again")
  return { ask, b2, clock, w }
})

describe("an answered ask deeper than ANSWERED_SCAN in the replier's backlog, given back early, its reply lost", () => {
  it.effect("the replier, live, is asked the ask again", () =>
    Effect.gen(function*() {
      const { ask, b2, w } = yield* deepAskReplyWithdrawn
      assert.include(w.messagesOf(b2), ask.id, "the ask was not asked again though its edge is open")
    }))

  it.effect("the reopened edge expires unanswered: its asker, back, gets the expired receipt", () =>
    Effect.gen(function*() {
      const { ask, b2, clock, w } = yield* deepAskReplyWithdrawn
      w.closeAbandoned(b2)
      clock.now += ASK_TIMEOUT_MS
      const b3 = w.registerB("b-3")
      w.batch(b3, [{ type: "send", to: "b", message: message("tick") }])
      assert.strictEqual(w.router.stats().asks, 0, "setup: the reopened edge did not expire")
      const back = w.registerD()
      assert.include(receipts(w.framesOf(back)), `expired ${ask.id}`, "the ask expired unanswered and its asker was never told")
    }))
})
