/**
 * Review revbe BE2 probe: a control kept with its session AWAY for a client
 * instance that sent no `instanceId` and can never register as itself again
 * holds a memory broker's idle exit. Such an instance is continued by a
 * later registration with no `instanceId` only when it registered with
 * nothing known of the id (ClientInstances.returning: `mayBeBeforeStart`).
 * Here e-r (instanceId "e-r") held e first and left, so base e-1, registering
 * after it, is a new instance that may not be from before the start: once
 * e-1 drops, nothing can ever collect what is kept for it, yet MailReturns'
 * `keepAlone` (live === undefined: no `mayReturn` asked) keeps its cancel
 * holding the exit for the mailbox's retention (KeptControls.keep). The
 * next base registration of e is a new instance and is not given it (only
 * then does `takeFor` drop it). FAILS on main at the idle-exit assertion.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { RECEIVED_V1, REJOIN_V1 } from "../src/protocol/features.ts"
import { message } from "./support/broker.ts"
import { controlWorld as world, custodyFeatures } from "./support/controlWorld.ts"

const HOUR = 3_600_000

describe("revbe BE2: a cancel kept for a base instance that can never return, its session away", () => {
  it.effect("does not hold the idle exit, and no later registration is given it", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: HOUR })
      const er = w.registerOther("e", {}, false, { features: [RECEIVED_V1, REJOIN_V1], instanceId: "e-r" })
      w.batch(er, [{ type: "unregister" }])
      const e1 = w.registerOther("e", {}, true)
      assert.strictEqual(e1.state, "registered", "base e-1 did not register e: the test sets up nothing")
      const m1 = message("m1")
      w.batch(w.d, [{ type: "send", to: "e", message: m1 }])
      assert.include(w.messagesOf(e1), m1.id, "m1 was not written to e-1: the test sets up nothing")
      w.stick()
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "e", message: m0 }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      assert.strictEqual(e1.outbox.length, 1, "the cancel is not waiting in e-1's outbox: the test sets up nothing")
      w.closeAbandoned(e1)
      const kept = w.router.stats().keptControls
      const holding = w.router.heldMail()?.controls ?? 0
      // Show no one can collect it: the next base registration of e is a new instance.
      const next = w.registerOther("e")
      assert.include(w.messagesOf(next), m0.id, "m0 did not reach the next registration: the test checks nothing")
      assert.notInclude(w.controlsOf(next), `cancel ${m1.id}`, "the next base registration was taken for e-1: the premise is wrong")
      assert.strictEqual(w.router.stats().keptControlsGiven, 0)
      assert.strictEqual(holding, 0, `a cancel kept for e-1, which can never register as itself again, holds the idle exit (kept: ${kept})`)
    }))
})
