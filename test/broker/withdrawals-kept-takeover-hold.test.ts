/**
 * A withdrawal outlives its route while a takeover's custody hold may still
 * bring the withdrawn message to its holder (MayStillWait.ts's `mayStillWait`,
 * `CustodyHolds.mayGiveBack`; review revay AY3, the one clause the other
 * withdrawals-kept tests leave unexercised). b-1 was written m1 and never
 * confirmed it (its custody); b-2 takes the session over, its hold waiting
 * for b-1's close; d supersedes m1 with m3 (a supersede never waits for the
 * hold: m3 goes at once, kept with the hold). The route ages out before
 * b-1 closes and gives m1 back: b-2 gets m3, never m1. Fails with that
 * clause replaced by `false`. Hand-driven Router (controlWorld).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, drainedSeen, messagesAndControls } from "../support/controlWorld.ts"

const HOUR = 3_600_000

/** What `peer` is written, its own parked output offered one by one. */
describe("a withdrawal outlives its route while a takeover's custody hold may give the message back (review revay AY3)", () => {
  it.effect("m1, in b-1's custody when d supersedes it after b-2's takeover, never reaches b-2 after the route aged", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, { mailboxRetention: 24 * HOUR }, clock)
      const m1 = message("m1")
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      assert.include(messagesAndControls(w.framesOf(w.b1)), `message ${m1.id}`, "m1 was not written to b-1: the test sets up nothing")
      const b2 = w.registerB("b-2")
      assert.isAbove(b2.custodyHolds, 0, "b-2 holds no custody hold for b-1's close: the test sets up nothing")
      const m3 = { ...message("m3"), supersedes: m1.id }
      w.batch(w.d, [{ type: "send", to: "b", message: m3 }])
      clock.now += HOUR + 1_000
      w.router.prune(clock.now)
      w.closeAbandoned(w.b1)
      for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
        // m3, parked at d's reader behind the hold, is offered
      }
      const seen = drainedSeen(w, b2)
      assert.include(seen, `message ${m3.id}`, `m3 did not reach b-2: the test checks nothing (${seen})`)
      assert.notInclude(seen, `message ${m1.id}`, "m1, superseded while b-1's custody held it, reached b-2")
    }))
})
