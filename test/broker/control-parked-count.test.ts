/**
 * The count of control frames in the readers' parked lists
 * (ParkedControls.ts, `Output.parkedControls`), which lets the close path's
 * drop of a withdrawn message's parked controls scan nothing while none is
 * parked (review revaq AQ3): it follows a cancel parked at its sender's
 * reader out of the list whichever way it leaves — dropped with its
 * withdrawn message at the receiver's hand-back, offered by the drainer,
 * forced at its reader's close — and matches what the lists hold.
 *
 * b-1's socket takes nothing (`stick`) and its outbox holds one frame, so
 * d's cancel finds no room and parks at d's reader (controlWorld).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { isControl } from "../../src/broker/OutboundItems.ts"
import type { Peer } from "../../src/broker/Peer.ts"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures } from "../support/controlWorld.ts"

const HOUR = 3_600_000

/** The control frames `readers`' parked lists hold: what the count must say. */
const controlsIn = (readers: ReadonlyArray<Peer>): number =>
  readers.reduce((sum, reader) => sum + reader.parked.filter(([, item]) => isControl(item)).length, 0)

/** b-1 stuck with m0 in its write and `waiting` in its outbox; d's cancel of `cancelled` parked at d's reader. */
const parkedCancel = (confirmFirst: boolean) =>
  Effect.gen(function*() {
    const w = yield* world(custodyFeatures, { mailboxRetention: HOUR, outboxCapacity: 1 })
    const early = message("early")
    if (confirmFirst) {
      w.batch(w.d, [{ type: "send", to: "b", message: early }])
      w.batch(w.b1, [{ type: "received", frames: w.b1.framesWritten }])
    }
    w.stick()
    const m0 = message("m0")
    const m1 = message("m1")
    w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
    w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
    w.batch(w.d, [{ type: "cancel_message", messageId: confirmFirst ? early.id : m1.id }])
    const output = w.router.output
    assert.strictEqual(controlsIn([w.d, w.b1]), 1, "the cancel is not parked: the test sets up nothing")
    assert.strictEqual(output.parkedControls, 1, "the parked cancel is not counted")
    return { w, output }
  })

describe("the count of parked control frames", () => {
  it.effect("a cancel dropped with its withdrawn message at the receiver's hand-back leaves the count at zero", () =>
    Effect.gen(function*() {
      const { output, w } = yield* parkedCancel(false)
      w.batch(w.b1, [{ type: "unregister" }])
      assert.strictEqual(controlsIn([w.d, w.b1]), 0, "the cancel is still parked: the test checks nothing")
      assert.strictEqual(output.parkedControls, 0)
    }))

  it.effect("a cancel its reader's drainer offered leaves the count at zero", () =>
    Effect.gen(function*() {
      const { output, w } = yield* parkedCancel(true)
      // b-1's hand-back empties its outbox (the cancel's message was confirmed: nothing drops the cancel).
      w.batch(w.b1, [{ type: "unregister" }])
      assert.strictEqual(output.parkedControls, 1, "the cancel left before its offer: the test checks nothing")
      for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
        // each step offers one parked item
      }
      assert.strictEqual(controlsIn([w.d, w.b1]), 0, "the cancel is still parked: the test checks nothing")
      assert.strictEqual(output.parkedControls, 0)
    }))

  it.effect("a cancel forced out at its reader's close leaves the count at zero", () =>
    Effect.gen(function*() {
      const { output, w } = yield* parkedCancel(false)
      w.closeAbandoned(w.d)
      assert.strictEqual(controlsIn([w.d, w.b1]), 0, "the cancel is still parked: the test checks nothing")
      assert.strictEqual(output.parkedControls, 0)
    }))
})
