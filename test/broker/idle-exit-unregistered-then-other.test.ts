/**
 * A control kept for session b's instance holds no memory broker's idle
 * exit when b left its connection by `unregister` (review revv V2) — also
 * when that connection then registered another session, c, before it
 * closed (review revba BA2). How b left was read from the connection's
 * state at the refusal or the close, which says how its LAST session left
 * (c's, by the close); now the connection remembers which sessions left it
 * by `unregister` (`Peer.leftBy`, by session key).
 *
 * - Refused: b-1 confirmed m1; d's cancel of it parked at d's reader behind
 *   b-1's full outbox; b unregisters, the connection registers c and closes;
 *   the cancel, refused there, is kept for b-1 (Output.refused). Fails
 *   without `leftBy` by key in Output.refused. And the converse: b itself
 *   registered on that connection again and left by its close holds it
 *   (fails without `Peer.registeredHere`).
 * - Given back: a base b-1's cancel queued behind a write in progress at its
 *   `unregister` comes back only at the close (Custody.handBack); the
 *   connection registered c meanwhile. Fails without `leftBy` by key in
 *   Registration.detach. The cancel is still kept, and b-1's return gets it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message, registerFrame } from "../support/broker.ts"
import { baseFeatures, confirmedThenCancelParked, controlWorld as world, custodyFeatures, messagesAndControls, parkedControl } from "../support/controlWorld.ts"

const RETENTION_MS = 3_600_000

/** b-1 confirmed m1; d's cancel of it parked at d's reader behind b-1's full outbox (a socket that takes nothing). */
const cancelParkedForB1 = Effect.gen(function*() {
  const { w } = yield* confirmedThenCancelParked(RETENTION_MS)
  const refusedAtClose = (): void => {
    w.closeAbandoned(w.b1)
    for (let n = 0; n < 20 && w.tryDrain(w.d); n++) {
      // each step offers one parked item
    }
    assert.isFalse(parkedControl(w.d, w.b1), "the cancel is still parked: the test checks nothing")
    assert.strictEqual(w.router.stats().controlsKept, 1, "the cancel was not kept for b-1: the test checks nothing")
  }
  return { w, refusedAtClose }
})

describe("a control of session b kept after b unregistered and its connection registered c", () => {
  it.effect("refused at the closed connection: it does not hold the idle exit", () =>
    Effect.gen(function*() {
      const { refusedAtClose, w } = yield* cancelParkedForB1
      w.batch(w.b1, [{ type: "unregister" }])
      w.batch(w.b1, [registerFrame({ sessionId: "c" })])
      assert.strictEqual(w.b1.state, "registered", "the connection did not register c: the test sets up nothing")
      refusedAtClose()
      assert.strictEqual(w.router.heldMail()?.controls ?? 0, 0, "b left by unregister, yet its refused control holds the idle exit")
    }))

  it.effect("b registered on that connection again and left by its close: the refused control holds the idle exit", () =>
    Effect.gen(function*() {
      const { refusedAtClose, w } = yield* cancelParkedForB1
      w.batch(w.b1, [{ type: "unregister" }])
      w.batch(w.b1, [registerFrame({ sessionId: "b", frame: { features: custodyFeatures, instanceId: "b-1" } })])
      assert.strictEqual(w.b1.state, "registered", "the connection did not register b again: the test sets up nothing")
      refusedAtClose()
      assert.strictEqual(w.router.heldMail()?.controls, 1, "b left by its close at last, yet its refused control does not hold the idle exit")
    }))

  it.effect("a base client's, given back at the close behind its write: it does not hold the idle exit, and b-1's return gets it", () =>
    Effect.gen(function*() {
      const w = yield* world(baseFeatures, { mailboxRetention: RETENTION_MS })
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      assert.deepStrictEqual(w.messagesOf(w.b1), [m0.id], "m0 was not written to b-1: the test sets up nothing")
      w.stick()
      const mx = message("mx")
      w.batch(w.d, [{ type: "send", to: "b", message: mx }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.ok(w.b1.writer.inFlight !== undefined && w.b1.outbox.length > 0, "the cancel is not behind a write in progress: the test sets up nothing")
      w.batch(w.b1, [{ type: "unregister" }])
      w.batch(w.b1, [registerFrame({ sessionId: "c" })])
      assert.strictEqual(w.b1.state, "registered", "the connection did not register c: the test sets up nothing")
      w.closeAbandoned(w.b1)
      assert.strictEqual(w.router.stats().controlsKept, 1, "the cancel was not kept for b-1: the test checks nothing")
      assert.strictEqual(w.router.heldMail()?.controls ?? 0, 0, "b left by unregister, yet its control given back at the close holds the idle exit")
      const back = w.registerB("b-1", baseFeatures)
      assert.deepStrictEqual(messagesAndControls(w.framesOf(back)), [`cancel ${m0.id}`, `message ${mx.id}`])
    }))
})
