/**
 * A cancel parked at its sender's reader, about a message its receiver's
 * client instance b-1 confirmed, when b-1's connection closes and another
 * client instance (b-2) registers the session before d's drainer offers
 * the cancel: refused at b-1's closed connection, it goes back
 * (Output.undeliverable, MailReturns.takeBack). b-2 was never given the
 * message: it must not get the cancel.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { confirmedThenCancelParked, parkedControl } from "../support/controlWorld.ts"

const HOUR = 3_600_000

describe("a parked cancel refused at its receiver's closed connection, another client instance live", () => {
  it.effect("the other instance, never given the message, does not get the cancel", () =>
    Effect.gen(function*() {
      const { m1, w } = yield* confirmedThenCancelParked(HOUR)
      w.closeAbandoned(w.b1)
      assert.isTrue(parkedControl(w.d, w.b1), "the cancel left d's reader at b-1's close: the test checks nothing")
      const other = w.registerB("b-2")
      assert.isTrue(parkedControl(w.d, w.b1), "the cancel left d's reader at b-2's register: the test checks nothing")
      for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
        // each step offers one parked item
      }
      assert.isFalse(parkedControl(w.d, w.b1), "the cancel is still parked at d's reader: the test checks nothing")
      // b-2's own parked list: the mailbox flush of m0 and m2 (b-1 gave them back), and what parked behind it.
      for (let n = 0; n < 20 && w.tryDrain(other); n++) {
        // each step offers one parked item
      }
      assert.notInclude(w.controlsOf(other), `cancel ${m1.id}`, "b-2 got a cancel of m1, which only b-1 was given")
    }))
})
