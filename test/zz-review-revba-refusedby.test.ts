/**
 * Review revba BA2 (probe): Output.ts `refusedBy(recipient)` decides whether
 * a control kept because a connection refused it holds a memory broker's
 * idle exit from the refusing CONNECTION's state now, not from how the
 * control's session (`control.to`) left it. A connection whose session b
 * left by `unregister` and which then registered session c is "registered"
 * (or, closed later, `closedUnregistered` false): b's refused control is
 * taken as left "by its close" and holds the exit, which the rule (review
 * revv V2, idle-exit-refused-kept-controls.test.ts's third case) says it
 * must not. FAILS on main (f4e05966). (While that connection stays
 * registered as c, the same read gives "close" too; not probed: the
 * parked cancel waits for c's stuck outbox here.)
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../src/broker/Peer.ts"
import { message, registerFrame } from "./support/broker.ts"
import { controlWorld as world, custodyFeatures, parkedControl } from "./support/controlWorld.ts"

const RETENTION_MS = 3_600_000

/** b-1 confirmed m1; d's cancel of it parked at d's reader behind b-1's full outbox. */
const cancelParkedForB1 = Effect.gen(function*() {
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
  return { w, m1 }
})

const drain = (w: { readonly tryDrain: (reader: Peer) => boolean }, reader: Peer): void => {
  for (let n = 0; n < 20 && w.tryDrain(reader); n++) {
    // each step offers one parked item
  }
}

describe("revba BA2: refusedBy reads the refusing connection's state, not how the control's session left", () => {
  it.effect("b unregistered, the connection registered c, then closed: b's refused control does not hold the exit", () =>
    Effect.gen(function*() {
      const { w } = yield* cancelParkedForB1
      w.batch(w.b1, [{ type: "unregister" }])
      w.batch(w.b1, [registerFrame({ sessionId: "c" })])
      w.closeAbandoned(w.b1)
      drain(w, w.d)
      assert.isFalse(parkedControl(w.d, w.b1), "the cancel is still parked: the test checks nothing")
      assert.strictEqual(w.router.heldMail()?.controls ?? 0, 0, "b left by unregister, yet its refused control holds the idle exit")
    }))
})
