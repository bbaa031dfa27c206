/**
 * What "the same client instance" is for a control kept for a client that
 * sends no `instanceId` (review revba BA4, decided: documented, not
 * changed). The broker cannot tell such a client's reconnect from a new
 * process: the next registration of the id with no `instanceId` continues
 * its instance when it registered with nothing known of the id
 * (ClientInstances.returning), as for every control it routes, so it is
 * given the kept control — a new process of that client would be given a
 * cancel of a message it never received (docs/protocol.md, "Receipts and
 * control": the limit, and why this package's clients, which always send an
 * `instanceId`, are never taken so). A registration with an `instanceId` is
 * another client: it is given none, and the control goes then, since e-1
 * can never register as itself again (KeptControls.takeFor's `mayReturn`;
 * kept, it held a memory broker's idle exit for the mailbox's retention:
 * review revba BA1's case with the session away). That case fails without
 * the drop.
 *
 * e-1 (no `instanceId`, nothing known of `e`) was written m1; d cancelled
 * m1 with the cancel stuck in e-1's outbox behind m0; e-1's connection
 * dropped, the cancel kept for e-1 (MailReturns' `keepAlone`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { RECEIVED_V1, REJOIN_V1 } from "../../src/protocol/features.ts"
import { cancelInOutboxOf, controlWorld as world, custodyFeatures } from "../support/controlWorld.ts"

const HOUR = 3_600_000

/** e-1 dropped with m1's cancel kept for it and m0 in the mailbox. */
const cancelKeptForBaseE1 = Effect.gen(function*() {
  const w = yield* world(custodyFeatures, { mailboxRetention: HOUR })
  const e1 = w.registerOther("e", {}, true)
  const { m0, m1 } = cancelInOutboxOf(w, e1)
  w.closeAbandoned(e1)
  assert.strictEqual(w.router.stats().controlsKept, 1, "the cancel was not kept for e-1: the test sets up nothing")
  return { w, m0, m1 }
})

describe("a control kept for a client instance that sent no instanceId", () => {
  it.effect("the next registration of e with none continues e-1 (it may be a new process): it is given m0 and the cancel", () =>
    Effect.gen(function*() {
      const { m0, m1, w } = yield* cancelKeptForBaseE1
      const next = w.registerOther("e")
      assert.include(w.messagesOf(next), m0.id, "m0 did not reach the next registration: the test checks nothing")
      assert.include(w.controlsOf(next), `cancel ${m1.id}`, "the registration the broker takes for e-1 was not given its kept cancel")
      assert.strictEqual(w.router.stats().controlsKeptGiven, 1)
    }))

  it.effect("a registration of e with an instanceId (another client) is given m0 but not the cancel, which goes: e-1 can never return", () =>
    Effect.gen(function*() {
      const { m0, m1, w } = yield* cancelKeptForBaseE1
      assert.strictEqual(w.router.heldMail()?.controls, 1, "the cancel kept at e-1's close does not hold the idle exit: the test checks nothing")
      const other = w.registerOther("e", {}, false, { features: [RECEIVED_V1, REJOIN_V1], instanceId: "e-9" })
      assert.include(w.messagesOf(other), m0.id, "m0 did not reach the registration: the test checks nothing")
      assert.notInclude(w.controlsOf(other), `cancel ${m1.id}`, "a client that sent an instanceId was given e-1's cancel")
      assert.strictEqual(w.router.stats().controlsKeptGiven, 0, "the kept cancel was given to another client")
      // e-9 now holds e: a registration with no instanceId continues only the id's last holder, so e-1 never again.
      assert.strictEqual(w.router.heldMail()?.controls ?? 0, 0, "a cancel kept for an instance that can never return holds the idle exit")
      w.batch(other, [{ type: "unregister" }])
      const later = w.registerOther("e")
      assert.notInclude(w.controlsOf(later), `cancel ${m1.id}`, "a later base registration, a new instance, was given e-1's cancel")
    }))
})
