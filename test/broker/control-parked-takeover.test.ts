/**
 * A cancel parked at its sender's reader (the receiver's outbox full) for a
 * message that comes back withdrawn at a takeover of its session, never
 * given to the connection that takes over, reaches no one there (review
 * revaq AQ1, AQ2). m1 is queued to b-1 unwritten (b-1's writes stick), d's
 * cancel of m1 parks at d's reader behind b-1's full outbox, and session b
 * is taken over on a new connection before b-1's old one closes:
 *
 * - by another client instance (b-2): the close path's live branch
 *   (MailReturns.requeueForwarded) dropped m1, never given to b-2, but left
 *   its parked cancel, which the old connection then refused and
 *   `takeBack` forced to b-2 (AQ1);
 * - by b-1 itself again, m1 an ask: the cancel closed its edge, so m1 is
 *   stale at once and the stale branch dropped it the same way, its cancel
 *   forced to b-1's new connection (AQ2).
 *
 * Now a withdrawn message no client read takes its parked control with it
 * (MailReturns.dropWithdrawn, Output.dropParkedControls).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ControlFrame } from "../../src/broker/ControlFrame.ts"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"

/** What the connection taking session b over as `instance` is sent of m1 (m1 an ask when `ask`). */
const takenOver = (instance: string, ask: boolean) =>
  Effect.gen(function*() {
    const w = yield* world(custodyFeatures, { mailboxRetention: 3_600_000, outboxCapacity: 1 })
    w.stick()
    const m0 = message("m0")
    const m1 = message("m1", ask ? { expectsReply: true } : {})
    w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
    w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
    w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
    assert.isTrue(
      w.d.parked.some(([, item]) => item instanceof ControlFrame),
      "the cancel is not parked at d's reader: the test sets up nothing"
    )
    const next = w.registerB(instance)
    w.closeAbandoned(w.b1)
    for (let n = 0; n < 20; n++) {
      const a = w.tryDrain(w.d)
      const b = w.tryDrain(next)
      if (!a && !b) break
    }
    const all = messagesAndControls(w.framesOf(next))
    assert.notInclude(all, `message ${m1.id}`, `m1, cancelled, was given to ${instance}: the test sets up nothing`)
    return all.filter((seen) => seen.endsWith(m1.id))
  })

describe("a parked cancel when its session is taken over before its message was written", () => {
  it.effect("b-2, another instance, which never got m1, is sent no cancel of m1", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* takenOver("b-2", false), [], "b-2 was sent a cancel of m1, which it never received")
    }))

  it.effect("b-1 on its new connection, which never got the ask m1, is sent no cancel of m1", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* takenOver("b-1", true), [], "b-1's new connection was sent a cancel of the ask m1")
    }))
})
