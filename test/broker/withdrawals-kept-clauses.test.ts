/**
 * The places MayStillWait.ts's `mayStillWait` looks for the withdrawn message in
 * the receiver's own output, one case each, none of which another place
 * covers (review revay AY3): its write in progress, the untaken rest of an
 * abandoned write, and its own parked list at its close (after
 * `OutputEnd.forceParked`, with no drainer, no longer among Output's parked
 * readers). Each case fails with its clause of `mayStillWait` replaced by
 * `false`. The withdrawn message waits only there when it is cancelled,
 * the route ages out, and the receiver's next connection must not get it.
 * The fourth case, the own parked list while its drainer offers it, is
 * found by either that clause or `Output.parksWithdrawn`. Hand-driven
 * Router (controlWorld).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { closePeer } from "../../src/broker/RouterContext.ts"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, drainedSeen, m1StuckBehindM0 } from "../support/controlWorld.ts"

const HOUR = 3_600_000

const carries = (items: ReadonlyArray<unknown> | undefined, id: string): boolean =>
  (items ?? []).some((item) => typeof item === "object" && item !== null && "mail" in item && JSON.stringify(item).includes(id))

describe("a withdrawal outlives its route while the withdrawn message waits in the receiver's own output (review revay AY3)", () => {
  it.effect("write in progress: m0, cancelled while in b-1's stuck write, never reaches b's next instance", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, { mailboxRetention: 24 * HOUR, outboxCapacity: 1 }, clock)
      w.stick()
      const { m0, m1 } = m1StuckBehindM0(w)
      assert.isTrue(carries(w.b1.writer.inFlight?.returnable, m0.id), "m0 is not in b-1's write: the test sets up nothing")
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      clock.now += HOUR + 1_000
      w.router.prune(clock.now)
      w.batch(w.b1, [{ type: "unregister" }])
      for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
        // each step offers one parked item
      }
      w.closeAbandoned(w.b1)
      const seen = drainedSeen(w, w.registerB("b-2"))
      assert.include(seen, `message ${m1.id}`, "m1, never written, did not come back: the test checks nothing")
      assert.notInclude(seen, `message ${m0.id}`, "m0, cancelled while in b-1's write, reached b's next instance")
    }))

  it.effect("untaken rest: m0, cancelled after b-1's write was abandoned (its close begun), never reaches b's next instance", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, { mailboxRetention: 24 * HOUR, outboxCapacity: 1 }, clock)
      w.stick()
      const { m0, m1 } = m1StuckBehindM0(w)
      closePeer(w.b1, "destroy")
      w.router.abandonWrites(w.b1)
      assert.isTrue(carries(w.b1.untakenRest, m0.id), "m0 is not in b-1's untaken rest: the test sets up nothing")
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      clock.now += HOUR + 1_000
      w.router.prune(clock.now)
      w.closeAbandoned(w.b1)
      for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
        // each step offers one parked item
      }
      const seen = drainedSeen(w, w.registerB("b-2"))
      assert.include(seen, `message ${m1.id}`, "m1, never written, did not come back: the test checks nothing")
      assert.notInclude(seen, `message ${m0.id}`, "m0, cancelled while in b-1's untaken rest, reached b's next instance")
    }))

  it.effect("own parked list: m2, cancelled while b's mailbox flush parks it at b's own reader, never reaches b's next instance", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, { mailboxRetention: 24 * HOUR, outboxCapacity: 1 }, clock)
      w.closeAbandoned(w.b1)
      const ms = [message("m0"), message("m1"), message("m2")]
      for (const m of ms) w.batch(w.d, [{ type: "send", to: "b", message: m }])
      w.stick()
      const b = w.registerOther("b", {}, true)
      const m2 = ms[2]!
      const ownParked = b.parked.some(([to, item]) => to === b && carries([item], m2.id))
      assert.isTrue(ownParked, `m2 is not parked at b's own reader: the test sets up nothing (outbox ${b.outbox.length}, parked ${b.parked.length})`)
      w.batch(w.d, [{ type: "cancel_message", messageId: m2.id }])
      const answers = w.answersOf(m2.id)
      assert.strictEqual(answers.at(-1), "delivered", `d's cancel of m2 was not answered delivered: ${answers}`)
      clock.now += HOUR + 1_000
      w.router.prune(clock.now)
      w.closeAbandoned(b)
      const seen = drainedSeen(w, w.registerB("b-2"))
      assert.include(seen, `message ${ms[0]!.id}`, "m0, never read, did not come back: the test checks nothing")
      assert.notInclude(seen, `message ${m2.id}`, "m2, cancelled while parked at b's own reader, reached b's next instance")
    }))
  it.effect("own parked list at its close: m2, cancelled while b's closing connection keeps it with no drainer, never reaches b's next instance", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, { mailboxRetention: 24 * HOUR, outboxCapacity: 1 }, clock)
      w.closeAbandoned(w.b1)
      const ms = [message("m0"), message("m1"), message("m2")]
      for (const m of ms) w.batch(w.d, [{ type: "send", to: "b", message: m }])
      w.stick()
      const b = w.registerOther("b", {}, true)
      const m2 = ms[2]!
      // Its close begins as ConnectionActor.finish's does: its drainer gone, what it parked for itself kept
      // for the close to give back (OutputEnd.forceParked), b no longer among Output's parked readers.
      closePeer(b, "destroy")
      w.router.output.end.forceParked(b)
      const ownParked = b.parked.some(([to, item]) => to === b && carries([item], m2.id))
      assert.isTrue(ownParked, `m2 is not parked at b's closing reader: the test sets up nothing (parked ${b.parked.length})`)
      w.batch(w.d, [{ type: "cancel_message", messageId: m2.id }])
      const answers = w.answersOf(m2.id)
      assert.strictEqual(answers.at(-1), "delivered", `d's cancel of m2 was not answered delivered: ${answers}`)
      clock.now += HOUR + 1_000
      w.router.prune(clock.now)
      w.closeAbandoned(b)
      const seen = drainedSeen(w, w.registerB("b-2"))
      assert.include(seen, `message ${ms[0]!.id}`, "m0, never read, did not come back: the test checks nothing")
      assert.notInclude(seen, `message ${m2.id}`, "m2, cancelled while kept at b's closing reader, reached b's next instance")
    }))
})
