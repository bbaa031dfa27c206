/**
 * A message cancelled on its way to a `received-v1` base client's instance
 * (no `instanceId`) that can never register as itself again — it registered
 * after an `instanceId` holder of the id — and given back at that instance's
 * close is not kept in the mailbox as a cancelled copy: no registration could
 * take it (`withheldFrom`), and it held a memory broker's idle exit for the
 * mailbox's retention (WithdrawnCopies.keepCancelled keeps a copy only for
 * readers Registration.mayReturn says yes to; review revbk BK3). It goes as a
 * kept copy would at its expiry: its sender, answered `cancelled` already, is
 * told nothing more.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { RECEIVED_V1, REJOIN_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { cancelledOnItsWay, controlWorld as world, custodyFeatures } from "../support/controlWorld.ts"

const HOUR = 3_600_000

describe("a cancelled copy for a base instance that can never return", () => {
  it.effect("is not kept in the mailbox, holds no idle exit, and tells its sender nothing more", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: HOUR })
      const er = w.registerOther("e", {}, false, { features: [RECEIVED_V1, REJOIN_V1], instanceId: "e-r" })
      w.batch(er, [{ type: "unregister" }])
      const e1 = w.registerOther("e", {}, true, { features: [RECEIVED_V1] })
      assert.strictEqual(e1.state, "registered", "base e-1 did not register e: the test sets up nothing")
      const m1 = message("m1")
      const toSender = cancelledOnItsWay(w, e1, m1)
      w.closeAbandoned(e1)
      assert.strictEqual(w.router.stats().sessions, 2, "e is not away (b and d only are live): the test sets up nothing")
      const copies = w.router.stats().withdrawnCopiesKept
      const held = w.router.heldMail()
      // Nobody can take it: the next base registration of e is a new instance.
      const next = w.registerOther("e", {}, false, { features: [RECEIVED_V1] })
      for (let n = 0; n < 20; n++) {
        w.framesOf(next)
        if (!w.tryDrain(next)) break
      }
      assert.notInclude(w.messagesOf(next), m1.id, "the next base registration was given m1")
      assert.strictEqual(copies, 0, "m1 was kept as a cancelled copy for e-1, which can never return")
      assert.strictEqual(held?.messages ?? 0, 0, "a cancelled copy of m1 holds the idle exit")
      assert.strictEqual(w.framesOf(w.d).length, toSender, "m1's sender was told more after its cancel was answered")
    }))
})
