/**
 * Review revao AO2 (probe): the sim111 mark lives on the route. When m1's
 * route is gone before the hand-back (its hour, or MAX_ROUTES newer routes,
 * while m1 waits unwritten behind a stuck write and its cancel waits parked
 * at d's reader), Receipts.dropRoute finds no route and marks nothing
 * (`routeOf` undefined: `lostUnread` is a no-op), so the cancel given back
 * alone at the close is kept for b-1's return as before the fix: b-1's
 * return gets a cancel of m1, which it never received.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ControlFrame } from "../src/broker/ControlFrame.ts"
import type { Peer } from "../src/broker/Peer.ts"
import { message } from "./support/broker.ts"
import { controlWorld as world, custodyFeatures, messagesAndControls, type Seen } from "./support/controlWorld.ts"

const HOUR = 3_600_000

const parkedControl = (reader: Peer, recipient: Peer): boolean =>
  reader.parked.some(([to, item]) => to === recipient && item instanceof ControlFrame)

const drained = (w: { tryDrain: (reader: Peer) => boolean; framesOf: (peer: Peer) => ReadonlyArray<Seen> }, peer: Peer) => {
  for (let n = 0; n < 20; n++) {
    w.framesOf(peer)
    if (!w.tryDrain(peer)) break
  }
  return messagesAndControls(w.framesOf(peer))
}

describe("review revao AO2: a parked cancel whose message's route aged out before the hand-back", () => {
  it.effect("b-1's return gets no cancel of m1, dropped unread after its route's hour", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, { mailboxRetention: 24 * HOUR, outboxCapacity: 1 }, clock)
      w.stick()
      const m0 = message("m0")
      const m1 = message("m1")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      assert.isTrue(parkedControl(w.d, w.b1), "the cancel is not parked at d's reader: the test sets up nothing")
      clock.now += HOUR + 1_000
      w.router.prune(clock.now)
      w.batch(w.b1, [{ type: "unregister" }])
      for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
        // each step offers one parked item
      }
      assert.isFalse(parkedControl(w.d, w.b1), "the cancel is still parked at d's reader: the test checks nothing")
      w.closeAbandoned(w.b1)
      const back = w.registerB("b-1")
      const seen = drained(w, back)
      assert.notInclude(seen, `message ${m1.id}`, "m1, cancelled on its way, reached b-1's return")
      assert.notInclude(seen, `cancel ${m1.id}`, "b-1's return got a cancel of m1, which it never received")
    }))
})
