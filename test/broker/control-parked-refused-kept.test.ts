/**
 * A cancel parked at its sender's reader (the receiver's outbox full) for a
 * message its receiver READ AND CONFIRMED, offered by the drainer after the
 * receiver's connection closed, is refused there (ParkedDrain → Output.refused
 * → MailReturns.takeBack with `keepRefused`) and is now kept for the client
 * instance it was written to (KeptControls), as a control given back alone
 * at a close is: b-1's return gets it whether the drainer offered it before
 * that return (the session away) or while another instance, b-2, held the
 * session (refused by `reachesLive`), as it does when offered after the
 * return (baseline). Before the fix the first two dropped it (review revau AU3).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { confirmedThenCancelParked, controlWorld as world, custodyFeatures, parkedControl } from "../support/controlWorld.ts"

const HOUR = 3_600_000

/** b-1 confirmed m1; d's cancel of it parked; b-1 closed; the cancel offered before (or after) b-1's return. */
const scenario = (offeredBeforeReturn: boolean) =>
  Effect.gen(function*() {
    const { m1, w } = yield* confirmedThenCancelParked(HOUR)
    w.closeAbandoned(w.b1)
    if (offeredBeforeReturn) {
      for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
        // each step offers one parked item
      }
      assert.isFalse(parkedControl(w.d, w.b1), "the cancel is still parked before the return: the test checks nothing")
    }
    const back = w.registerB("b-1")
    for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
      // each step offers one parked item
    }
    for (let n = 0; n < 20; n++) {
      w.framesOf(back)
      if (!w.tryDrain(back)) break
    }
    assert.deepStrictEqual(w.answersOf(m1.id), ["delivered", "delivered"], "the cancel was not answered delivered: the test sets up nothing")
    return { controls: w.controlsOf(back), m1: m1.id }
  })

describe("a parked cancel of a message its receiver read, refused at the receiver's closed connection, is kept for that instance (review revau AU3)", () => {
  it.effect("offered after b-1's return: b-1 gets the cancel (the control rule's baseline)", () =>
    Effect.gen(function*() {
      const { controls, m1 } = yield* scenario(false)
      assert.deepStrictEqual(controls.filter((c) => c.endsWith(m1)), [`cancel ${m1}`])
    }))

  it.effect("offered while another instance, b-2, holds the session (refused by reachesLive): b-1's later return still gets the cancel", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: HOUR, outboxCapacity: 1 })
      const m1 = message("m1")
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      w.batch(w.b1, [{ type: "received", frames: w.b1.framesWritten }])
      w.stick()
      w.batch(w.d, [{ type: "send", to: "b", message: message("m0") }])
      w.batch(w.d, [{ type: "send", to: "b", message: message("m2") }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      assert.isTrue(parkedControl(w.d, w.b1), "the cancel is not parked at d's reader: the test sets up nothing")
      w.closeAbandoned(w.b1)
      const other = w.registerB("b-2")
      for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
        // each step offers one parked item
      }
      assert.isFalse(parkedControl(w.d, w.b1), "the cancel is still parked: the test checks nothing")
      assert.notInclude(w.controlsOf(other), `cancel ${m1.id}`, "b-2 got the cancel: not the case this probe is about")
      w.batch(other, [{ type: "unregister" }])
      const back = w.registerB("b-1")
      for (let n = 0; n < 20; n++) {
        w.framesOf(back)
        if (!w.tryDrain(back)) break
      }
      assert.deepStrictEqual(w.controlsOf(back).filter((c) => c.endsWith(m1.id)), [`cancel ${m1.id}`], "b-1 read m1 and was never told of its cancel")
    }))

  it.effect("offered before b-1's return, the session away: b-1's return still gets the cancel", () =>
    Effect.gen(function*() {
      const { controls, m1 } = yield* scenario(true)
      assert.deepStrictEqual(controls.filter((c) => c.endsWith(m1)), [`cancel ${m1}`], "b-1 read m1 and was never told of its cancel")
    }))
})
