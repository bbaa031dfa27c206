/**
 * A control kept at an `unregister` (helper unregctl) does not hold a
 * memory broker's idle exit (review revv V2). IntercomClient's orderly
 * close is `unregister`, then the connection's close, and a client given no
 * `instanceId` makes a new one per client: the instance such a control is
 * kept for mostly never registers again, and held it would keep the broker
 * up for the mailbox's retention (a day by default). It is still kept, for
 * the same instance registering again while the broker is up (pi's
 * `/reload`), and still ages out at the retention. A control kept at a
 * close still holds the exit (idle-exit-kept-controls.test.ts).
 *
 * On a Router driven by hand (controlWorld): `Router.heldMail` is what the
 * idle watcher (Broker.ts) waits for; the watcher's own sleep and exit are
 * tested on simulated time in idle-exit-held-mail.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"

const RETENTION_MS = 86_400_000

/** b-1 confirms m0, d cancels it, the cancel reaches b-1 unconfirmed; b-1 unregisters, then its connection closes. */
const orderlyCloseWithControlOut = (clock: { now: number }) =>
  Effect.gen(function*() {
    const w = yield* world(custodyFeatures, { mailboxRetention: RETENTION_MS }, clock)
    const m0 = message("m0")
    w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
    w.batch(w.b1, [{ type: "received", frames: w.b1.framesWritten }])
    assert.strictEqual(w.b1.custody?.size, 0, "b-1 did not confirm m0: the test sets up nothing")
    w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
    assert.deepStrictEqual(w.controlsOf(w.b1), [`cancel ${m0.id}`], "b-1 was not written the control")
    assert.strictEqual(w.router.heldMail(), undefined, "something is held already: the test sets up nothing")
    w.batch(w.b1, [{ type: "unregister" }])
    w.closeAbandoned(w.b1)
    return { w, m0 }
  })

describe("a control kept at an orderly close (unregister, then the connection closes)", () => {
  it.effect("it does not hold the idle exit, and b-1 registering again before the exit gets it", () =>
    Effect.gen(function*() {
      const { m0, w } = yield* orderlyCloseWithControlOut({ now: 1_000_000 })
      assert.strictEqual(w.router.heldMail(), undefined)
      const back = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(back)), [`cancel ${m0.id}`])
    }))

  it.effect("it still ages out at the mailbox's retention: b-1 registering after that gets nothing", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const { w } = yield* orderlyCloseWithControlOut(clock)
      clock.now += RETENTION_MS + 1
      const back = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(back)), [])
    }))
})
