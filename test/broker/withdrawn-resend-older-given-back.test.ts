/**
 * An older message under a resent id, never withdrawn, is delivered when
 * given back after the resend (review revcc, item 2, its probe 2). d's "old"
 * (id X) is written to q, whose writes never complete; past the replay
 * record's hour d sends m0 under X to c (toldReader's set-up: f-1 told of
 * m0's cancel while its write is stuck); past m0's hour d resends "m0 again"
 * under X, whose record forgets m0's withdrawal. q's connection then closes
 * and gives "old" back: received before the resend but not of the withdrawn
 * m0's fingerprint (DeliveryRecords.withdrawnBeforeResend), so it is not
 * taken for m0 and q's return gets it. The world is
 * test/support/withdrawnCopyLeft.ts's; its clock is a plain number moved by
 * hand, no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"
import { copyLeftWorld, HOUR, textsOf } from "../support/withdrawnCopyLeft.ts"

describe("an older message under a resent id, never withdrawn, given back after the resend", () => {
  it.effect("q's return gets the message it was written and never read", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({})
      const id = "X"
      // q (no holder of c's identity) is written "old" and never completes the write.
      const q = w.reg("q", { features: [RECEIVED_V1] }, "Q", true)
      w.send("q", message("old", { id }))
      assert.deepStrictEqual(
        w.framesOf(w.d).flatMap((frame) => frame.type === "delivered" && frame.messageId === id ? ["delivered"] : []),
        ["delivered"],
        "d was not answered delivered for old: the test sets up nothing"
      )
      w.clock.now += HOUR + 1_000
      // toldReader's set-up (test/support/withdrawnCopyLeft.ts), with m0 under the same id.
      w.closeAbandoned(w.reg("c", {}))
      const x = w.reg("b", { features: [RECEIVED_V1] })
      const m0 = message("m0", { id })
      w.send("c", m0)
      assert.deepStrictEqual(messagesAndControls(w.framesOf(x)), [`message ${id}`], "b's base client did not take m0")
      w.closeAbandoned(x)
      const f0 = w.reg("f", { features: custodyFeatures, instanceId: "f-1" })
      assert.deepStrictEqual(messagesAndControls(w.framesOf(f0)), [`message ${id}`], "f-1 did not take m0")
      w.reg("e", {})
      w.closeAbandoned(f0)
      const f1 = w.reg("f", { features: custodyFeatures, instanceId: "f-1" })
      w.stick(f1)
      w.cancel(id)
      assert.strictEqual(w.router.stats().withdrawnCopiesHeld, 1, "no copy kept for b's base reader: the test sets up nothing")
      w.clock.now += HOUR + 1_000
      w.send("c", { ...m0, content: { text: "m0 again" } })
      // q's write of "old" never completed: its close gives it back, for q's return.
      w.closeAbandoned(q)
      const qBack = w.reg("q", { features: [RECEIVED_V1] }, "Q")
      assert.deepStrictEqual(textsOf(w.framesOf(qBack), id), ["old"], "q's return was not given the message it never read")
    }))
})
