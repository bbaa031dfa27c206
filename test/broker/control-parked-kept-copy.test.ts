/**
 * A cancel parked at its sender's reader for a message its instance read
 * (review revao AO4): m1 is written to b-1 (read, never confirmed); then
 * b-1's writes stick and d's cancel of m1 parks at d's reader behind b-1's
 * full outbox. b-1 unregisters: its hand-back gives m1 back, withdrawn on
 * its way and read by b-1, so WithdrawnCopies.keepCancelled keeps a copy for
 * b-1 with a cancel made again — and the parked cancel shares the message's
 * fate (Output.dropParkedControls), so it does not also reach b-1's old
 * connection and get kept alone (KeptControls). b-1's return gets m1 once
 * and its cancel once, after it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, drainedSeen, parkedControl } from "../support/controlWorld.ts"

describe("a parked cancel of a message its instance read, given back at an unregister", () => {
  it.effect("b-1's return gets the cancel of m1 exactly once", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: 3_600_000, outboxCapacity: 1 })
      const m1 = message("m1")
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      assert.include(w.messagesOf(w.b1), m1.id, "b-1 was not written m1: the test sets up nothing")
      w.stick()
      const m0 = message("m0")
      const m2 = message("m2")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
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
      assert.deepStrictEqual(seen.filter((s) => s.endsWith(m1.id)), [`message ${m1.id}`, `cancel ${m1.id}`])
    }))
})
