/**
 * Review revbe BE1 probe: `Peer.leftByUnregister` remembers only the newest
 * 8 session keys that left a connection by `unregister` (MAX_UNREGISTERED).
 * A connection whose session b left by `unregister`, and which then
 * registered and unregistered eight other sessions before it closed, reads
 * b as gone "by the close": the cancel kept for b-1, refused at that closed
 * connection, holds a memory broker's idle exit for the mailbox's retention,
 * though b left by `unregister` (review revv V2, revba BA2). Same setup as
 * test/broker/idle-exit-unregistered-then-other.test.ts, with eight more
 * sessions cycled through the connection. FAILS on main.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message, registerFrame } from "./support/broker.ts"
import { controlWorld as world, custodyFeatures, parkedControl } from "./support/controlWorld.ts"

const RETENTION_MS = 3_600_000

describe("revbe BE1: a session that left by unregister, then eight others cycled through its connection", () => {
  it.effect("the cancel kept for b-1, refused at the closed connection, does not hold the idle exit", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: RETENTION_MS, outboxCapacity: 1 })
      const m1 = message("m1")
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      w.batch(w.b1, [{ type: "received", frames: w.b1.framesWritten }])
      assert.strictEqual(w.b1.custody?.size, 0, "b-1 did not confirm m1: the test sets up nothing")
      w.stick()
      w.batch(w.d, [{ type: "send", to: "b", message: message("m0") }])
      w.batch(w.d, [{ type: "send", to: "b", message: message("m2") }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      assert.isTrue(parkedControl(w.d, w.b1), "the cancel is not parked at d's reader: the test sets up nothing")
      w.batch(w.b1, [{ type: "unregister" }])
      for (let n = 1; n <= 8; n++) {
        w.batch(w.b1, [registerFrame({ sessionId: `c${n}` })])
        assert.strictEqual(w.b1.state, "registered", `the connection did not register c${n}: the test sets up nothing`)
        w.batch(w.b1, [{ type: "unregister" }])
        assert.strictEqual(w.b1.state, "unregistered", `c${n} did not unregister: the test sets up nothing`)
      }
      assert.isTrue(parkedControl(w.d, w.b1), "the cancel is no longer parked: the test checks nothing")
      w.closeAbandoned(w.b1)
      for (let n = 0; n < 20 && w.tryDrain(w.d); n++) {
        // each step offers one parked item
      }
      assert.isFalse(parkedControl(w.d, w.b1), "the cancel is still parked: the test checks nothing")
      assert.strictEqual(w.router.stats().keptControls, 1, "the cancel was not kept for b-1: the test checks nothing")
      assert.strictEqual(w.router.heldMail()?.controls ?? 0, 0, "b left by unregister, yet its refused control holds the idle exit")
    }))
})
