/**
 * Review revbk BK3 (probe, fails on main at e6c155b3; not a regression of the
 * merge, the half of review revbe BE2 it left): a message cancelled on its way
 * to a `received-v1` base instance that can never register as itself again
 * (it sent no `instanceId` and registered after an `instanceId` holder of the
 * id) comes back at that instance's close and is kept in the mailbox as a
 * cancelled copy for it (MailReturns.requeueForwarded →
 * WithdrawnCopies.keepCancelled) — which no registration can take
 * (`withheldFrom`) and which holds a memory broker's idle exit (HeldMail.messages)
 * for the mailbox's retention. The merge asks `mayReturn` only for the
 * copy's cancel when the bounds push the copy out at once (`keepFor`), not
 * whether the copy itself is kept for anyone.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { RECEIVED_V1, REJOIN_V1 } from "../src/protocol/features.ts"
import { message } from "./support/broker.ts"
import { controlWorld as world, custodyFeatures } from "./support/controlWorld.ts"

const HOUR = 3_600_000

describe("review revbk BK3: a cancelled copy for a base instance that can never return", () => {
  it.effect("is not kept in the mailbox for it", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: HOUR })
      const er = w.registerOther("e", {}, false, { features: [RECEIVED_V1, REJOIN_V1], instanceId: "e-r" })
      w.batch(er, [{ type: "unregister" }])
      const e1 = w.registerOther("e", {}, true, { features: [RECEIVED_V1] })
      assert.strictEqual(e1.state, "registered", "base e-1 did not register e: the test sets up nothing")
      const m1 = message("m1")
      w.batch(w.d, [{ type: "send", to: "e", message: m1 }])
      assert.include(w.messagesOf(e1), m1.id, "m1 was not written to e-1: the test sets up nothing")
      w.stick()
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      w.closeAbandoned(e1)
      assert.strictEqual(w.router.stats().sessions, 2, "e is not away (b and d only are live): the test sets up nothing")
      assert.strictEqual(w.router.stats().withdrawnCopiesKept, 1, "m1 did not come back as a cancelled copy: the test sets up nothing")
      const held = w.router.heldMail()
      // Nobody can take it: the next base registration of e is a new instance, withheld the copy.
      const next = w.registerOther("e", {}, false, { features: [RECEIVED_V1] })
      for (let n = 0; n < 20; n++) {
        w.framesOf(next)
        if (!w.tryDrain(next)) break
      }
      assert.notInclude(w.messagesOf(next), m1.id, "the next base registration was given m1: the test checks nothing")
      assert.strictEqual(held?.messages ?? 0, 0, "a cancelled copy of m1 is kept in the mailbox (holding the idle exit) for e-1, which can never return")
    }))
})
