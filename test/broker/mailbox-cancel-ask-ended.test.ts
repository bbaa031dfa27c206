/**
 * Mail cancelled on its way to a short-lived receiver that then ends by
 * `unregister` goes silently, its record kept cancelled (docs/protocol.md),
 * an ask past its own deadline too: `requeueForwarded` drops a withdrawn ask
 * without `dropStale`'s expired receipt. Found by review revl (L7): it lost
 * it as expired (an `expired` receipt, the record rewritten so a retry
 * heard `E_DELIVERY_EXPIRED`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { EPHEMERAL_V1 } from "../../src/protocol/features.ts"
import { Reason } from "../../src/protocol/delivery.ts"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures } from "../support/controlWorld.ts"

describe("an ask cancelled on its way to a short-lived receiver, which ends after the ask's deadline", () => {
  it.effect("its sender gets no expired receipt, and a resend still hears cancelled", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, { askTimeout: "1 minute" }, clock)
      w.closeAbandoned(w.b1)
      const b2 = w.registerB("b-2", [...custodyFeatures, EPHEMERAL_V1], { ephemeral: true })
      const m0 = message("m0", { expectsReply: true })
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(b2), [`cancel ${m0.id}`], "the cancel was not written to b-2: the test sets up nothing")
      assert.strictEqual(b2.custody?.size, 2, "m0 and its cancel are not in b-2's custody: the test sets up nothing")
      clock.now += 120_000
      const before = w.framesOf(w.d).filter((frame) => frame.type === "message_receipt")
      assert.deepStrictEqual(before, [], "a receipt came before the unregister: the test sets up nothing")
      w.batch(b2, [{ type: "unregister" }])
      const receipts = w.framesOf(w.d).filter((frame) => frame.type === "message_receipt")
      assert.deepStrictEqual(receipts, [])
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered", `failed: ${Reason.cancelled}`])
    }))
})
