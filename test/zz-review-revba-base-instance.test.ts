/**
 * Review revba BA4 (probe): for clients that send no `instanceId`, "the same
 * client instance" is decided by ClientInstances.returning: the next
 * registration of the id with no `instanceId` continues the last holder's
 * instance when that one registered with nothing known — so ANY other base
 * process registering the same session id after a base client's drop is
 * taken for it, and is given the controls kept for it (KeptControls.takeFor
 * → mayHold). e-1 was written m1; d cancelled m1, the cancel stuck in e-1's
 * outbox behind m0; e-1's connection dropped (the cancel, its message
 * written to a base client, kept for e-1 by keepAlone). A new process
 * (a fresh `intercom` CLI run, say) registers `e`: it never had m1, yet is
 * written `cancel m1` (and m0, rightly: m0 was never written). The broker
 * cannot tell a base client's reconnect from a new process; the question is
 * whether a kept control may go to a registration it cannot tell. Not made
 * by ctlclose (keepAlone is helper ctlback's; ctlclose adds the
 * refused-at-close and takeover paths to the same store). FAILS on main.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "./support/broker.ts"
import { controlWorld as world, custodyFeatures } from "./support/controlWorld.ts"

const HOUR = 3_600_000

describe("revba BA4: a control kept for a base client instance and another base process of the same id", () => {
  it.effect("e-1 (no instanceId) dropped with m1's cancel kept; a new base process registering e is not given that cancel", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: HOUR })
      const e1 = w.registerOther("e", {}, true)
      const m1 = message("m1")
      w.batch(w.d, [{ type: "send", to: "e", message: m1 }])
      assert.include(w.messagesOf(e1), m1.id, "m1 was not written to e-1: the test sets up nothing")
      w.stick()
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "e", message: m0 }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      assert.strictEqual(e1.outbox.length, 1, "the cancel is not waiting in e-1's outbox: the test sets up nothing")
      w.closeAbandoned(e1)
      assert.strictEqual(w.router.heldMail()?.controls, 1, "the cancel was not kept for e-1: the test checks nothing")
      const other = w.registerOther("e")
      assert.include(w.messagesOf(other), m0.id, "m0 did not reach the new process: the test checks nothing")
      assert.notInclude(w.controlsOf(other), `cancel ${m1.id}`, "a new base process of id e was given a cancel of m1, which it never received")
    }))
})
