/**
 * A mailbox cancel that deleted its mail outright — given back unwritten to
 * the mailbox (its route kept), read by no client — leaves nothing to give
 * back, so its withdrawal is not kept past the route (review revaw AW2):
 * MAX_KEPT_WITHDRAWALS such cancels by another sender no longer fill the
 * withdrawals' list and push d's withdrawal of m1 — still unwritten in b-1's
 * stuck outbox — off it. b-1's `unregister` hands m1 back withdrawn, and
 * b-1's return gets neither m1 nor a cancel of it. Set-up as
 * withdrawals-kept-not-crowded.test.ts (hand-driven Router, controlWorld).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_KEPT_WITHDRAWALS } from "../../src/broker/KeptWithdrawals.ts"
import { message } from "../support/broker.ts"
import { m1CancelParked, returnAfterTheHour } from "../support/controlWorld.ts"

describe("mailbox cancels that deleted their mail do not crowd a pending withdrawal off the withdrawals' list (review revaw AW2)", () => {
  it.effect("m1, cancelled on its way, never reaches b-1's return after another sender's many mailbox cancels of mail given back unread", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const { w, m0, m1 } = yield* m1CancelParked(clock)
      const e = w.registerOther("e")
      for (let sent = 0; sent < MAX_KEPT_WITHDRAWALS; sent++) {
        const n = message(`n${sent}`)
        // Routed to sink's stuck write, its socket taking none of it: the close gives it back to the mailbox
        // unread, its route kept.
        const sink = w.registerOther("sink", {}, true)
        w.batch(e, [{ type: "send", to: "sink", message: n }])
        sink.writer.flush()
        if (sent === 0) assert.isDefined(sink.writer.inFlight, "n is not in sink's write: the test sets up nothing")
        w.closeAbandoned(sink)
        w.batch(e, [{ type: "cancel_message", messageId: n.id }])
        if (sent === 0) {
          const answers = w.framesOf(e).filter((frame) => frame.messageId === n.id).map((frame) => frame.type)
          assert.deepStrictEqual(answers, ["delivered", "delivered"], "e's cancel did not take n out of the mailbox")
        }
        e.writer.flush()
      }
      // The hour passes: every route ages in one prune; m1's withdrawal is the oldest kept.
      const seen = returnAfterTheHour(w, clock)
      assert.include(seen, `message ${m0.id}`, "m0, never confirmed, did not come back: the test checks nothing")
      assert.notInclude(seen, `message ${m1.id}`, "m1, cancelled on its way, reached b-1's return")
      assert.notInclude(seen, `cancel ${m1.id}`, "b-1's return got a cancel of m1, which it never received")
    }), 120_000)
})
