/**
 * A withdrawal that follows the replay record (its route gone: a durable
 * restart, or here MAX_ROUTES newer routes; Receipts.recordedRoute) and is
 * kept at once (OutboundRecords.keepWithdrawal) is charged to the share of
 * the session the record leads to — its receiver — not to its sender's
 * (Receipts passes `live.receiver.key`; review revbh BH3). d's m1 to b is
 * stuck unwritten in b-1's outbox and d's 4,096 messages to a
 * never-confirming `a` wait in a's custody; all their routes are pushed
 * out, then d cancels m1 and the 4,096: the list fills, and its drop takes
 * the oldest of a, the receiver holding the most, so b-1's return gets m0
 * and never m1. Charged to d, all 4,097 would be d's share and its oldest,
 * m1's, would go (seen: this test fails with Receipts' cancel path passing
 * `session.key` for `live.receiver.key`). Hand-driven Router, controlWorld.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { recordKeyOf } from "../../src/broker/DeliveryRecords.ts"
import { MAX_KEPT_WITHDRAWALS } from "../../src/broker/KeptWithdrawals.ts"
import { message } from "../support/broker.ts"
import {
  b1LeavesAndReturns,
  custodyFeatures,
  m1StuckWorld,
  parkedControl,
  pushOutRoutes
} from "../support/controlWorld.ts"

const HOUR = 3_600_000

describe("a withdrawal kept with no route is charged to its receiver's share (review revbh BH3)", () => {
  it.effect("m1, cancelled by d along its replay record, never reaches b-1's return though d's cancels to a never-confirming a fill the list", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const { w, m0, m1 } = yield* m1StuckWorld(clock)
      // a confirms nothing it is written: every message to it stays in its custody, so each cancel is kept.
      const a = w.registerOther("a", {}, false, { features: custodyFeatures, instanceId: "a-1" })
      const flood: Array<string> = []
      for (let sent = 0; sent < MAX_KEPT_WITHDRAWALS; sent++) {
        const n = message(`n${sent}`)
        flood.push(n.id)
        w.batch(w.d, [{ type: "send", to: "a", message: n }])
        w.d.writer.flush()
        a.writer.flush()
      }
      assert.isTrue(a.custody?.holdsMessage(recordKeyOf(w.d.session?.key ?? "", flood[0]!)) === true, "n0 is not in a's custody: the test sets up nothing")
      // Every route so far pushed out by MAX_ROUTES newer ones; the replay records stay.
      clock.now += 60_000
      pushOutRoutes(w, "r")
      // The cancels follow the records to b-1 and a (same instances, live): each kept on the list at once.
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      assert.isTrue(parkedControl(w.d, w.b1), "the cancel is not parked at d's reader: the test sets up nothing")
      for (const id of flood) {
        w.batch(w.d, [{ type: "cancel_message", messageId: id }])
        w.d.writer.flush()
        a.writer.flush()
      }
      assert.include(w.controlsOf(a), `cancel ${flood[flood.length - 1]}`, "a was not sent the cancels: the test is confused")
      // The hour passes (the replay records age; the withdrawals stay a day), and b-1 leaves and comes back.
      clock.now += HOUR
      w.router.prune(clock.now)
      const seen = b1LeavesAndReturns(w)
      assert.deepStrictEqual(w.answersOf(m1.id), ["delivered", "delivered"], "m1's cancel did not follow its record: the test sets up nothing")
      assert.include(seen, `message ${m0.id}`, "m0, never confirmed, did not come back: the test checks nothing")
      assert.notInclude(seen, `message ${m1.id}`, "m1, cancelled on its way, reached b-1's return")
      assert.notInclude(seen, `cancel ${m1.id}`, "b-1's return got a cancel of m1, which it never received")
    }), 180_000)
})
