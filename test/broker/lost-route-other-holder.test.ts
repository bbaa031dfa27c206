/**
 * Mail the mailbox drops as lost (MailDelivery.lost: here expired) is never a
 * cancelled copy — those leave by copyLeft — so no write elsewhere holds
 * it, and its route, if any, names the write that gave it back (or an older message
 * under its id, whose withdrawal the resend's own record forgot already).
 * So dropping that route takes no withdrawal a stuck write still needs
 * (review revbx BX3's shape does not arise here): the nearest world, P49's
 * other holder b-1 of c's identity written c's m0 and
 * dropped unconfirmed, then live again (e holds the identity too, so its
 * return takes nothing) when m0 expires. The safe outcome, pinned: d is told
 * m0 expired, its cancel is answered that m0 cannot be cancelled, b-1 is
 * sent no control for it, and c's return is given no m0. The world is
 * test/support/withdrawnCopyLeft.ts's.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Reason } from "../../src/protocol/delivery.ts"
import { message } from "../support/broker.ts"
import { custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"
import { copyLeftWorld, receiptsOf } from "../support/withdrawnCopyLeft.ts"

describe("mail the mailbox drops as lost, its route naming P49's other holder whose write gave it back", () => {
  it.effect("expired: d is told so, its cancel cannot cancel it, b-1 gets no control and c's return no m0", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ mailboxRetention: "1 second" })
      w.closeAbandoned(w.reg("c", {}))
      const b1 = w.reg("b", { features: custodyFeatures, instanceId: "b-1" })
      const m0 = message("m0")
      w.send("c", m0)
      assert.deepStrictEqual(messagesAndControls(w.framesOf(b1)), [`message ${m0.id}`], "b-1 did not take m0")
      // e holds the identity (registered while b-1 is live: it takes nothing), so b-1's return takes nothing.
      w.reg("e", {})
      w.closeAbandoned(b1)
      const b1Back = w.reg("b", { features: custodyFeatures, instanceId: "b-1" })
      assert.deepStrictEqual(messagesAndControls(w.framesOf(b1Back)), [], "b-1's return took m0: the test sets up nothing")
      // Past the mailbox's retention (within the route's hour), a registration prunes the mailbox.
      w.clock.now += 2_000
      w.reg("g", {}, "G")
      assert.deepStrictEqual(receiptsOf(w.framesOf(w.d), m0.id), ["expired"], "d was not told m0 expired")
      w.cancel(m0.id)
      const answer = w.framesOf(w.d).filter((frame) => frame.messageId === m0.id).at(-1)
      assert.strictEqual(answer?.type, "delivery_failed", `d's cancel of m0 was answered ${JSON.stringify(answer)}`)
      assert.strictEqual(answer?.reason, Reason.cannotCancel)
      assert.deepStrictEqual(messagesAndControls(w.framesOf(b1Back)), [], "b-1 was sent something about m0")
      assert.notInclude(messagesAndControls(w.framesOf(w.reg("c", {}))), `message ${m0.id}`, "c's return was given m0")
    }))
})
