/**
 * MailDelivery.releaseCopies lets go only of readers OF THE REGISTERING
 * SESSION that can never return (`gone` checks `reader.receiverKey ===
 * session.key`). A copy also read by another session's instance (P49's
 * other holder of the identity, review revi I1) stays kept for that one
 * (review revbx BX4: no test covered that guard).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { message, registerFrame } from "../support/broker.ts"
import { messagesAndControls, readerWorld } from "../support/controlWorld.ts"

describe("a released cancelled copy stays kept for another session's reader", () => {
  it.effect("b's base reader released at b-9's registration; f-1, which read it too, still gets the message and its cancel", () =>
    Effect.gen(function*() {
      const { batch, router, connect, framesOf, closeAbandoned, register } = yield* readerWorld()
      const d = connect()
      batch(d, [registerFrame({ sessionId: "d" })])
      closeAbandoned(register("c"))
      // b: a received-v1 client that sends no instanceId, registering with nothing known of b.
      const x = connect()
      batch(x, [registerFrame({ sessionId: "b", name: "B", cwd: "/tmp", frame: { features: [RECEIVED_V1] } })])
      const m0 = message("m0")
      batch(d, [{ type: "send", to: "c", message: m0 }])
      assert.deepStrictEqual(messagesAndControls(framesOf(x)), [`message ${m0.id}`], "b's base client did not take c's mail")
      closeAbandoned(x)
      const f1 = register("f", "f-1")
      assert.deepStrictEqual(messagesAndControls(framesOf(f1)), [`message ${m0.id}`], "f-1 did not take c's mail")
      closeAbandoned(f1)
      batch(d, [{ type: "cancel_message", messageId: m0.id }])
      assert.strictEqual(router.stats().withdrawnCopiesHeld, 1, "m0 not kept as a cancelled copy: the test sets up nothing")
      // An instanceId client registers b: b's base instance can never return; f-1 still can.
      const b9 = register("b", "b-9")
      assert.deepStrictEqual(messagesAndControls(framesOf(b9)), [], "b-9, which never read m0, was given it")
      assert.strictEqual(router.stats().withdrawnCopiesHeld, 1, "the copy was released though f-1 (another session) is still owed it")
      const f1Again = register("f", "f-1")
      assert.deepStrictEqual(messagesAndControls(framesOf(f1Again)), [`message ${m0.id}`, `cancel ${m0.id}`], "f-1's return was not given m0 and its cancel")
    }))
})
