/**
 * A cancel parked at its sender's reader (the receiver's outbox full) for a
 * message its receiver READ AND CONFIRMED is forced out when that SENDER's
 * connection closes (OutputEnd.forceParked) after the receiver's connection
 * closed: it is kept for the client instance it was written to (KeptControls),
 * as a parked control the drainer offers to that closed connection is
 * (Output.refused, control-parked-refused-kept.test.ts). b-1's return gets it
 * — whether the session was away at the sender's close or held by another
 * instance, b-2 (which must not get it). Before the fix, forceParked gave it
 * to `undeliverable`, which dropped it: b-1 read m1 and was never told of
 * its cancel. The third case is a guarantee that held before the fix too: a
 * cancel of a message b-1 was never written (still in its outbox at its
 * close) leaves d's parked list with that message at b-1's close
 * (MailReturns' `dropParkedControls`), so d's close forces nothing, and
 * b-1's return gets neither the message nor its cancel.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { confirmedThenCancelParked, controlWorld as world, custodyFeatures, m1StuckBehindM0, parkedControl } from "../support/controlWorld.ts"

const HOUR = 3_600_000

/** b-1 confirmed m1; d's cancel of it parked at d's reader; b-1 closed, then d closed (its parked output forced). */
const scenario = (otherInstanceMeanwhile: boolean) =>
  Effect.gen(function*() {
    const { m1, w } = yield* confirmedThenCancelParked(HOUR)
    w.closeAbandoned(w.b1)
    const other = otherInstanceMeanwhile ? w.registerB("b-2") : undefined
    w.closeAbandoned(w.d)
    assert.isFalse(parkedControl(w.d, w.b1), "the cancel is still parked after d's close: the test checks nothing")
    if (other !== undefined) {
      assert.notInclude(w.controlsOf(other), `cancel ${m1.id}`, "b-2, which never had m1, got its cancel")
      w.batch(other, [{ type: "unregister" }])
    }
    const back = w.registerB("b-1")
    for (let n = 0; n < 20; n++) {
      w.framesOf(back)
      if (!w.tryDrain(back)) break
    }
    return { controls: w.controlsOf(back).filter((c) => c.endsWith(m1.id)), m1: m1.id }
  })

describe("a parked cancel of a message its receiver read, forced at its sender's close to the receiver's closed connection, is kept for that instance", () => {
  it.effect("the session away at the sender's close: b-1's return gets the cancel", () =>
    Effect.gen(function*() {
      const { controls, m1 } = yield* scenario(false)
      assert.deepStrictEqual(controls, [`cancel ${m1}`], "b-1 read m1 and was never told of its cancel")
    }))

  it.effect("another instance, b-2, holding the session at the sender's close: b-2 is not given it, b-1's later return is", () =>
    Effect.gen(function*() {
      const { controls, m1 } = yield* scenario(true)
      assert.deepStrictEqual(controls, [`cancel ${m1}`], "b-1 read m1 and was never told of its cancel")
    }))

  it.effect("a cancel of a message b-1 was never written: neither the message nor its cancel reaches b-1's return (holds before the fix too)", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: HOUR, outboxCapacity: 1 })
      w.stick()
      const { m1 } = m1StuckBehindM0(w)
      const m2 = message("m2")
      w.batch(w.d, [{ type: "send", to: "b", message: m2 }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      assert.isTrue(parkedControl(w.d, w.b1), "the cancel is not parked at d's reader: the test sets up nothing")
      w.closeAbandoned(w.b1)
      w.closeAbandoned(w.d)
      const back = w.registerB("b-1")
      for (let n = 0; n < 20; n++) {
        w.framesOf(back)
        if (!w.tryDrain(back)) break
      }
      assert.include(w.messagesOf(back), m2.id, "m2 did not reach b-1's return: the test checks nothing")
      assert.notInclude(w.messagesOf(back), m1.id, "b-1 got the message its sender cancelled")
      assert.deepStrictEqual(w.controlsOf(back).filter((c) => c.endsWith(m1.id)), [], "b-1 got a cancel of a message it never received")
    }))
})
