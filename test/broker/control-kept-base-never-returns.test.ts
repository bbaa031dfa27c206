/**
 * A control given back alone with its session away is kept only for a
 * client instance that can still register as itself again
 * (Registration.mayReturn, MailReturns' `keepAlone`): a base client's
 * instance (no `instanceId`) that registered when the broker already knew
 * the id is a new instance that is not the one from before the start
 * (ClientInstances.returning), so no later registration ever continues it —
 * kept, its cancel held a memory broker's idle exit for the mailbox's
 * retention and was collected by no one (review revbe BE2, and the same for
 * a base takeover of a base holder). So is one parked at its sender's
 * reader and refused at such an instance's closed connection
 * (`keepRefused`). Each of those cases fails without that check. The last
 * case, a cancelled message such an instance read, too large for the
 * mailbox, checks only that no cancel is left kept for it: since review
 * revbk BK3, WithdrawnCopies.keepCancelled keeps no copy for a reader that
 * cannot return, so nothing is pushed out and MailReturns' `keepFor` (the
 * cancel of a copy pushed out at once, kept alone) never reaches its own
 * `mayReturn` check here; the case fails only with both checks removed
 * (seen), and keepCancelled's alone: cancelled-copy-base-never-returns.test.ts. The case where
 * such an instance CAN return (nothing known of the id) is
 * test/broker/control-kept-base-instance.test.ts.
 *
 * In each, e-1 (no `instanceId`) was written m1; d cancelled m1 with the
 * cancel stuck in e-1's outbox behind m0 (or parked at d's reader behind
 * it); e-1's connection dropped with e away, and the next base registration
 * of e (a new instance) gets m0 only.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { RECEIVED_V1, REJOIN_V1 } from "../../src/protocol/features.ts"
import type { Peer } from "../../src/broker/Peer.ts"
import { message } from "../support/broker.ts"
import {
  cancelInOutboxOf,
  cancelParkedThenClosed,
  type ControlWorld,
  controlWorld as world,
  custodyFeatures,
  parkedControl
} from "../support/controlWorld.ts"

const HOUR = 3_600_000

/** m1 written to `e1`, its cancel stuck in `e1`'s outbox behind m0, then `e1` dropped; what the close kept. */
const cancelGivenBackAlone = (w: ControlWorld, e1: Peer) => {
  const { m0, m1 } = cancelInOutboxOf(w, e1)
  w.closeAbandoned(e1)
  assert.strictEqual(w.router.stats().sessions, 2, "e is not away (b and d only are live): the test sets up nothing")
  return { m0, m1, kept: w.router.stats().controlsKept, holding: w.router.heldMail()?.controls ?? 0 }
}

/** The next base registration of e gets m0 and not m1's cancel: e-1 was not continued. */
const nextIsNewInstance = (w: ControlWorld, m0: { readonly id: string }, m1: { readonly id: string }): void => {
  const next = w.registerOther("e")
  // The mailbox's flush past a small outbox parks the rest at the new connection's own reader: let it drain.
  for (let n = 0; n < 20; n++) {
    w.framesOf(next)
    if (!w.tryDrain(next)) break
  }
  assert.include(w.messagesOf(next), m0.id, "m0 did not reach the next registration: the test checks nothing")
  assert.notInclude(w.controlsOf(next), `cancel ${m1.id}`, "the next base registration was taken for e-1")
  assert.strictEqual(w.router.stats().controlsKeptGiven, 0)
}

describe("a control given back alone for a base client's instance that can never register as itself again", () => {
  it.effect("after an instanceId holder of e left: not kept, and holds no idle exit", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: HOUR })
      const er = w.registerOther("e", {}, false, { features: [RECEIVED_V1, REJOIN_V1], instanceId: "e-r" })
      w.batch(er, [{ type: "unregister" }])
      const e1 = w.registerOther("e", {}, true)
      assert.strictEqual(e1.state, "registered", "base e-1 did not register e: the test sets up nothing")
      const { holding, kept, m0, m1 } = cancelGivenBackAlone(w, e1)
      assert.strictEqual(kept, 0, "m1's cancel was kept for e-1, which can never register as itself again")
      assert.strictEqual(holding, 0, "a cancel kept for e-1 holds the idle exit")
      nextIsNewInstance(w, m0, m1)
    }))

  it.effect("taking e over from a base holder (a new instance): not kept, and holds no idle exit", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: HOUR })
      const e0 = w.registerOther("e")
      const e1 = w.registerOther("e", {}, true)
      assert.strictEqual(e1.state, "registered", "base e-1 did not take e over: the test sets up nothing")
      assert.notStrictEqual(e0.session, e1.session, "e-0 still holds e: the test sets up nothing")
      const { holding, kept, m0, m1 } = cancelGivenBackAlone(w, e1)
      assert.strictEqual(kept, 0, "m1's cancel was kept for e-1, which can never register as itself again")
      assert.strictEqual(holding, 0, "a cancel kept for e-1 holds the idle exit")
      nextIsNewInstance(w, m0, m1)
    }))

  it.effect("after an instanceId holder of e left, a cancel parked at d's reader refused at e-1's closed connection: not kept", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: HOUR, outboxCapacity: 1 })
      const er = w.registerOther("e", {}, false, { features: [RECEIVED_V1, REJOIN_V1], instanceId: "e-r" })
      w.batch(er, [{ type: "unregister" }])
      const e1 = w.registerOther("e", {}, true)
      const m1 = message("m1")
      const { m0 } = cancelParkedThenClosed(w, e1, m1)
      assert.isFalse(parkedControl(w.d, e1), "the cancel was not offered at e-1's closed connection: the test checks nothing")
      assert.strictEqual(w.router.stats().sessions, 2, "e is not away (b and d only are live): the test sets up nothing")
      assert.strictEqual(w.router.stats().controlsKept, 0, "the refused cancel was kept for e-1, which can never register as itself again")
      assert.strictEqual(w.router.heldMail()?.controls ?? 0, 0, "a cancel kept for e-1 holds the idle exit")
      nextIsNewInstance(w, m0, m1)
    }))

  it.effect("a received-v1 client with no instanceId after an instanceId holder: its message, cancelled and too large for the mailbox, leaves no cancel kept for it (neither a copy nor a pushed-out cancel)", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: HOUR, outboxCapacity: 1, mailboxBytesPerTarget: 4_096 })
      const er = w.registerOther("e", {}, false, { features: [RECEIVED_V1, REJOIN_V1], instanceId: "e-r" })
      w.batch(er, [{ type: "unregister" }])
      const e1 = w.registerOther("e", {}, true, { features: [RECEIVED_V1] })
      const m1 = message("x".repeat(8_000))
      const { m0 } = cancelParkedThenClosed(w, e1, m1)
      assert.strictEqual(w.router.stats().sessions, 2, "e is not away (b and d only are live): the test sets up nothing")
      assert.strictEqual(w.router.stats().controlsKept, 0, "m1's cancel was kept for e-1, which can never register as itself again")
      assert.strictEqual(w.router.heldMail()?.controls ?? 0, 0, "a cancel kept for e-1 holds the idle exit")
      nextIsNewInstance(w, m0, m1)
    }))
})
