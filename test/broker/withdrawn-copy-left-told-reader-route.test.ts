/**
 * A cancelled copy kept for b's base instance leaves the mailbox silently —
 * released at b-9's registration (MailDelivery.releaseCopies), pushed out by
 * the mailbox's bounds, or expired — while the cancel TOLD a live reader
 * (f-1, another session: P49's other holder), handing m0 on to f-1's
 * connection, whose write never completes. The route names f-1's write, not
 * the copy's reader: dropping it (`routes.lost`) cleared the record's
 * withdrawal, and past the replay record's hour f-1's close gave m0 back as
 * live mail to c (review revbx BX3). MailDelivery.copyLeft drops the route
 * only when it names one of the copy's readers. The world is
 * test/support/withdrawnCopyLeft.ts's `toldReader`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { BrokerCoreOptions } from "../../src/broker/options.ts"
import { custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"
import { message } from "../support/broker.ts"
import { copyLeftWorld, type CopyLeftWorld, HOUR, toldReader } from "../support/withdrawnCopyLeft.ts"

const scenario = (options: BrokerCoreOptions, leave: (w: CopyLeftWorld) => void) =>
  Effect.gen(function*() {
    const w = yield* copyLeftWorld(options)
    const { f1, m0 } = toldReader(w)
    leave(w)
    assert.strictEqual(w.router.stats().withdrawnCopiesHeld, 0, "the copy did not leave: the test sets up nothing")
    // Two hours on (past the replay record's hour), f-1's stuck connection closes, giving m0 back unwritten.
    w.clock.now += 2 * HOUR
    w.closeAbandoned(f1)
    // c returns: the session m0 was sent to, which never read it.
    const seen = messagesAndControls(w.framesOf(w.reg("c", {})))
    assert.isFalse(
      seen.includes(`message ${m0.id}`) && !seen.includes(`cancel ${m0.id}`),
      `m0, cancelled two hours ago (its sender answered cancelled), came back live to c: ${JSON.stringify(seen)}`
    )
  })

describe("a cancelled copy that leaves the mailbox keeps the route of a reader the cancel told", () => {
  it.effect("released at b-9's registration: m0, still unwritten to f-1, is not given live to c after the hour", () =>
    // b-9 registers b: b's base instance can never return, the rest copy goes (releaseCopies).
    scenario({}, (w) => {
      w.reg("b", { features: custodyFeatures, instanceId: "b-9" })
    }))

  it.effect("pushed out by the mailbox's bound: m0, still unwritten to f-1, is not given live to c after the hour", () =>
    // One more message for away c: the mailbox, bounded at one, pushes the oldest (the rest copy) out.
    scenario({ mailboxCapacity: 1 }, (w) => w.send("c", message("m1"))))

  it.effect("expired: m0, still unwritten to f-1, is not given live to c after the hour", () =>
    // Past the mailbox's retention (still within the route's hour), a registration prunes the mailbox.
    scenario({ mailboxRetention: "1 second" }, (w) => {
      w.clock.now += 2_000
      w.reg("g", {})
    }))
})
