/**
 * A withdrawal outlives its route (the withdrawals' list) when the very
 * message it withdraws still waits for its receiver, wherever that is
 * (MayStillWait.ts's `mayStillWait`, review revaw AW1) — here the places no other
 * test puts it: parked at its sender's reader behind the receiver's full
 * outbox, and written to a `received-v1` client that never confirmed it
 * (its custody). In both, the route ages out (its hour, the replay record
 * with it) before the receiver's connection gives the message back, and the
 * session's next client instance never gets it: it was cancelled on its way.
 * Hand-driven Router (controlWorld).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { recordKeyOf } from "../../src/broker/DeliveryRecords.ts"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, drainedSeen, m1StuckBehindM0 } from "../support/controlWorld.ts"

const HOUR = 3_600_000

/** What `peer` is written, its own parked output offered one by one. */
describe("a withdrawal outlives its route while the withdrawn message waits (review revaw AW1)", () => {
  it.effect("parked at its sender's reader: b's next instance never gets m2, cancelled while parked", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, { mailboxRetention: 24 * HOUR, outboxCapacity: 1 }, clock)
      w.stick()
      const { m0 } = m1StuckBehindM0(w)
      const m2 = message("m2")
      w.batch(w.d, [{ type: "send", to: "b", message: m2 }])
      const parked = w.d.parked.some(([, item]) => typeof item === "object" && "mail" in item && item.mail.message.id === m2.id)
      assert.isTrue(parked, "m2 is not parked at d's reader: the test sets up nothing")
      w.batch(w.d, [{ type: "cancel_message", messageId: m2.id }])
      clock.now += HOUR + 1_000
      w.router.prune(clock.now)
      w.batch(w.b1, [{ type: "unregister" }])
      for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
        // each step offers one parked item
      }
      w.closeAbandoned(w.b1)
      const seen = drainedSeen(w, w.registerB("b-2"))
      assert.include(seen, `message ${m0.id}`, "m0, never confirmed, did not come back: the test checks nothing")
      assert.notInclude(seen, `message ${m2.id}`, "m2, cancelled while parked at d's reader, reached b's next instance")
    }))

  it.effect("written, never confirmed (custody): b's next instance never gets m1, cancelled after its write", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, { mailboxRetention: 24 * HOUR }, clock)
      const m1 = message("m1")
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      assert.deepStrictEqual(w.messagesOf(w.b1), [m1.id], "m1 was not written to b-1: the test sets up nothing")
      const key = recordKeyOf(w.d.session?.key ?? "", m1.id)
      assert.isTrue(w.b1.custody?.holdsMessage(key) === true, "m1 is not in b-1's custody: the test sets up nothing")
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      assert.deepStrictEqual(w.controlsOf(w.b1), [`cancel ${m1.id}`], "b-1 was not sent the cancel: the test is confused")
      clock.now += HOUR + 1_000
      w.router.prune(clock.now)
      w.closeAbandoned(w.b1)
      const seen = drainedSeen(w, w.registerB("b-2"))
      assert.notInclude(seen, `message ${m1.id}`, "m1, cancelled while unconfirmed, reached b's next instance")
    }))
})
