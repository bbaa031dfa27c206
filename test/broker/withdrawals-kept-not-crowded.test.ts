/**
 * Only a withdrawal made while its message may still wait unwritten or
 * unconfirmed goes on the withdrawals' list when its route ages
 * (OutboundRecords.ageRoute, MayStillWait.ts's `mayStillWait`): another sender's
 * MAX_KEPT_WITHDRAWALS ordinary cancels, each of a message its reader took
 * at once, no longer push d's withdrawal of m1 — still unwritten in b-1's
 * stuck outbox — off that list, so b-1's `unregister` hands m1 back
 * withdrawn and b-1's return gets neither m1 nor a cancel of it (review
 * revau AU2). Set-up as control-parked-route-aged.test.ts (hand-driven
 * Router, controlWorld).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_KEPT_WITHDRAWALS } from "../../src/broker/KeptWithdrawals.ts"
import { message } from "../support/broker.ts"
import { m1CancelParked, returnAfterTheHour } from "../support/controlWorld.ts"

describe("other senders' ordinary cancels do not crowd a pending withdrawal off the withdrawals' list (review revau AU2)", () => {
  it.effect("m1, cancelled on its way, never reaches b-1's return however many other messages were cancelled", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const { w, m0, m1 } = yield* m1CancelParked(clock)
      // Another sender cancels MAX_KEPT_WITHDRAWALS messages its reader took at once (written, long settled).
      const e = w.registerOther("e")
      const sink = w.registerOther("sink")
      for (let sent = 0; sent < MAX_KEPT_WITHDRAWALS; sent++) {
        const n = message(`n${sent}`)
        w.batch(e, [{ type: "send", to: "sink", message: n }])
        sink.writer.flush()
        w.batch(e, [{ type: "cancel_message", messageId: n.id }])
        e.writer.flush()
        sink.writer.flush()
      }
      // The hour passes: every route ages in one prune, each keeping its withdrawal; m1's is the oldest.
      const seen = returnAfterTheHour(w, clock)
      assert.include(seen, `message ${m0.id}`, "m0, never confirmed, did not come back: the test checks nothing")
      assert.notInclude(seen, `message ${m1.id}`, "m1, cancelled on its way, reached b-1's return")
      assert.notInclude(seen, `cancel ${m1.id}`, "b-1's return got a cancel of m1, which it never received")
    }), 120_000)
})
