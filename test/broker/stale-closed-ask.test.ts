/**
 * An ask whose edge closed early — answered by a reply, or withdrawn by
 * `cancel_ask` — given back by its receiver's connection (read, never
 * confirmed) past its deadline (helper staleans): d asks b; b-1 is written
 * the ask and never confirms it; b replies, or d cancels the ask; the
 * deadline passes; b-1's connection drops. The ask comes back stale and is
 * dropped, but it did not expire: d gets no `expired` receipt, its replay
 * record is not rewritten, and a retry hears what it heard before. One
 * whose reply was lost (the edge opened again) and which then expired does
 * get its receipt. Before its deadline such an ask goes silently too, and
 * b's return is not asked it again.
 *
 * On a Router driven by hand (controlWorld), its clock moved by the test.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, type Seen } from "../support/controlWorld.ts"

const ASK_TIMEOUT_MS = 60_000

/** The receipts `frames` hold, as `status id`. */
const receipts = (frames: ReadonlyArray<Seen>) =>
  frames.flatMap((frame) => frame.type === "message_receipt" ? [`${frame.receipt?.status} ${frame.receipt?.messageId}`] : [])

/**
 * d asks b; b-1 is written the ask and never confirms it; the ask's edge is then closed by `close` (or
 * left open); the clock moves `by`; b-1's connection drops.
 */
const askClosedThenDropped = (close: "reply" | "cancel_ask" | "none", by: number) =>
  Effect.gen(function*() {
    const clock = { now: 1_000_000 }
    const w = yield* world(custodyFeatures, { askTimeout: ASK_TIMEOUT_MS }, clock)
    const ask = message("still need this?", { expectsReply: true })
    const reply = message("yes", { replyTo: ask.id })
    w.batch(w.d, [{ type: "send", to: "b", message: ask }])
    assert.deepStrictEqual(w.messagesOf(w.b1), [ask.id], "the ask was not written to b-1: the test sets up nothing")
    if (close === "reply") {
      w.batch(w.b1, [{ type: "send", to: "d", message: reply }])
      assert.include(w.messagesOf(w.d), reply.id, "the reply did not reach d: the test sets up nothing")
    } else if (close === "cancel_ask") w.batch(w.d, [{ type: "cancel_ask", messageId: ask.id }])
    clock.now += by
    w.closeAbandoned(w.b1)
    return { ask, reply, w }
  })

describe("an ask whose edge closed early, given back unconfirmed past its deadline", () => {
  it.effect("answered: its asker gets no expired receipt and a retry still hears delivered", () =>
    Effect.gen(function*() {
      const { ask, w } = yield* askClosedThenDropped("reply", ASK_TIMEOUT_MS + 1)
      assert.deepStrictEqual(receipts(w.framesOf(w.d)), [])
      w.batch(w.d, [{ type: "send", to: "b", message: ask }])
      assert.deepStrictEqual(w.answersOf(ask.id), ["delivered", "delivered"])
    }))

  it.effect("withdrawn by cancel_ask: its asker gets no expired receipt and a retry still hears delivered", () =>
    Effect.gen(function*() {
      const { ask, w } = yield* askClosedThenDropped("cancel_ask", ASK_TIMEOUT_MS + 1)
      assert.deepStrictEqual(receipts(w.framesOf(w.d)), [])
      w.batch(w.d, [{ type: "send", to: "b", message: ask }])
      assert.deepStrictEqual(w.answersOf(ask.id), ["delivered", "delivered"])
    }))

  it.effect("withdrawn by cancel_ask while still unwritten: its asker gets no expired receipt", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, { askTimeout: ASK_TIMEOUT_MS }, clock)
      const ask = message("still need this?", { expectsReply: true })
      w.stick()
      w.batch(w.d, [{ type: "send", to: "b", message: ask }])
      w.batch(w.d, [{ type: "cancel_ask", messageId: ask.id }])
      assert.deepStrictEqual(w.messagesOf(w.b1), [], "the ask was written to b-1: the test sets up nothing")
      clock.now += ASK_TIMEOUT_MS + 1
      w.closeAbandoned(w.b1)
      assert.deepStrictEqual(receipts(w.framesOf(w.d)), [])
      w.batch(w.d, [{ type: "send", to: "b", message: ask }])
      assert.deepStrictEqual(w.answersOf(ask.id), ["delivered", "delivered"])
    }))

  it.effect("unanswered: its asker gets an expired receipt (the edge expired)", () =>
    Effect.gen(function*() {
      const { ask, w } = yield* askClosedThenDropped("none", ASK_TIMEOUT_MS + 1)
      assert.deepStrictEqual(receipts(w.framesOf(w.d)), [`expired ${ask.id}`])
    }))

  it.effect("answered, but the reply was lost (cancelled by its sender while d was away) and the ask then expired: d is owed an expired receipt", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, { askTimeout: ASK_TIMEOUT_MS }, clock)
      const ask = message("still need this?", { expectsReply: true })
      const reply = message("yes", { replyTo: ask.id })
      w.batch(w.d, [{ type: "send", to: "b", message: ask }])
      assert.deepStrictEqual(w.messagesOf(w.b1), [ask.id], "the ask was not written to b-1: the test sets up nothing")
      w.closeAbandoned(w.d)
      // Queued for d, which is away; its sender cancels it there: the ask is unanswered again (Asks.answerLost).
      w.batch(w.b1, [{ type: "send", to: "d", message: reply }])
      w.batch(w.b1, [{ type: "cancel_message", messageId: reply.id }])
      clock.now += ASK_TIMEOUT_MS + 1
      w.closeAbandoned(w.b1)
      const back = w.registerD()
      assert.deepStrictEqual(receipts(w.framesOf(back)), [`expired ${ask.id}`])
    }))
})

describe("an ask whose edge closed early, given back unconfirmed before its deadline", () => {
  it.effect("answered: no receipt, and b's return (the same instance, or a new one) is not asked it again", () =>
    Effect.gen(function*() {
      const { ask, w } = yield* askClosedThenDropped("reply", ASK_TIMEOUT_MS / 2)
      assert.deepStrictEqual(receipts(w.framesOf(w.d)), [])
      const back = w.registerB("b-1")
      assert.deepStrictEqual(w.messagesOf(back), [])
      const other = w.registerB("b-2")
      assert.deepStrictEqual(w.messagesOf(other), [])
      w.batch(w.d, [{ type: "send", to: "b", message: ask }])
      assert.deepStrictEqual(w.answersOf(ask.id), ["delivered", "delivered"])
    }))
})
