/**
 * Review revaq AQ1: the live branch of MailReturns.requeueForwarded
 * dropped a withdrawn message never given to the live instance (routes.lost)
 * without taking its parked control out (Output.dropParkedControls is called
 * on the away branch only). m1 is queued to b-1 unwritten (b-1's writes
 * stick), d's cancel of m1 parks at d's reader behind b-1's full outbox;
 * b-2 (another client instance) takes session b over, m1 comes back
 * withdrawn and is dropped (never given to b-2); the parked cancel, refused
 * by b-1's closed connection, goes to b-2 (MailReturns.takeBack forces a
 * control to the live connection with no instance check): b-2 is sent a
 * cancel of a message it never received.
 * That was before the fix: now the live branch drops the control with its
 * message (Output.dropParkedControls), so b-2 gets no cancel of m1.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ControlFrame } from "../../src/broker/ControlFrame.ts"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"

describe("a parked cancel when another instance takes the session over", () => {
  it.effect("b-2, which never got m1, is sent no cancel of m1", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: 3_600_000, outboxCapacity: 1 })
      w.stick()
      const m0 = message("m0")
      const m1 = message("m1")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      assert.isTrue(
        w.d.parked.some(([, item]) => item instanceof ControlFrame),
        "the cancel is not parked at d's reader: the test sets up nothing"
      )
      const b2 = w.registerB("b-2")
      w.closeAbandoned(w.b1)
      const seen: Array<string> = []
      for (let n = 0; n < 20; n++) {
        seen.push(...messagesAndControls(w.framesOf(b2)))
        const a = w.tryDrain(w.d)
        const b = w.tryDrain(b2)
        if (!a && !b) break
      }
      const all = messagesAndControls(w.framesOf(b2))
      assert.notInclude(all, `message ${m1.id}`, "m1, cancelled, was given to b-2: the test sets up nothing")
      assert.notInclude(all, `cancel ${m1.id}`, "b-2 was sent a cancel of m1, which it never received")
    }))
})
