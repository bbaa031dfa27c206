/**
 * Review revbq (probe, bq2): the merge `stamps` gives an ask's mail `brokerReceivedAt` = the stamp (held up after the
 * clock stepped back) while its edge still opens with `deadline: attempt.now + askTimeoutMs` (Asks.ts, `asks.delivered`).
 * The broker relies on "every edge's deadline is its ask's receipt plus its timeout" (MailDelivery.lost →
 * Asks.askLost matches the edge by `mail.brokerReceivedAt + askTimeoutMs`; StaleAsks.silencedByKey likewise): after a
 * step back they differ, so an ask the mailbox lost (its short-lived receiver ended unread; its asker told `expired`)
 * keeps its edge open until its deadline.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { EPHEMERAL_V1 } from "../src/protocol/features.ts"
import { message } from "./support/broker.ts"
import { controlWorld as world, custodyFeatures } from "./support/controlWorld.ts"

const START = 1_000_000

const lostAskLeavesEdges = (step: number) =>
  Effect.gen(function*() {
    const clock = { now: START }
    const w = yield* world(custodyFeatures, { askTimeout: "1 minute" }, clock)
    w.batch(w.d, [{ type: "send", to: "b", message: message("m0") }])
    clock.now = START - step
    w.closeAbandoned(w.b1)
    const b2 = w.registerB("b-2", [...custodyFeatures, EPHEMERAL_V1], { ephemeral: true })
    const q = message("q", { expectsReply: true })
    w.batch(w.d, [{ type: "send", to: "b", message: q }])
    assert.include(w.messagesOf(b2), q.id, "setup: q written to b-2")
    assert.strictEqual(w.router.stats().asks, 1, "setup: q's edge open")
    w.batch(b2, [{ type: "unregister" }])
    const receipts = w.framesOf(w.d).filter((frame) => frame.type === "message_receipt" && frame.receipt?.messageId === q.id)
    assert.deepStrictEqual(receipts.map((frame) => frame.receipt?.status), ["expired"], "setup: d told q was lost")
    return w.router.stats().asks
  })

describe("revbq bq2: an ask lost by the mailbox closes its edge", () => {
  it.effect("the clock as it is: no edge left", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* lostAskLeavesEdges(0), 0)
    }))

  it.effect("after the clock stepped back: no edge left", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* lostAskLeavesEdges(5_000), 0)
    }))
})
