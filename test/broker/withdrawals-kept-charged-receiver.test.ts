/**
 * A kept withdrawal is charged to its RECEIVER's share of the withdrawals'
 * list, not its sender's (OutboundRecords.ageRoute, KeptShares.ts; review
 * revbh BH3). d cancels m1 (to b, stuck unwritten in b-1's outbox), then
 * cancels MAX_KEPT_WITHDRAWALS messages to a never-confirming `a`, which
 * fills the list: each drop takes the oldest of the receiver holding the
 * most — a's own — so m1's withdrawal stays and m1 never reaches b-1's
 * return. Charged to the sender, m1's withdrawal would be the oldest of d's
 * share, the largest, and m1 would come back live (seen: this test fails
 * with ageRoute's `record.receiverKey` swapped for `record.senderKey`).
 * (withdrawals-kept-share.test.ts cannot tell the two apart: its flood has
 * another sender.) Hand-driven Router, controlWorld.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { recordKeyOf } from "../../src/broker/DeliveryRecords.ts"
import { MAX_KEPT_WITHDRAWALS } from "../../src/broker/KeptWithdrawals.ts"
import { message } from "../support/broker.ts"
import { custodyFeatures, m1CancelParked, returnAfterTheHour } from "../support/controlWorld.ts"

describe("a kept withdrawal is charged to its receiver's share of the withdrawals' list (review revbh BH3)", () => {
  it.effect("m1, cancelled by d on its way to b, never reaches b-1's return though d then cancels enough messages to a never-confirming a to fill the list", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const { w, m0, m1 } = yield* m1CancelParked(clock)
      const a = w.registerOther("a", {}, false, { features: custodyFeatures, instanceId: "a-1" })
      for (let sent = 0; sent < MAX_KEPT_WITHDRAWALS; sent++) {
        const n = message(`n${sent}`)
        w.batch(w.d, [{ type: "send", to: "a", message: n }])
        a.writer.flush()
        if (sent === 0) {
          const key = recordKeyOf(w.d.session?.key ?? "", n.id)
          assert.isTrue(a.custody?.holdsMessage(key) === true, "n0 is not in a's custody: the test sets up nothing")
        }
        w.batch(w.d, [{ type: "cancel_message", messageId: n.id }])
        w.d.writer.flush()
        a.writer.flush()
      }
      const seen = returnAfterTheHour(w, clock)
      assert.include(seen, `message ${m0.id}`, "m0, never confirmed, did not come back: the test checks nothing")
      assert.notInclude(seen, `message ${m1.id}`, "m1, cancelled on its way, reached b-1's return")
    }), 120_000)
})
