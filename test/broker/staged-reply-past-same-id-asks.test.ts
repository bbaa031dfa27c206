/**
 * Two sessions ask b with the same message id (ids are their senders': both
 * asks are legal), and b's `replace`-staged reply to the first falls due
 * past both asks' deadlines, with no send between to sweep their edges.
 * Send.deliverStaged sweeps first, as a send does (Send.prune), so the
 * reply is refused as a reply to no pending ask (Reason.replyNoAsk) — not
 * as one to the wrong ask, over the other asker's expired edge (review
 * revab AB2).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import { DELIVERY_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { recordedSessions } from "../support/controlWorld.ts"
import { handRouter } from "../support/handRouter.ts"

const ASK_TIMEOUT_MS = 60_000
const WINDOW_MS = 1_000

/**
 * x and y ask b with one id; b's reply to x, staged within x's deadline,
 * falls due past both. `swept`: c's send sweeps the edges before the window
 * closes. What b is told of its reply, what a retry is answered, what x got.
 */
const replyPastSameIdAsks = (swept: boolean) =>
  Effect.gen(function*() {
    const clock = { now: 1_000_000 }
    const hand = yield* handRouter(
      { askTimeout: ASK_TIMEOUT_MS, replaceWindow: WINDOW_MS },
      () => clock.now
    )
    const { batch, router } = hand
    const { connect, framesOf } = recordedSessions(hand)
    const b = connect(1, "b", [DELIVERY_V1])
    const x = connect(2, "x", [])
    const y = connect(3, "y", [])
    const c = connect(4, "c", [])
    const ask = message("still need this?", { expectsReply: true })
    batch(x, [{ type: "send", to: "b", message: ask }])
    clock.now += 1
    batch(y, [{ type: "send", to: "b", message: ask }])
    assert.strictEqual(router.stats().asks, 2, "setup: both asks are not open")
    clock.now += ASK_TIMEOUT_MS - WINDOW_MS / 2 - 1
    const reply = message("yes", { replyTo: ask.id })
    const send = { type: "send", to: "x", message: reply, delivery: "queue", queueMode: "replace", threadId: "answer" }
    batch(b, [send])
    assert.isTrue(framesOf(b).some((frame) => frame.type === "delivery_queued"), "setup: the reply was not staged")
    clock.now += WINDOW_MS
    if (swept) batch(c, [{ type: "send", to: "c", message: message("tick") }])
    router.staging.flushDue(clock.now)
    const told = framesOf(b).flatMap((frame) =>
      frame.type === "message_receipt" && frame.receipt?.messageId === reply.id ? [[frame.receipt.status, frame.receipt.detail]] : []
    )
    batch(b, [send])
    const retried = framesOf(b).findLast((frame) => frame.messageId === reply.id)
    const got = framesOf(x).flatMap((frame) => frame.type === "message" ? [frame.message?.id] : [])
    return { told, retry: [retried?.type, retried?.code, retried?.reason], gotReply: got.includes(reply.id) }
  })

describe("a staged reply falling due past its ask's and a same-id ask's deadlines, unswept", () => {
  it.effect("is refused as a reply to no pending ask, as when a send swept the edges first", () =>
    Effect.gen(function*() {
      const unswept = yield* replyPastSameIdAsks(false)
      assert.isFalse(unswept.gotReply, "the reply reached its asker past the ask's deadline")
      assert.deepStrictEqual(unswept.told, [["expired", Reason.replyNoAsk]], "not refused as a reply to no pending ask")
      assert.deepStrictEqual(unswept.retry, ["delivery_failed", DeliveryCode.ReplyTarget, Reason.replyNoAsk])
      const sweptFirst = yield* replyPastSameIdAsks(true)
      assert.deepStrictEqual([sweptFirst.told, sweptFirst.retry, sweptFirst.gotReply], [unswept.told, unswept.retry, false])
    }))
})
