/**
 * Review revaq AQ2: the stale branch of MailReturns.requeueForwarded
 * (a cancelled ask is stale at once: its cancel closed its edge) drops a
 * withdrawn ask with its session live (routes.lost) without taking its
 * parked control out. The ask m1 is queued to b-1 unwritten (b-1's writes
 * stick), d's cancel of m1 parks at d's reader behind b-1's full outbox;
 * b-1 takes its own session over on a new connection (same client
 * instance), m1 comes back withdrawn and stale and is dropped silently; the
 * parked cancel, refused by the old connection, is forced to the new one
 * (MailReturns.takeBack: same instance, route not droppedUnread): b-1 is
 * sent a cancel of an ask it never received.
 * That was before the fix: now a withdrawn message no client read takes its
 * parked control with it (MailReturns.dropWithdrawn).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ControlFrame } from "../../src/broker/ControlFrame.ts"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"

describe("a parked cancel of an ask when its own instance registers again", () => {
  it.effect("b-1 on its new connection, which never got the ask m1, is sent no cancel of m1", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: 3_600_000, outboxCapacity: 1 })
      w.stick()
      const m0 = message("m0")
      const m1 = message("m1", { expectsReply: true })
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      assert.isTrue(
        w.d.parked.some(([, item]) => item instanceof ControlFrame),
        "the cancel is not parked at d's reader: the test sets up nothing"
      )
      const b2 = w.registerB("b-1")
      w.closeAbandoned(w.b1)
      const seen: Array<string> = []
      for (let n = 0; n < 20; n++) {
        seen.push(...messagesAndControls(w.framesOf(b2)))
        const a = w.tryDrain(w.d)
        const b = w.tryDrain(b2)
        if (!a && !b) break
      }
      const all = messagesAndControls(w.framesOf(b2))
      assert.notInclude(all, `message ${m1.id}`, "m1, cancelled, was given to b-1: the test sets up nothing")
      assert.notInclude(all, `cancel ${m1.id}`, "b-1's new connection was sent a cancel of the ask m1, which b-1 never received")
    }))
})
