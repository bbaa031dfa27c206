/**
 * A cancel of an ask, parked at its sender's reader for a client instance
 * that never received the ask, is not kept for that instance's return
 * (MailReturns' `dropWithdrawn`, leftover of review revbe). a-1 read the ask
 * m1 unconfirmed and dropped, so m1 went back to the mailbox marked read by
 * a-1; b-1 (another client, `rejoin-v1` without `received-v1`) was flushed
 * m1 behind a write that never completed (its socket took none of it); d
 * cancelled m1, the cancel parked at d's reader; b-1 unregistered, c-1
 * registered e, b-1's connection closed. m1 came back over (its ask closed
 * by the cancel) with c-1 live, and since a client had read it the parked
 * cancel was left in place for that client — whichever instance it was for —
 * so, refused at b-1's closed connection, it was kept for b-1
 * (`keepRefused`) and b-1's return was given a cancel of a message it never
 * received. Fails without the `readBy` filter in `dropWithdrawn`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { RECEIVED_V1, REJOIN_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, parkedControl } from "../support/controlWorld.ts"

const HOUR = 3_600_000

describe("a parked cancel of an ask over, for an instance that never received it", () => {
  it.effect("is not kept for that instance (b-1): its return is given no cancel", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: HOUR, outboxCapacity: 1 })
      const a1 = w.registerOther("e", {}, false, { features: [RECEIVED_V1, REJOIN_V1], instanceId: "a-1" })
      const m1 = message("m1", { expectsReply: true })
      w.batch(w.d, [{ type: "send", to: "e", message: m1 }])
      assert.include(w.messagesOf(a1), m1.id, "m1 was not written to a-1: the test sets up nothing")
      w.closeAbandoned(a1)
      w.stick()
      const b1 = w.registerOther("e", {}, true, { features: [REJOIN_V1], instanceId: "b-1" })
      assert.notInclude(w.messagesOf(b1), m1.id, "m1 was written to b-1: the test sets up nothing")
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      assert.isTrue(parkedControl(w.d, b1), "the cancel is not parked at d's reader: the test sets up nothing")
      w.batch(b1, [{ type: "unregister" }])
      const c1 = w.registerOther("e", {}, false, { features: [RECEIVED_V1, REJOIN_V1], instanceId: "c-1" })
      w.closeAbandoned(b1)
      for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
        // each step offers one parked item
      }
      assert.isFalse(parkedControl(w.d, b1), "the cancel is still parked: the test checks nothing")
      assert.notInclude(w.controlsOf(c1), `cancel ${m1.id}`, "c-1, which never received m1, was given its cancel")
      assert.strictEqual(w.router.stats().controlsKept, 0, "the cancel was kept for b-1, which never received m1")
      w.batch(c1, [{ type: "unregister" }])
      const back = w.registerOther("e", {}, false, { features: [REJOIN_V1], instanceId: "b-1" })
      for (let n = 0; n < 20; n++) {
        w.framesOf(back)
        if (!w.tryDrain(back)) break
      }
      assert.notInclude(w.controlsOf(back), `cancel ${m1.id}`, "b-1's return was given a cancel of m1, which b-1 never received")
      assert.notInclude(w.messagesOf(back), m1.id, "m1, cancelled, reached b-1's return: the test checks nothing")
    }))

  it.effect("a-1, which read the ask, still gets the cancel at its return when it was parked for a-1 (baseline)", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: HOUR, outboxCapacity: 1 })
      const a1 = w.registerOther("e", {}, true, { features: [RECEIVED_V1, REJOIN_V1], instanceId: "a-1" })
      const m1 = message("m1", { expectsReply: true })
      w.batch(w.d, [{ type: "send", to: "e", message: m1 }])
      assert.include(w.messagesOf(a1), m1.id, "m1 was not written to a-1: the test sets up nothing")
      w.stick()
      w.batch(w.d, [{ type: "send", to: "e", message: message("m0") }])
      w.batch(w.d, [{ type: "send", to: "e", message: message("m2") }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      assert.isTrue(parkedControl(w.d, a1), "the cancel is not parked at d's reader: the test sets up nothing")
      const c1 = w.registerOther("e", {}, false, { features: [RECEIVED_V1, REJOIN_V1], instanceId: "c-1" })
      w.closeAbandoned(a1)
      for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
        // each step offers one parked item
      }
      assert.notInclude(w.controlsOf(c1), `cancel ${m1.id}`, "c-1, which never received m1, was given its cancel")
      w.batch(c1, [{ type: "unregister" }])
      const back = w.registerOther("e", {}, false, { features: [RECEIVED_V1, REJOIN_V1], instanceId: "a-1" })
      for (let n = 0; n < 20; n++) {
        w.framesOf(back)
        if (!w.tryDrain(back)) break
      }
      assert.include(w.controlsOf(back), `cancel ${m1.id}`, "a-1's return, which read m1, was not given its cancel")
    }))
})
