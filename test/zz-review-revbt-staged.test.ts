import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DELIVERY_V1 } from "../src/protocol/features.ts"
import { message } from "./support/broker.ts"
import { recordedSessions } from "./support/controlWorld.ts"
import { handRouter } from "./support/handRouter.ts"

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

/**
 * Review revbt bt1, broker side: a replace-staged message whose `supersedes` target its sender cancelled while it
 * waited goes with no control (Receipts.ts beforeDelivery, settled) but still names the cancelled message, which a
 * receiver since supkeep (Inbound.ts supersededBy) takes for a dropped control and withdraws again as superseded.
 */
describe("review revbt", () => {
  it.effect("bt1: a staged message delivered with no control after its target was cancelled does not name it", () =>
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
})
