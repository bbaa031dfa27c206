/**
 * A cancel made after MAX_ROUTES newer routes pushed its message's route out
 * follows the replay record (Receipts.recordedRoute) and is answered
 * `delivered`; its withdrawal is now kept with that record and on the
 * withdrawals' list (OutboundRecords.keepWithdrawal: the message still waits
 * unwritten in b-1's outbox), so when the replay record ages before the
 * message is handed back, the give-back still finds it withdrawn: b-1's
 * return gets m0, never m1 and never a cancel of m1 (review revau AU1; before
 * the fix it got cancel m1, m0, m1).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { b1LeavesAndReturns, m1StuckWorld, parkedControl, pushOutRoutes } from "../support/controlWorld.ts"

const HOUR = 3_600_000

describe("a cancel that follows the replay record (route pushed out first): its withdrawal is kept (review revau AU1)", () => {
  it.effect("m1, cancelled and answered delivered, never reaches b-1's return after its record ages", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const { w, m0, m1 } = yield* m1StuckWorld(clock)
      // m1's route pushed out by MAX_ROUTES newer routes; its replay record stays (the records' bound is larger).
      clock.now += 60_000
      pushOutRoutes(w, "n")
      // The cancel now follows the record to b-1 (same instance, live): answered delivered, its control parked.
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      assert.isTrue(parkedControl(w.d, w.b1), "the cancel is not parked at d's reader: the test sets up nothing")
      // m1's replay record ages (its hour from the send); m1 still waits unwritten in b-1's outbox.
      clock.now += HOUR
      w.router.prune(clock.now)
      const seen = b1LeavesAndReturns(w)
      assert.deepStrictEqual(w.answersOf(m1.id), ["delivered", "delivered"], "the send and its cancel were not both answered delivered: the test sets up nothing")
      assert.include(seen, `message ${m0.id}`, "m0, never confirmed, did not come back: the test checks nothing")
      assert.notInclude(seen, `message ${m1.id}`, "m1, whose cancel its sender was answered delivered for, reached b-1's return")
      assert.notInclude(seen, `cancel ${m1.id}`, "b-1's return got a cancel of m1, which it never received (on main: before m1)")
    }), 180_000)
})
