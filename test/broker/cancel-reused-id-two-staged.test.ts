/**
 * Under a reused id, two messages staged in `replace` mode for two recipients at once: a cancel names the sender's
 * newest under the id (Cancels.ts; stop 71), so it withdraws the one staged last, not the first one the staging area
 * walks to (ReplaceStaging.withdraw takes the newest by acceptance order, `acceptedLater`; task stgnew limit 1). The
 * replay bound (`replayRecords: 1`) and a send between make the second send under m0 a new message, not a reuse
 * refused. On a Router driven by hand, the clock in the test's hands; no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DELIVERY_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { recordedSessions } from "../support/controlWorld.ts"
import { handRouter } from "../support/handRouter.ts"

const START = 1_000_000
const WINDOW_MS = 1_000
const replace = { delivery: "queue", queueMode: "replace", threadId: "t" }

describe("a cancel under a reused id with two messages staged for two recipients", () => {
  it.effect("withdraws the one staged last (for z), and the older one (for b) is handed over", () =>
    Effect.gen(function*() {
      const clock = { now: START }
      const hand = yield* handRouter({ replaceWindow: WINDOW_MS, replayRecords: 1 }, () => clock.now)
      const { connect, framesOf } = recordedSessions(hand)
      const b = connect(1, "b", [])
      const z = connect(2, "z", [])
      const d = connect(3, "d", [DELIVERY_V1])
      const m0 = message("m0")
      hand.batch(d, [{ type: "send", to: "b", message: { ...m0, content: { text: "for b" } }, ...replace }])
      hand.batch(d, [{ type: "send", to: "z", message: message("other") }])
      clock.now += 1
      hand.batch(d, [{ type: "send", to: "z", message: { ...m0, content: { text: "for z" } }, ...replace }])
      const staged = framesOf(d).filter((f) => f.messageId === m0.id).map((f) => f.type)
      assert.deepStrictEqual(staged, ["delivery_queued", "delivery_queued"], "setup: both sends under m0 were not staged")
      const from = framesOf(d).length
      hand.batch(d, [{ type: "cancel_message", messageId: m0.id }])
      const answer = framesOf(d).slice(from).filter((f) => f.messageId === m0.id).map((f) => f.type)
      assert.deepStrictEqual(answer, ["delivered"], "the cancel was not answered delivered")
      clock.now += WINDOW_MS
      hand.router.staging.flushDue(clock.now)
      const under = (peer: typeof b) => framesOf(peer).filter((f) => f.type === "message" && f.message?.id === m0.id).length
      assert.deepStrictEqual({ b: under(b), z: under(z) }, { b: 1, z: 0 }, "the cancel withdrew the older staged message (for b), not the newest")
    }))
})
