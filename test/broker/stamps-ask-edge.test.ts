/**
 * An ask's edge is on its mail's scale (review revbq bq2): its `deadline` is its mail's `brokerReceivedAt` (a stamp,
 * held up while the clock reads behind the last stamp given) plus its timeout, as MailDelivery.lost → Asks.askLost and
 * StaleAsks' by-key memory rely on. So an ask the mailbox lost after the clock stepped back (its short-lived receiver
 * ended unread; its asker told `expired`) closes its edge, as it does on an unmoved clock. (Was the reviewer's probe
 * test/zz-review-revbq-askedge.test.ts.)
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { EPHEMERAL_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { custodyFeatures } from "../support/controlWorld.ts"
import { steppedWorld } from "../support/steppedClock.ts"

const START = 1_000_000

const lostAskLeavesEdges = (step: number) =>
  Effect.gen(function*() {
    const { w } = yield* steppedWorld(START, START - step, { askTimeout: "1 minute" })
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

describe("an ask's edge on the stamps' scale (revbq bq2): an ask lost by the mailbox closes its edge", () => {
  it.effect("the clock as it is: no edge left", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* lostAskLeavesEdges(0), 0)
    }))

  it.effect("after the clock stepped back: no edge left", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* lostAskLeavesEdges(5_000), 0)
    }))
})
