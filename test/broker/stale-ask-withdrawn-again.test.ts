/**
 * An answered ask its asker withdrew before its deadline keeps that
 * withdrawal's time when it is withdrawn again after the deadline (a second
 * cancel, counted while the broker still knows the ask was answered), so its
 * copy given back unconfirmed past the deadline — with no answered mark on
 * it: the ask deeper than ANSWERED_SCAN in the replier's custody — goes
 * silently (review revs S3: the second cancel moved the time out of the
 * ask's life and the copy was reported `expired`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, type Seen } from "../support/controlWorld.ts"

const ASK_TIMEOUT_MS = 60_000

const receipts = (frames: ReadonlyArray<Seen>) =>
  frames.flatMap((frame) => frame.type === "message_receipt" ? [`${frame.receipt?.status} ${frame.receipt?.messageId}`] : [])

const scenario = (secondCancel: boolean, firstCancel = true) =>
  Effect.gen(function*() {
    const clock = { now: 1_000_000 }
    const w = yield* world(custodyFeatures, { askTimeout: ASK_TIMEOUT_MS }, clock)
    // 64 messages ahead of the ask in b-1's custody: the reply's scan does not reach the ask (no answered mark).
    const ahead = Array.from({ length: 64 }, (_, i) => message(`fyi ${i}`))
    w.batch(w.d, ahead.map((m) => ({ type: "send", to: "b", message: m })))
    const ask = message("still need this?", { expectsReply: true })
    w.batch(w.d, [{ type: "send", to: "b", message: ask }])
    assert.strictEqual(w.messagesOf(w.b1).length, 65, "b-1 was not written the ask: the test sets up nothing")
    w.batch(w.b1, [{ type: "send", to: "d", message: message("yes", { replyTo: ask.id }) }])
    // d withdraws the answered ask before its deadline ...
    if (firstCancel) w.batch(w.d, [{ type: "cancel_ask", messageId: ask.id }])
    clock.now += ASK_TIMEOUT_MS + 1
    // ... and, past it, cancels it again (a cancel after a timeout, or `cancel_message` on it).
    if (secondCancel) w.batch(w.d, [{ type: "cancel_ask", messageId: ask.id }])
    w.closeAbandoned(w.b1)
    return receipts(w.framesOf(w.d)).filter((r) => r.endsWith(ask.id))
  })

describe("S3: a second withdrawal of an answered ask moves its time past the deadline", () => {
  it.effect("setup: no cancel at all, the copy given back past the deadline is reported expired (no answered mark on it)", () =>
    Effect.gen(function*() {
      const got = yield* scenario(false, false)
      assert.strictEqual(got.length, 1)
      assert.match(got[0] ?? "", /^expired /)
    }))
  it.effect("one cancel_ask before the deadline: the copy given back past it goes silently (the behaviour S3 compares with)", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* scenario(false), [])
    }))
  it.effect("a second cancel_ask after the deadline: the copy given back still goes silently (withdrawn in time)", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* scenario(true), [])
    }))
})
