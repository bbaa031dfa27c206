/**
 * A receiver that never confirms fills only its own share of the
 * withdrawals' list (OutboundRecords.linkKept, KeptShares.ts; review
 * revay): `a`, a `received-v1` client that confirms nothing, makes every
 * cancel of a message to it a withdrawal kept past its route, and sender
 * `s1` cancels MAX_KEPT_WITHDRAWALS + 1 of them. d's one withdrawal of m1,
 * still unwritten in b-1's stuck outbox, is kept all the same: b-1's
 * `unregister` hands m1 back withdrawn, and b-1's return gets neither m1 nor
 * a cancel of it. With one bound for all, a's withdrawals pushed d's off the
 * list and m1 came back live. Set-up as withdrawals-kept-not-crowded.test.ts
 * (hand-driven Router, controlWorld).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { recordKeyOf } from "../../src/broker/DeliveryRecords.ts"
import { MAX_KEPT_WITHDRAWALS } from "../../src/broker/KeptWithdrawals.ts"
import { message } from "../support/broker.ts"
import { custodyFeatures, m1CancelParked, returnAfterTheHour } from "../support/controlWorld.ts"

describe("one receiver's kept withdrawals do not push another's off the withdrawals' list (review revay)", () => {
  it.effect("m1, cancelled on its way to b, never reaches b-1's return however many messages to a never-confirming a were cancelled", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const { w, m0, m1 } = yield* m1CancelParked(clock)
      // a confirms nothing it is written: every message to it stays in its custody, so each cancel is kept.
      const a = w.registerOther("a", {}, false, { features: custodyFeatures, instanceId: "a-1" })
      const s1 = w.registerOther("s1")
      let last = ""
      for (let sent = 0; sent <= MAX_KEPT_WITHDRAWALS; sent++) {
        const n = message(`n${sent}`)
        last = n.id
        w.batch(s1, [{ type: "send", to: "a", message: n }])
        a.writer.flush()
        if (sent === 0) {
          const key = recordKeyOf(s1.session?.key ?? "", n.id)
          assert.isTrue(a.custody?.holdsMessage(key) === true, "n0 is not in a's custody: the test sets up nothing")
        }
        w.batch(s1, [{ type: "cancel_message", messageId: n.id }])
        s1.writer.flush()
        a.writer.flush()
      }
      assert.include(w.controlsOf(a), `cancel ${last}`, "a was not sent the cancels: the test is confused")
      // The hour passes: every route ages in one prune, each keeping its withdrawal; m1's is the oldest.
      const seen = returnAfterTheHour(w, clock)
      assert.include(seen, `message ${m0.id}`, "m0, never confirmed, did not come back: the test checks nothing")
      assert.notInclude(seen, `message ${m1.id}`, "m1, cancelled on its way, reached b-1's return")
      assert.notInclude(seen, `cancel ${m1.id}`, "b-1's return got a cancel of m1, which it never received")
    }), 120_000)
})
