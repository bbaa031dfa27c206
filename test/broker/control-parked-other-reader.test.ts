/**
 * A cancel parked at its sender's reader for an instance that never got
 * the message another instance read (review revao AO3: the rule is per
 * client instance). m1 is written to b-0, which drops unconfirmed: the
 * mailbox copy is marked read by b-0. b-1 registers (on a connection whose
 * writes never complete) and is flushed m1, which waits unwritten; d's
 * cancel of m1, routed to b-1, parks at d's reader behind b-1's full outbox.
 * b-1 unregisters: m1, withdrawn on its way and never written to b-1, is
 * kept as a cancelled copy for b-0 (WithdrawnCopies.keepCancelled), and the
 * parked cancel for b is taken out with it (Output.dropParkedControls):
 * b-1's return gets neither m1 nor a cancel of it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message, registerFrame } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, drainedSeen, parkedControl } from "../support/controlWorld.ts"

describe("a parked cancel for an instance that never got a message another instance read", () => {
  it.effect("b-1's return gets no cancel of m1 (only b-0 read m1)", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: 3_600_000, outboxCapacity: 1 })
      w.batch(w.b1, [{ type: "unregister" }])
      const b0 = w.registerB("b-0")
      const m1 = message("m1")
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      assert.include(drainedSeen(w, b0), `message ${m1.id}`, "b-0 was not written m1: the test sets up nothing")
      w.closeAbandoned(b0)
      w.stick()
      w.batch(w.b1, [registerFrame({ sessionId: "b", frame: { features: custodyFeatures, instanceId: "b-1" } })])
      const m2 = message("m2")
      w.batch(w.d, [{ type: "send", to: "b", message: m2 }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      assert.isTrue(parkedControl(w.d, w.b1), "the cancel is not parked at d's reader: the test sets up nothing")
      w.batch(w.b1, [{ type: "unregister" }])
      for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
        // each step offers one parked item
      }
      assert.isFalse(parkedControl(w.d, w.b1), "the cancel is still parked at d's reader: the test checks nothing")
      w.closeAbandoned(w.b1)
      const back = w.registerB("b-1")
      const seen = drainedSeen(w, back)
      assert.notInclude(seen, `message ${m1.id}`, "m1, cancelled, was given to b-1, which never received it")
      assert.notInclude(seen, `cancel ${m1.id}`, "b-1's return got a cancel of m1, which it never received")
    }))
})
