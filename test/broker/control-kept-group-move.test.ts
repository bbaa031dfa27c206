/**
 * A control given back alone at the close of a connection whose session the
 * same client instance took over from another group (its move: the same
 * `instanceId`) is kept for that instance, which can come back to the first
 * group as itself, and is given to it there (Registration.mayReturn looks at
 * the id's live holders in the scope's other groups; review revbk BK1 — it
 * looked in the closed session's own group only, and the moving instance is
 * noted nowhere, so the cancel was dropped). So is one parked at its sender's
 * reader and refused at that closed connection (MailReturns' `keepRefused`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { GROUPS_V1, REJOIN_V1, TAKEOVER_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, parkedControl } from "../support/controlWorld.ts"

const HOUR = 3_600_000
const features = [REJOIN_V1, TAKEOVER_V1, GROUPS_V1]

describe("a control for an instance that moved to another group", () => {
  it.effect("is kept for that instance's return to the first group, and given to it there", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: HOUR })
      const e1 = w.registerOther("e", {}, true, { features, instanceId: "e-a" })
      assert.strictEqual(e1.state, "registered", "e-a did not register e: the test sets up nothing")
      const m1 = message("m1")
      w.batch(w.d, [{ type: "send", to: "e", message: m1 }])
      assert.include(w.messagesOf(e1), m1.id, "m1 was not written to e-a: the test sets up nothing")
      w.stick()
      w.batch(w.d, [{ type: "send", to: "e", message: message("m0") }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      assert.strictEqual(e1.outbox.length, 1, "the cancel is not waiting in e-a's outbox: the test sets up nothing")
      // The same client instance moves e to group g2 on a new connection (its default-group session is taken over elsewhere).
      const moved = w.registerOther("e", {}, false, { features, instanceId: "e-a", group: "g2" })
      assert.strictEqual(moved.state, "registered", "e-a did not register e in g2: the test sets up nothing")
      w.closeAbandoned(e1)
      const kept = w.router.stats().controlsKept
      // It comes back to the default group as itself.
      const back = w.registerOther("e", {}, false, { features, instanceId: "e-a" })
      for (let n = 0; n < 20; n++) {
        w.framesOf(back)
        if (!w.tryDrain(back)) break
      }
      assert.strictEqual(kept, 1, "m1's cancel was not kept for e-a, which can return to the default group as itself")
      assert.include(w.controlsOf(back), `cancel ${m1.id}`, "e-a, back in the default group, never got m1's cancel")
    }))

  it.effect("refused at the old connection's close while parked at its sender's reader: kept for that instance (keepRefused)", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: HOUR, outboxCapacity: 1 })
      const e1 = w.registerOther("e", {}, true, { features, instanceId: "e-a" })
      const m1 = message("m1")
      w.batch(w.d, [{ type: "send", to: "e", message: m1 }])
      assert.include(w.messagesOf(e1), m1.id, "m1 was not written to e-a: the test sets up nothing")
      w.stick()
      w.batch(w.d, [{ type: "send", to: "e", message: message("m0") }])
      w.batch(w.d, [{ type: "send", to: "e", message: message("m2") }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      assert.isTrue(parkedControl(w.d, e1), "the cancel is not parked at d's reader: the test sets up nothing")
      const moved = w.registerOther("e", {}, false, { features, instanceId: "e-a", group: "g2" })
      assert.strictEqual(moved.state, "registered", "e-a did not register e in g2: the test sets up nothing")
      w.closeAbandoned(e1)
      for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
        // each step offers one parked item
      }
      assert.isFalse(parkedControl(w.d, e1), "the cancel was not offered at e-a's closed connection: the test checks nothing")
      assert.strictEqual(w.router.stats().controlsKept, 1, "the refused cancel was not kept for e-a, which can return to the default group as itself")
    }))
})
