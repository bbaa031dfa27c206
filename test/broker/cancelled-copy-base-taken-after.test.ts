/**
 * A cancelled copy kept in the mailbox for a `received-v1` base client's
 * instance (no `instanceId`) that COULD return when it was kept — nothing
 * was known of the id, so the next registration with no `instanceId` would
 * continue it — goes once another client registers the id with an
 * `instanceId`: that one is now the id's last holder, so e-1 can never
 * register as itself again (Registration.mayReturn), as its kept controls
 * go then (KeptControls.takeFor; control-kept-base-instance.test.ts). Kept,
 * the copy waited for no one and held a memory broker's idle exit for the
 * mailbox's retention (MailDelivery's `releaseCopies`). It goes as at its
 * expiry: its sender, answered `cancelled` already, is told nothing more.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { RECEIVED_V1, REJOIN_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { cancelledOnItsWay, controlWorld as world, custodyFeatures } from "../support/controlWorld.ts"

const HOUR = 3_600_000

describe("a cancelled copy kept for a base instance that later can never return", () => {
  it.effect("goes when an instanceId client registers the id: not given to it, holds no idle exit, its sender told nothing more", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: HOUR })
      const e1 = w.registerOther("e", {}, true, { features: [RECEIVED_V1] })
      assert.strictEqual(e1.state, "registered", "base e-1 did not register e: the test sets up nothing")
      const m1 = message("m1")
      const toSender = cancelledOnItsWay(w, e1, m1)
      w.closeAbandoned(e1)
      assert.strictEqual(w.router.stats().sessions, 2, "e is not away (b and d only are live): the test sets up nothing")
      assert.strictEqual(w.router.stats().withdrawnCopiesHeld, 1, "m1 was not kept as a cancelled copy for e-1: the test sets up nothing")
      assert.strictEqual(w.router.heldMail()?.messages, 1, "the copy kept for e-1 holds no idle exit: the test checks nothing")
      // Another client (an instanceId) registers e: the id's last holder now, so e-1 never again.
      const other = w.registerOther("e", {}, false, { features: [RECEIVED_V1, REJOIN_V1], instanceId: "e-9" })
      assert.strictEqual(other.state, "registered", "e-9 did not register e: the test sets up nothing")
      assert.notInclude(w.messagesOf(other), m1.id, "a client that sent an instanceId was given e-1's cancelled copy")
      assert.strictEqual(w.router.stats().withdrawnCopiesHeld, 0, "the copy is still kept for e-1, which can never return")
      assert.strictEqual(w.router.heldMail()?.messages ?? 0, 0, "a copy kept for an instance that can never return holds the idle exit")
      assert.strictEqual(w.framesOf(w.d).length, toSender, "m1's sender was told more after its cancel was answered")
      w.batch(other, [{ type: "unregister" }])
      const later = w.registerOther("e", {}, false, { features: [RECEIVED_V1] })
      assert.notInclude(w.messagesOf(later), m1.id, "a later base registration, a new instance, was given e-1's copy")
    }))
})
