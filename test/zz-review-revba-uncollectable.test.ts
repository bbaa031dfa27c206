/**
 * Review revba BA1 (probe): a control kept for a client instance that no
 * registration can ever be again holds a memory broker's idle exit for the
 * mailbox's whole retention. A base client that sends no `instanceId` (e-1)
 * read m1 (written to it), d cancelled m1, the cancel still in e-1's outbox
 * behind a stuck write; another base client (e-2) took `e` over.
 * OutputEnd.handOne (new in f4e05966) keeps the cancel for e-1 with
 * "close", so it holds the exit. But e-1 can never come back: a takeover
 * by a client with no `instanceId` is never `takenBack`
 * (Registration.takenBack returns undefined), and once e-2 left,
 * ClientInstances.returning continues only the LAST holder, and only when
 * it registered with nothing known (e-2 did not) — every later
 * registration of `e` is a new instance. So the kept cancel is owed to no
 * one, yet the broker stays up for it (a day by default); the rule
 * (KeptControls.ts header, review revv V2) is that such controls must not
 * hold it. FAILS on main (f4e05966): heldMail().controls is 1.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "./support/broker.ts"
import { controlWorld as world, custodyFeatures } from "./support/controlWorld.ts"

const HOUR = 3_600_000

describe("revba BA1: a cancel kept at a base client's takeover for an instance that can never return", () => {
  it.effect("e-1 (no instanceId) read m1, its cancel left in e-1's outbox at e-2's takeover: the exit is not held for it, and no later e gets it", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: HOUR })
      const e1 = w.registerOther("e", {}, true)
      const m1 = message("m1")
      w.batch(w.d, [{ type: "send", to: "e", message: m1 }])
      assert.include(w.messagesOf(e1), m1.id, "m1 was not written to e-1: the test sets up nothing")
      w.stick()
      w.batch(w.d, [{ type: "send", to: "e", message: message("m0") }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      assert.strictEqual(e1.outbox.length, 1, "the cancel is not waiting in e-1's outbox: the test sets up nothing")
      const e2 = w.registerOther("e")
      assert.strictEqual(e2.state, "registered", "e-2 did not take e over: the test sets up nothing")
      w.closeAbandoned(e1)
      assert.notInclude(w.controlsOf(e2), `cancel ${m1.id}`, "e-2, which never had m1, got its cancel")
      // e-2 leaves; a third base client registers e: a new instance, given nothing of e-1's (as it must be).
      w.batch(e2, [{ type: "unregister" }])
      w.closeAbandoned(e2)
      const e3 = w.registerOther("e")
      assert.notInclude(w.controlsOf(e3), `cancel ${m1.id}`, "e-3, a new instance, got e-1's cancel")
      assert.strictEqual(w.router.heldMail()?.controls ?? 0, 0, "a cancel owed to an instance no registration can be holds a memory broker's idle exit")
    }))
})
