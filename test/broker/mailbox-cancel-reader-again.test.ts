/**
 * A cancelled copy kept for two readers (review L6): b-1 comes back and is
 * given the message and its cancel; the copy stays for b-2. b-1 then
 * reconnects once more before b-2 is back: it is no longer among the
 * copy's readers, so its flush leaves the copy in the mailbox
 * (`WithdrawnCopies.withheldFrom`), and b-2's return still gets the message
 * and the cancel. It used to take the copy and drop it for b-2 too (review
 * revm M2).
 *
 * On a Router driven by hand (controlWorld).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"

describe("a cancelled copy's reader already told coming back again", () => {
  it.effect("is given nothing, and the reader still to come back gets the message and the cancel", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures)
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.closeAbandoned(w.b1)
      const b2 = w.registerB("b-2")
      assert.deepStrictEqual(w.messagesOf(b2), [m0.id], "b-2 was not given m0: the test sets up nothing")
      w.closeAbandoned(b2)
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      const first = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(first)), [`message ${m0.id}`, `cancel ${m0.id}`])
      // b-1 confirms what it read and leaves; it comes back once more before b-2 does.
      w.batch(first, [{ type: "received", frames: w.framesOf(first).length }])
      assert.strictEqual(first.custody?.size, 0, "b-1 still holds unconfirmed mail: the test sets up nothing")
      w.closeAbandoned(first)
      const firstAgain = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(firstAgain)), [], "b-1 was given m0 twice")
      w.batch(firstAgain, [{ type: "received", frames: w.framesOf(firstAgain).length }])
      w.closeAbandoned(firstAgain)
      const second = w.registerB("b-2")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(second)), [`message ${m0.id}`, `cancel ${m0.id}`])
    }))
})
