/**
 * Each kept control ages on its own (KeptControls.ts): another instance's
 * registration leaves b-1's kept control in place (takeFor), and a control
 * kept later for b-2 does not renew it, so b-1's return past its control's
 * retention gets nothing (review revr R1: the session's list used to age
 * from the last control kept).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"

const RETENTION_MS = 3_600_000

describe("a control kept for b-1 is not renewed by one kept for b-2", () => {
  it.effect("b-1's return past its control's retention gets nothing; b-2's, within its own, gets its control", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, { mailboxRetention: RETENTION_MS }, clock)
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.b1, [{ type: "received", frames: w.b1.framesWritten }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(w.b1), [`cancel ${m0.id}`], "setup: b-1 was not written the control")
      w.closeAbandoned(w.b1)
      // Kept for b-1 at t0. b-2 registers (leaves it), reads m1, confirms it.
      const b2 = w.registerB("b-2")
      const m1 = message("m1")
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      w.batch(b2, [{ type: "received", frames: b2.framesWritten }])
      assert.strictEqual(b2.custody?.size, 0, "setup: b-2 did not confirm m1")
      clock.now += RETENTION_MS - 10
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      assert.deepStrictEqual(w.controlsOf(b2), [`cancel ${m1.id}`], "setup: b-2 was not written the control")
      w.closeAbandoned(b2)
      // Past b-1's control's retention (kept at t0), within b-2's.
      clock.now += 20
      w.router.prune(clock.now)
      const back = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(back)), [], "b-1's control outlived the mailbox's retention")
      // b-2's control, kept in the same list and younger, stays for its return.
      w.closeAbandoned(back)
      const b2Again = w.registerB("b-2")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(b2Again)), [`cancel ${m1.id}`], "b-2's control went with b-1's")
    }))
})
