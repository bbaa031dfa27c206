/**
 * A memory broker's idle exit (`Router.heldMail`, what Broker.ts's idle
 * watcher waits for) and a control kept for its reader's return because a
 * closed connection refused it (MailReturns.takeBack's `keepRefused`): it
 * holds the exit as a control given back alone at a close does
 * (idle-exit-kept-controls.test.ts), when the session it is for left that
 * connection by its close — refused at the drainer's offer, or forced at
 * its sender's close (OutputEnd.forceParked). It was kept not holding the
 * exit (review revau AU3: how the session left was not known there), so a
 * memory broker could exit and forget it while the mailbox's mail, kept for
 * the same absent session, held it up. The first two cases fail without
 * the fix.
 *
 * When that session left by `unregister` before the close (a client's
 * orderly shutdown), it does not hold the exit, as one kept at an
 * `unregister`'s hand-back does not (review revv V2,
 * idle-exit-unregister-kept-controls.test.ts) — and it is still kept for
 * that instance's return. The third case held before the fix too: it
 * guards the rule the fix keeps.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { confirmedThenCancelParked, parkedControl } from "../support/controlWorld.ts"

const RETENTION_MS = 3_600_000

/** b-1 confirmed m1; d's cancel of it parked at d's reader behind b-1's full outbox. */
const cancelParkedForB1 = Effect.gen(function*() {
  const { m1, w } = yield* confirmedThenCancelParked(RETENTION_MS)
  return { w, m1 }
})

/** Lets `reader`'s drainer offer what it parked, one item a step. */
const drain = (w: { readonly tryDrain: (reader: Peer) => boolean }, reader: Peer): void => {
  for (let n = 0; n < 20 && w.tryDrain(reader); n++) {
    // each step offers one parked item
  }
}

/** The controls b-1's return (registered now) is written, its own parked flush drained as it reads. */
const returnOfB1 = (w: Effect.Success<typeof cancelParkedForB1>["w"]): ReadonlyArray<string> => {
  const back = w.registerB("b-1")
  for (let n = 0; n < 20; n++) {
    w.framesOf(back)
    if (!w.tryDrain(back)) break
  }
  return w.controlsOf(back)
}

describe("a memory broker's idle exit and a control kept because a closed connection refused it", () => {
  it.effect("refused at the drainer's offer, b-1 gone by its close: held; b-1's return takes it", () =>
    Effect.gen(function*() {
      const { m1, w } = yield* cancelParkedForB1
      w.closeAbandoned(w.b1)
      drain(w, w.d)
      assert.isFalse(parkedControl(w.d, w.b1), "the cancel is still parked: the test checks nothing")
      assert.strictEqual(w.router.heldMail()?.controls, 1, "a control owed to b-1 does not hold the exit")
      assert.include(returnOfB1(w), `cancel ${m1.id}`)
    }))

  it.effect("forced at d's close, b-1 gone by its close: held", () =>
    Effect.gen(function*() {
      const { w } = yield* cancelParkedForB1
      w.closeAbandoned(w.b1)
      w.closeAbandoned(w.d)
      assert.strictEqual(w.router.heldMail()?.controls, 1, "a control owed to b-1 does not hold the exit")
    }))

  it.effect("b-1 unregistered, then closed: not held, still kept for b-1's return", () =>
    Effect.gen(function*() {
      const { m1, w } = yield* cancelParkedForB1
      w.batch(w.b1, [{ type: "unregister" }])
      w.closeAbandoned(w.b1)
      drain(w, w.d)
      assert.isFalse(parkedControl(w.d, w.b1), "the cancel is still parked: the test checks nothing")
      assert.strictEqual(w.router.heldMail()?.controls ?? 0, 0, "a control kept after an orderly shutdown holds the exit")
      assert.include(returnOfB1(w), `cancel ${m1.id}`, "not kept for b-1's return: the test checks nothing")
    }))
})
