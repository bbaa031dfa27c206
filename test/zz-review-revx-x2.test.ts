/**
 * Review revx X2 (probe): fixw remembers an answered copy dropped before its
 * deadline only when Asks.answeredBy marked it, i.e. when it was among the
 * replier's connection's ANSWERED_SCAN (64) oldest unconfirmed items. One
 * deeper in that backlog (the replier's client read 64 others it has not
 * confirmed, e.g. confirmWhenHandled with a slow consumer) is dropped at its
 * connection's close silently and forgotten (StaleAsks.drop: no reply, not
 * past its deadline). Its reply then lost before the deadline, the edge opens
 * again but no copy of the ask is left: the replier is never asked again,
 * and when the reopened edge expires its asker is never told `expired`.
 * As stale-answered-given-back-reply-lost.test.ts, with 64 messages ahead.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "./support/broker.ts"
import { controlWorld as world, custodyFeatures, type Seen } from "./support/controlWorld.ts"

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

describe("revx X2: an answered ask deeper than ANSWERED_SCAN in the replier's backlog, given back early, the reply lost", () => {
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
