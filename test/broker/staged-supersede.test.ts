/**
 * Review revd D3 (helper fixsup): a `replace`-staged message (`delivery-v1`)
 * that supersedes a delivered one is checked by the send stages again when
 * its window closes (Send.deliverStaged). Its sender may have cancelled the
 * old message meanwhile; the staged one was acknowledged `delivery_queued`
 * already, so it is delivered alone — no supersede control after the
 * cancel the receiver was sent, and the old message's record left
 * cancelled — not refused with an `expired` receipt. Nor does it name the
 * settled message in `supersedes` (review revbt bt1): with no control
 * before it, the field alone would tell a receiver that lost the cancel's
 * effect over a restart to withdraw the old message again, as superseded.
 *
 * On a Router driven by hand, with the clock in the test's hands; each
 * connection's frames are recorded as written.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DELIVERY_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { recordedSessions } from "../support/controlWorld.ts"
import { handRouter } from "../support/handRouter.ts"

const WINDOW_MS = 1_000

/** `b` (base) and `d` (`delivery-v1`) on a hand-driven Router whose replace window is WINDOW_MS. */
const world = Effect.gen(function*() {
  const clock = { now: 1_000_000 }
  const hand = yield* handRouter({ replaceWindow: WINDOW_MS }, () => clock.now)
  const { batch, router } = hand
  const { connect, framesOf } = recordedSessions(hand)
  const b = connect(1, "b", [])
  const d = connect(2, "d", [DELIVERY_V1])
  return { b, d, batch, router, clock, framesOf }
})

const replace = { delivery: "queue", queueMode: "replace", threadId: "status" }

describe("a staged message superseding one its sender cancels or supersedes before the window closes", () => {
  it.effect("is delivered alone when its window closes: no supersede control, and the old message stays cancelled", () =>
    Effect.gen(function*() {
      const w = yield* world
      const m0 = message("status: building")
      const m1 = message("status: done", { supersedes: m0.id })
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.d, [{ type: "send", to: "b", message: m1, ...replace }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      w.clock.now += WINDOW_MS
      w.router.staging.flushDue(w.clock.now)
      const toB = w.framesOf(w.b).flatMap((f) =>
        f.type === "message" ? [`message ${f.message?.id}`] : f.type === "message_control" ? [`${f.control?.action} ${f.control?.messageId}`] : []
      )
      const toD = w.framesOf(w.d).flatMap((f) =>
        f.messageId === m1.id ? [f.type] : f.receipt?.messageId === m1.id ? [`receipt ${f.receipt.status}`] : []
      )
      assert.deepStrictEqual(toD.slice(0, 1), ["delivery_queued"], "m1 was not staged: the test sets up nothing")
      assert.deepStrictEqual(toB, [`message ${m0.id}`, `cancel ${m0.id}`, `message ${m1.id}`], `its sender was told: ${toD.join(", ")}`)
      assert.notInclude(toD, "receipt expired")
      // A cancel again is answered from m0's record: still cancelled (delivered), not rewritten superseded.
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      const answers = w.framesOf(w.d).flatMap((f) =>
        (f.type === "delivered" || f.type === "delivery_failed") && f.messageId === m0.id ? [f.type] : []
      )
      assert.deepStrictEqual(answers, ["delivered", "delivered", "delivered"])
    }))
  it.effect("names no message in supersedes when delivered after its target was cancelled (review revbt bt1)", () =>
    Effect.gen(function*() {
      const w = yield* world
      const m0 = message("status: building")
      const m1 = message("status: done", { supersedes: m0.id })
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.d, [{ type: "send", to: "b", message: m1, ...replace }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      w.clock.now += WINDOW_MS
      w.router.staging.flushDue(w.clock.now)
      const delivered = w.framesOf(w.b).filter((f) => f.type === "message" && f.message?.id === m1.id)
      assert.strictEqual(delivered.length, 1, "setup: m1 delivered once")
      assert.strictEqual(delivered[0]?.message?.supersedes, undefined, "m1 still names the cancelled m0 with no control")
    }))

  it.effect("names no message in supersedes when delivered after its target was superseded by another send", () =>
    Effect.gen(function*() {
      const w = yield* world
      const m0 = message("status: building")
      const m1 = message("status: done", { supersedes: m0.id })
      const m2 = message("status: failed", { supersedes: m0.id })
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.d, [{ type: "send", to: "b", message: m1, ...replace }])
      w.batch(w.d, [{ type: "send", to: "b", message: m2 }])
      w.clock.now += WINDOW_MS
      w.router.staging.flushDue(w.clock.now)
      const toB = w.framesOf(w.b).flatMap((f) =>
        f.type === "message"
          ? [`message ${f.message?.id}${f.message?.supersedes === undefined ? "" : ` supersedes ${f.message.supersedes}`}`]
          : f.type === "message_control"
          ? [`${f.control?.action} ${f.control?.messageId}`]
          : []
      )
      assert.deepStrictEqual(toB, [
        `message ${m0.id}`,
        `supersede ${m0.id}`,
        `message ${m2.id} supersedes ${m0.id}`,
        `message ${m1.id}`
      ])
    }))
})
