/**
 * The withdrawn message parked at an OLDER connection of its sender, still
 * open after that sender's session registered again on a new connection
 * (a takeover: the old connection's messages to others stay parked there,
 * only its own answers are forced, OutputEnd.forceOwnAnswers). The new
 * connection cancels it: MayStillWait.ts's `mayStillWait` scans every parked
 * reader's list (`Output.parksWithdrawn`, review revay AY2), not only the
 * sender's current connection's, so the withdrawal outlives the route's
 * hour and b's next instance never gets m2, whose cancel d was answered
 * `delivered`. Hand-driven Router (controlWorld).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, drainedSeen, m1StuckBehindM0 } from "../support/controlWorld.ts"

const HOUR = 3_600_000

describe("a withdrawal outlives its route while the withdrawn message is parked at its sender's older connection (review revay AY2)", () => {
  it.effect("m2, parked at d's old connection and cancelled from its new one, never reaches b's next instance", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, { mailboxRetention: 24 * HOUR, outboxCapacity: 1 }, clock)
      w.stick()
      const { m0 } = m1StuckBehindM0(w)
      const m2 = message("m2")
      w.batch(w.d, [{ type: "send", to: "b", message: m2 }])
      const parksM2 = (peer: Peer) => peer.parked.some(([, item]) => typeof item === "object" && "mail" in item && item.mail.message.id === m2.id)
      assert.isTrue(parksM2(w.d), "m2 is not parked at d's reader: the test sets up nothing")
      const d2 = w.registerD()
      assert.strictEqual(d2.session?.key, w.d.session?.key ?? d2.session?.key, "d2 does not hold d's session")
      assert.isTrue(parksM2(w.d), "m2 left d's old connection at the takeover: the probe's premise is wrong")
      w.batch(d2, [{ type: "cancel_message", messageId: m2.id }])
      clock.now += HOUR + 1_000
      w.router.prune(clock.now)
      w.batch(w.b1, [{ type: "unregister" }])
      for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
        // each step offers one parked item
      }
      w.closeAbandoned(w.d)
      w.closeAbandoned(w.b1)
      for (let n = 0; n < 10 && w.tryDrain(d2); n++) {
        // d2's answer, parked behind its control, is offered
      }
      const answers = w.framesOf(d2).filter((f) => f.messageId === m2.id && f.type !== "message_receipt").map((f) => f.type)
      const seen = drainedSeen(w, w.registerB("b-2"))
      assert.include(seen, `message ${m0.id}`, "m0, never confirmed, did not come back: the test checks nothing")
      assert.deepStrictEqual(answers, ["delivered"], "d2's cancel of m2 was not answered delivered")
      assert.notInclude(seen, `message ${m2.id}`, "m2, cancelled (answered delivered) from d's new connection, reached b's next instance")
    }))
})
