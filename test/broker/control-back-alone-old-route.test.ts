/**
 * A control given back alone (KeptControls.ts) after its message's receipt
 * route was pruned (an hour): b-1 confirms m0, d cancels it half an hour
 * later, and the cancel waits in b-1's custody unconfirmed past the route's
 * hour before b-1 drops. The control names the client instance it was
 * written to (`ControlFrame.instance`), so b-1's return still gets it; it
 * used to be kept for the instance the route named, and with the route gone
 * it was dropped (review revm M1).
 *
 * On a Router driven by hand (controlWorld).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"

const MINUTE = 60_000

describe("a control given back alone after its message's route was pruned", () => {
  it.effect("b-1's return still gets the cancel", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, {}, clock)
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.b1, [{ type: "received", frames: w.b1.framesWritten }])
      assert.strictEqual(w.b1.custody?.size, 0, "b-1 did not confirm m0: the test sets up nothing")
      clock.now += 30 * MINUTE
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(w.b1), [`cancel ${m0.id}`], "b-1 was not written the control")
      assert.ok((w.b1.custody?.size ?? 0) > 0, "the control is not in b-1's custody")
      // The control waits unconfirmed past the route's hour; the clean-ups every send runs prune it.
      clock.now += 60 * MINUTE
      w.router.prune(clock.now)
      w.closeAbandoned(w.b1)
      const back = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(back)), [`cancel ${m0.id}`])
    }))
})
