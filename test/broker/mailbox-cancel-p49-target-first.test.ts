/**
 * A cancelled copy P49's other holder (b-1) read is kept for that holder,
 * whose return takes it (docs/protocol.md), though the copy still names the
 * departed session c as its target: c registering first leaves it in the
 * mailbox (`flush`, `WithdrawnCopies.withheldFrom`). Found by review revl
 * (L1): c's flush took it, found it was not c's and dropped it, so b-1's
 * return got nothing — its sender answered `delivered`, nobody ever told.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message, registration } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"

describe("P49 holder's kept copy, the departed target registering first", () => {
  it.effect("the holder's same instance, back after c's return, still gets the message and the cancel", () =>
    Effect.gen(function*() {
      const named = { name: "B", cwd: "/tmp" }
      const w = yield* world(custodyFeatures, {}, { now: 1_000_000 }, named)
      const c = w.registerOther("c", named)
      w.closeAbandoned(c)
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "c", message: m0 }])
      assert.deepStrictEqual(w.messagesOf(w.b1), [m0.id], "b-1 did not take c's mail: the test sets up nothing")
      w.closeAbandoned(w.b1)
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered"])
      const back = w.registerOther("c", named)
      assert.deepStrictEqual(messagesAndControls(w.framesOf(back)), [], "c got the copy: a different defect")
      const again = w.registerB("b-1", custodyFeatures, { session: registration(named) })
      assert.deepStrictEqual(messagesAndControls(w.framesOf(again)), [`message ${m0.id}`, `cancel ${m0.id}`])
    }))
})
