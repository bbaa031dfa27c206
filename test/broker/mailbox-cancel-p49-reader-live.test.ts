/**
 * A mailbox copy of c's mail that P49's holder b-1 read (written, never
 * confirmed, then b-1's drop) is cancelled while b-1 is back and live
 * (another holder, e, kept b-1's return from taking c's mail): b-1 is given
 * the message and its cancel then (`MailDelivery.cancel`). Found by review
 * revl (L3): the copy was kept for a return of b-1's that might never come,
 * and live b-1 was told nothing.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message, registration } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures } from "../support/controlWorld.ts"

describe("a P49 holder's read copy cancelled while that holder is live", () => {
  it.effect("the live holder that read it is sent the cancel", () =>
    Effect.gen(function*() {
      const named = { name: "B", cwd: "/tmp" }
      const w = yield* world(custodyFeatures, {}, { now: 1_000_000 }, named)
      const c = w.registerOther("c", named)
      w.closeAbandoned(c)
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "c", message: m0 }])
      assert.deepStrictEqual(w.messagesOf(w.b1), [m0.id], "b-1 did not take c's mail: the test sets up nothing")
      const e = w.registerOther("e", named)
      assert.deepStrictEqual(w.messagesOf(e), [], "e took c's mail: the test sets up nothing")
      w.closeAbandoned(w.b1)
      const again = w.registerB("b-1", custodyFeatures, { session: registration(named) })
      assert.deepStrictEqual(w.messagesOf(again), [], "b-1's return took c's mail: the test sets up nothing")
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered"])
      assert.deepStrictEqual(w.messagesOf(again), [m0.id])
      assert.deepStrictEqual(w.controlsOf(again), [`cancel ${m0.id}`])
      assert.deepStrictEqual(w.messagesOf(e), [], "e, which never read it, is given nothing")
    }))
})
