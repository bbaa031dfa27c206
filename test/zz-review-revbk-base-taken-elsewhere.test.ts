/**
 * Review revbk BK2 (probe, fails on main at e6c155b3): a base client's
 * instance (no `instanceId`) whose id another client took over FROM ANOTHER
 * GROUP can never register as itself again — the taker is live, so the next
 * base registration takes it over as a new instance, and once the taker leaves
 * the id's last holder is an `instanceId` holder (ClientInstances.returning) —
 * yet a control given back alone at its connection's close is kept for it and
 * holds a memory broker's idle exit for the mailbox's retention
 * (Registration.mayReturn: `registry.byKey.get(key)` looks in the closed
 * session's own group only, so it falls through to `known[0]`, which is the
 * base instance itself, noted as taken over, while the taker in the other
 * group is live and not noted). Same class as review revbe BE2; the
 * same-group takeover is dropped correctly.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { GROUPS_V1, REJOIN_V1, TAKEOVER_V1 } from "../src/protocol/features.ts"
import { message } from "./support/broker.ts"
import { controlWorld as world, custodyFeatures } from "./support/controlWorld.ts"

const HOUR = 3_600_000

describe("review revbk BK2: a control for a base instance whose id was taken over from another group", () => {
  it.effect("is not kept (no registration continues that instance) and holds no idle exit", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: HOUR })
      const e0 = w.registerOther("e", {}, true)
      assert.strictEqual(e0.state, "registered", "base e-0 did not register e: the test sets up nothing")
      const m1 = message("m1")
      w.batch(w.d, [{ type: "send", to: "e", message: m1 }])
      assert.include(w.messagesOf(e0), m1.id, "m1 was not written to e-0: the test sets up nothing")
      w.stick()
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "e", message: m0 }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      assert.strictEqual(e0.outbox.length, 1, "the cancel is not waiting in e-0's outbox: the test sets up nothing")
      // Another client, naming itself, takes e over from group g2.
      const ei = w.registerOther("e", {}, false, { features: [REJOIN_V1, TAKEOVER_V1, GROUPS_V1], instanceId: "e-i", group: "g2" })
      assert.strictEqual(ei.state, "registered", "e-i did not take e over from g2: the test sets up nothing")
      w.closeAbandoned(e0)
      assert.strictEqual(w.router.stats().sessions, 3, "e-0 did not leave (b, d and e-i are live): the test sets up nothing")
      const kept = w.router.stats().keptControls
      const holding = w.router.heldMail()?.controls ?? 0
      // Nobody can collect it: e-i leaves, and the next base registration of e is a new instance.
      w.batch(ei, [{ type: "unregister" }])
      const next = w.registerOther("e")
      for (let n = 0; n < 20; n++) {
        w.framesOf(next)
        if (!w.tryDrain(next)) break
      }
      assert.include(w.messagesOf(next), m0.id, "m0 did not reach the next registration: the test checks nothing")
      assert.notInclude(w.controlsOf(next), `cancel ${m1.id}`, "the next base registration was taken for e-0")
      assert.strictEqual(kept, 0, "m1's cancel was kept for e-0, which can never register as itself again")
      assert.strictEqual(holding, 0, "a cancel kept for e-0 holds the idle exit")
    }))
})
