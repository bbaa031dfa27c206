/**
 * A session that left its connection by `unregister` is known as gone so
 * however many sessions the connection held after it: a connection holds
 * one session at a time, so only its last one can have left by the close
 * (`Peer.leftBy`). Before, the connection remembered the newest eight keys
 * that left by `unregister`, so b, followed by eight other sessions cycled
 * through the connection, read as gone "by the close", and the cancel kept
 * for b-1, refused at that closed connection, held a memory broker's idle
 * exit for the mailbox's retention (review revbe BE1; the rule: revv V2,
 * revba BA2). Same setup as idle-exit-unregistered-then-other.test.ts, with
 * eight more sessions cycled through the connection.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { registerFrame } from "../support/broker.ts"
import { confirmedThenCancelParked, parkedControl } from "../support/controlWorld.ts"

const RETENTION_MS = 3_600_000

describe("a session that left by unregister, then eight others cycled through its connection (review revbe BE1)", () => {
  it.effect("the cancel kept for b-1, refused at the closed connection, does not hold the idle exit", () =>
    Effect.gen(function*() {
      const { w } = yield* confirmedThenCancelParked(RETENTION_MS)
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
      assert.strictEqual(w.router.stats().controlsKept, 1, "the cancel was not kept for b-1: the test checks nothing")
      assert.strictEqual(w.router.heldMail()?.controls ?? 0, 0, "b left by unregister, yet its refused control holds the idle exit")
    }))
})
