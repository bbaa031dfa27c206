/**
 * A cancelled copy kept for b-1 (WithdrawnCopies.ts) while a new instance of
 * b, b-2, which never read it, registers and stays live: b-2 is given
 * neither the message nor its cancel, and the copy waits in the mailbox
 * (`withheldFrom`) while b-2 gets new mail live; b-1 taking b over from
 * b-2 then gets the message and the cancel (review revm M2, M3: the
 * registering instance that is not among a copy's readers takes nothing).
 *
 * On a Router driven by hand (controlWorld).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"

describe("a cancelled copy kept for b-1 while a new instance of b is live", () => {
  it.effect("b-2 gets only new mail; b-1 taking b over gets the message and the cancel", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures)
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      assert.strictEqual(w.b1.custody?.size, 1, "m0 is not in b-1's custody: the test sets up nothing")
      w.closeAbandoned(w.b1)
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      const b2 = w.registerB("b-2")
      const m1 = message("m1")
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      assert.deepStrictEqual(messagesAndControls(w.framesOf(b2)), [`message ${m1.id}`])
      w.batch(b2, [{ type: "received", frames: w.framesOf(b2).length }])
      const back = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(back)), [`message ${m0.id}`, `cancel ${m0.id}`])
    }))
})
