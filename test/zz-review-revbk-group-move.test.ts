/**
 * Review revbk BK1 (probe, fails on main at e6c155b3): a control given back
 * alone at the close of a connection whose session was taken over from ANOTHER
 * group by the same client instance (its move to another group: the same
 * `instanceId`) is dropped, though that instance is live and can come back to
 * the first group as itself (Registration.ts: a registration with the same
 * instanceId continues its instance, and KeptControls.takeFor gives it the
 * control). Registration.mayReturn answers false: the moving instance was
 * never noted in ClientInstances (takenOverBy skips a holder of the taker's own
 * instance; `leave` skips a session taken over elsewhere), and no session holds
 * the first group's key. Before the merge, `keepAlone` kept it (session away).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { GROUPS_V1, REJOIN_V1, TAKEOVER_V1 } from "../src/protocol/features.ts"
import { message } from "./support/broker.ts"
import { controlWorld as world, custodyFeatures } from "./support/controlWorld.ts"

const HOUR = 3_600_000
const features = [REJOIN_V1, TAKEOVER_V1, GROUPS_V1]

describe("review revbk BK1: a control for an instance that moved to another group", () => {
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
      const kept = w.router.stats().keptControls
      // It comes back to the default group as itself.
      const back = w.registerOther("e", {}, false, { features, instanceId: "e-a" })
      for (let n = 0; n < 20; n++) {
        w.framesOf(back)
        if (!w.tryDrain(back)) break
      }
      assert.strictEqual(kept, 1, "m1's cancel was not kept for e-a, which can return to the default group as itself")
      assert.include(w.controlsOf(back), `cancel ${m1.id}`, "e-a, back in the default group, never got m1's cancel")
    }))
})
