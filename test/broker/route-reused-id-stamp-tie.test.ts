/**
 * Review revroute D1 (HIGH, regression of task route A): route-reused-id-
 * withdrawal.test.ts's third case with the clock not moved between m0 and
 * the later message under its id, so both get the same `brokerReceivedAt`
 * (BrokerStamps gives equal stamps within one reading). When the later
 * message was flushed to z and took m0's route over,
 * DeliveryRecords.forgetEarlier noted m0's withdrawal by that stamp alone,
 * a tie counting as the later message: m0, superseded and still unwritten
 * at b-1, given back at that stamp, was delivered to b-1's return. The tie
 * is decided by the later message's fingerprint now (a message of another
 * is m0). The clock is a plain number, never moved; no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { custodyFeatures } from "../support/controlWorld.ts"
import { copyLeftWorld, textsOf } from "../support/withdrawnCopyLeft.ts"

describe("m0 superseded, and a later message under its id taken over its route at the same stamp (review revroute D1)", () => {
  it.effect("m0, superseded and unwritten at b-1, is not given to b-1's return when both share a stamp", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 3 })
      w.closeAbandoned(w.reg("z", {}, "Z"))
      const y = w.reg("y", {}, "Y")
      const b1 = w.reg("b", { features: custodyFeatures, instanceId: "b-1" }, "B", true)
      const m0 = message("m0")
      w.send("b", m0)
      w.send("y", message("other"))
      w.send("y", message("other 2"))
      w.send("y", message("other 3"))
      assert.deepStrictEqual(textsOf(w.framesOf(y), m0.id), [], "y was given m0: the test sets up nothing")
      // No clock move: the later message is received in the same clock reading as m0.
      w.send("z", { ...m0, content: { text: "for z" } })
      w.send("b", message("m1", { supersedes: m0.id }))
      const z = w.reg("z", { features: custodyFeatures, instanceId: "z-1" }, "Z")
      assert.deepStrictEqual(textsOf(w.framesOf(z), m0.id), ["for z"], "z's return was not flushed the later message: the test sets up nothing")
      w.closeAbandoned(b1)
      const back = w.reg("b", { features: custodyFeatures, instanceId: "b-1" })
      assert.deepStrictEqual(textsOf(w.framesOf(back), m0.id), [], "b-1's return was given m0, which d superseded")
    }))
})
