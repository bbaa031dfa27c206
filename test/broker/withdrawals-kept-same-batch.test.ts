/**
 * A message sent and cancelled (or superseded) in ONE batch, parked behind
 * the receiver's full outbox: at the cancel it is still in the batch's
 * parked output (Output's, moved to the sender's reader list only by
 * `parkFor` at the batch's end), and MayStillWait.ts's `mayStillWait` finds it
 * there (`Output.parksWithdrawn`, review revay AY1): the withdrawal
 * outlives the route's hour, so b's next instance never gets m2, whose
 * cancel d was answered `delivered` (or which m3 superseded). Same scenario
 * as withdrawals-kept-where-waiting's first case, the send and the cancel in
 * one batch instead of two. Hand-driven Router (controlWorld).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, drainedSeen, m1StuckBehindM0 } from "../support/controlWorld.ts"

const HOUR = 3_600_000

describe("a withdrawal outlives its route while the withdrawn message is parked in the batch that withdraws it (review revay AY1)", () => {
  it.effect("m2, cancelled in the batch that parked it, never reaches b's next instance", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, { mailboxRetention: 24 * HOUR, outboxCapacity: 1 }, clock)
      w.stick()
      const { m0 } = m1StuckBehindM0(w)
      const m2 = message("m2")
      w.batch(w.d, [{ type: "send", to: "b", message: m2 }, { type: "cancel_message", messageId: m2.id }])
      const parked = w.d.parked.some(([, item]) => typeof item === "object" && "mail" in item && item.mail.message.id === m2.id)
      assert.isTrue(parked, "m2 is not parked at d's reader: the test sets up nothing")
      clock.now += HOUR + 1_000
      w.router.prune(clock.now)
      w.batch(w.b1, [{ type: "unregister" }])
      for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
        // each step offers one parked item
      }
      w.closeAbandoned(w.b1)
      for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
        // d's answers, parked behind m2, are offered
      }
      const answers = w.answersOf(m2.id)
      const seen = drainedSeen(w, w.registerB("b-2"))
      assert.include(seen, `message ${m0.id}`, "m0, never confirmed, did not come back: the test checks nothing")
      assert.strictEqual(answers.at(-1), "delivered", `d's cancel of m2 was not answered delivered: ${answers}`)
      assert.notInclude(seen, `message ${m2.id}`, "m2, cancelled (answered delivered) in the batch that parked it, reached b's next instance")
    }))
  it.effect("m2, superseded by m3 in the batch that parked it, never reaches b's next instance", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, { mailboxRetention: 24 * HOUR, outboxCapacity: 1 }, clock)
      w.stick()
      const { m0 } = m1StuckBehindM0(w)
      const m2 = message("m2")
      const m3 = { ...message("m3"), supersedes: m2.id }
      w.batch(w.d, [{ type: "send", to: "b", message: m2 }, { type: "send", to: "b", message: m3 }])
      const parked = w.d.parked.some(([, item]) => typeof item === "object" && "mail" in item && item.mail.message.id === m2.id)
      assert.isTrue(parked, "m2 is not parked at d's reader: the test sets up nothing")
      clock.now += HOUR + 1_000
      w.router.prune(clock.now)
      w.batch(w.b1, [{ type: "unregister" }])
      for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
        // each step offers one parked item
      }
      w.closeAbandoned(w.b1)
      const seen = drainedSeen(w, w.registerB("b-2"))
      assert.include(seen, `message ${m0.id}`, "m0, never confirmed, did not come back: the test checks nothing")
      assert.include(seen, `message ${m3.id}`, "m3 did not reach b's next instance: the test checks nothing")
      assert.notInclude(seen, `message ${m2.id}`, "m2, superseded in the batch that parked it, reached b's next instance")
    }))
})
