/**
 * Review revbh BH3 probe: the share a kept withdrawal is charged to is its
 * RECEIVER's, not its sender's. The merge's own integration test
 * (test/broker/withdrawals-kept-share.test.ts) cannot tell the two apart: one
 * sender (s1) floods and another (d) cancels m1, so with
 * OutboundRecords.ageRoute charging `record.senderKey` it still passes. Here d
 * itself cancels m1 (to b, stuck) and then cancels more than a share of
 * messages to a never-confirming `a`: charged to d, m1's withdrawal is d's
 * oldest and is dropped, and m1 reaches b-1's return live. Passes on main;
 * FAILS with ageRoute's `record.receiverKey` swapped for `record.senderKey`
 * (seen). It does not reach Receipts' no-route keys (`live.receiver.key`,
 * `target.key`): those need a restored record (durable restart).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { recordKeyOf } from "../src/broker/DeliveryRecords.ts"
import { MAX_KEPT_WITHDRAWALS_PER_RECEIVER } from "../src/broker/OutboundRecords.ts"
import { message } from "./support/broker.ts"
import { controlWorld as world, custodyFeatures, m1StuckBehindM0, parkedControl, returnAfterTheHour } from "./support/controlWorld.ts"

const HOUR = 3_600_000

describe("review revbh BH3: a kept withdrawal is charged to its receiver's share", () => {
  it.effect("m1, cancelled by d on its way to b, never reaches b-1's return though d then cancels more than a share of messages to a", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, { mailboxRetention: 24 * HOUR, outboxCapacity: 1 }, clock)
      w.stick()
      const { m0, m1 } = m1StuckBehindM0(w)
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      assert.isTrue(parkedControl(w.d, w.b1), "the cancel is not parked at d's reader: the test sets up nothing")
      const a = w.registerOther("a", {}, false, { features: custodyFeatures, instanceId: "a-1" })
      for (let sent = 0; sent <= MAX_KEPT_WITHDRAWALS_PER_RECEIVER; sent++) {
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
