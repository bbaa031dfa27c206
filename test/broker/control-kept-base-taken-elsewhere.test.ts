/**
 * A control given back alone at the close of a base client's connection
 * (no `instanceId`) whose id another client took over FROM ANOTHER GROUP is
 * not kept: that instance can never register as itself again (the next base
 * registration is a new instance), so kept it would hold a memory broker's
 * idle exit for no one (Registration.mayReturn answers from the id's live
 * holder in the other group; review revbk BK2 — it fell through to the id's
 * last known holder, the base instance itself). Nor is one parked at its
 * sender's reader and refused at that closed connection (`keepRefused`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { GROUPS_V1, REJOIN_V1, TAKEOVER_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, parkedControl } from "../support/controlWorld.ts"

const HOUR = 3_600_000

describe("a control for a base instance whose id was taken over from another group", () => {
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
      const kept = w.router.stats().controlsKept
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

  it.effect("refused at its closed connection while parked at its sender's reader: not kept (keepRefused)", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: HOUR, outboxCapacity: 1 })
      const e0 = w.registerOther("e", {}, true)
      const m1 = message("m1")
      w.batch(w.d, [{ type: "send", to: "e", message: m1 }])
      assert.include(w.messagesOf(e0), m1.id, "m1 was not written to e-0: the test sets up nothing")
      w.stick()
      w.batch(w.d, [{ type: "send", to: "e", message: message("m0") }])
      w.batch(w.d, [{ type: "send", to: "e", message: message("m2") }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      assert.isTrue(parkedControl(w.d, e0), "the cancel is not parked at d's reader: the test sets up nothing")
      const ei = w.registerOther("e", {}, false, { features: [REJOIN_V1, TAKEOVER_V1, GROUPS_V1], instanceId: "e-i", group: "g2" })
      assert.strictEqual(ei.state, "registered", "e-i did not take e over from g2: the test sets up nothing")
      w.closeAbandoned(e0)
      for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
        // each step offers one parked item
      }
      assert.isFalse(parkedControl(w.d, e0), "the cancel was not offered at e-0's closed connection: the test checks nothing")
      assert.strictEqual(w.router.stats().controlsKept, 0, "the refused cancel was kept for e-0, which can never register as itself again")
      assert.strictEqual(w.router.heldMail()?.controls ?? 0, 0, "a cancel kept for e-0 holds the idle exit")
    }))
})
