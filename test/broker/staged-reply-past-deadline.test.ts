/**
 * A `replace`-staged reply (`delivery-v1`) whose window closes past its
 * ask's deadline, with no send between to sweep the ask's edge: the send
 * stages check it again as it falls due (Send.deliverStaged), and Asks'
 * `replies` stage refuses it as it refuses a reply to an ask the sweep has
 * closed — its asker never gets it, and its sender is told why.
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
 * d asks b; b answers with a `replace` send staged half a window before the
 * ask's deadline, so it falls due half a window past it. `swept`: c's send
 * sweeps the edges before the window closes (the refusal as it always was).
 * What b is told of its reply, what a retry of it is answered, and what d got.
 */
const stagedPastDeadline = (swept: boolean) => Effect.gen(function*() {
  const clock = { now: 1_000_000 }
  const hand = yield* handRouter(
    { askTimeout: ASK_TIMEOUT_MS, replaceWindow: WINDOW_MS },
    () => clock.now
  )
  const { batch, router } = hand
  const { connect, framesOf } = recordedSessions(hand)
  const b = connect(1, "b", [DELIVERY_V1])
  const d = connect(2, "d", [])
  const c = connect(3, "c", [])
  const ask = message("still need this?", { expectsReply: true })
  const reply = message("yes", { replyTo: ask.id })
  batch(d, [{ type: "send", to: "b", message: ask }])
  clock.now += ASK_TIMEOUT_MS - WINDOW_MS / 2
  batch(b, [{ type: "send", to: "d", message: reply, delivery: "queue", queueMode: "replace", threadId: "answer" }])
  assert.isTrue(framesOf(b).some((frame) => frame.type === "delivery_queued"), "setup: the reply was not staged")
  clock.now += WINDOW_MS
  if (swept) batch(c, [{ type: "send", to: "c", message: message("tick") }])
  router.staging.flushDue(clock.now)
  const told = framesOf(b).flatMap((frame) =>
    frame.type === "message_receipt" && frame.receipt?.messageId === reply.id ? [[frame.receipt.status, frame.receipt.detail]] : []
  )
  batch(b, [{ type: "send", to: "d", message: reply, delivery: "queue", queueMode: "replace", threadId: "answer" }])
  const retried = framesOf(b).findLast((frame) => frame.messageId === reply.id)
  const asked = framesOf(d).flatMap((frame) => frame.type === "message" ? [frame.message?.id] : [])
  return { told, retry: [retried?.type, retried?.code, retried?.reason], asked, reply }
})

describe("a staged reply that falls due past its ask's deadline, no send having swept the edge", () => {
  it.effect("is refused: its asker never gets it, its sender gets the expired receipt a swept ask's reply gets, and a retry hears E_REPLY_TARGET", () =>
    Effect.gen(function*() {
      const { asked, reply, retry, told } = yield* stagedPastDeadline(false)
      assert.notInclude(asked, reply.id, "the reply reached its asker past the ask's deadline")
      assert.deepStrictEqual(told, [["expired", Reason.replyNoAsk]], "the reply's sender was not told it was refused as a reply to no pending ask")
      assert.deepStrictEqual(retry, ["delivery_failed", DeliveryCode.ReplyTarget, Reason.replyNoAsk])
      // The same, word for word, as when a send swept the edge before the window closed.
      const sweptFirst = yield* stagedPastDeadline(true)
      assert.deepStrictEqual([sweptFirst.told, sweptFirst.retry], [told, retry], "refused otherwise than a reply to a swept ask")
      assert.notInclude(sweptFirst.asked, reply.id)
    }))
})
