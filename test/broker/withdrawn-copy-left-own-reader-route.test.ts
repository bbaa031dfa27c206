/**
 * A cancelled copy kept for its OWN reader (b's base client, written m0 and
 * dropped unconfirmed, so m0's route names the write given back as the copy)
 * leaves the mailbox — released at b-9's registration, pushed out by the
 * mailbox's bound, or expired — and its route goes with it
 * (MailDelivery.copyLeft). What the route still carried is the proof: a
 * receipt a client registered as b sends for m0 after that reaches d no more
 * (Receipts.forward follows only a route that is kept). Each fails with the
 * route always kept. A resend under m0's id after m0's replay record went,
 * to another session, no longer replaces the copy (the mailbox keeps a
 * message per target session, task mailkey2): b's return is given the copy
 * and its cancel, and the other session the resend. The world is
 * test/support/withdrawnCopyLeft.ts's `ownReader`; every step stays within
 * the route's hour.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { BrokerCoreOptions } from "../../src/broker/options.ts"
import type { Peer } from "../../src/broker/Peer.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"
import { copyLeftWorld, type CopyLeftWorld, ownReader, receiptsOf, textsOf } from "../support/withdrawnCopyLeft.ts"

/**
 * `ownReader`'s copy leaves by `leave`, which returns the connection registered as b that then says it read
 * m0: d is not told.
 */
const scenario = (options: BrokerCoreOptions, leave: (w: CopyLeftWorld, m0: ReturnType<typeof message>) => Peer) =>
  Effect.gen(function*() {
    const w = yield* copyLeftWorld(options)
    // c, known and away, of an identity of its own (b's return takes none of its mail): where the resend goes.
    w.closeAbandoned(w.reg("c", {}, "C"))
    const { m0 } = ownReader(w)
    const b = leave(w, m0)
    assert.strictEqual(w.router.stats().withdrawnCopiesHeld, 0, "the copy did not leave: the test sets up nothing")
    w.receipt(b, m0.id)
    assert.deepStrictEqual(
      receiptsOf(w.framesOf(w.d), m0.id),
      [],
      "a receipt for m0 reached d along the route of the copy that left: the route was kept"
    )
  })

/** b's base client registers again (the copy gone, it takes nothing of m0). */
const baseReturns = (w: CopyLeftWorld): Peer => w.reg("b", { features: [RECEIVED_V1] })

describe("a cancelled copy that leaves the mailbox drops the route of its own reader", () => {
  it.effect("released at b-9's registration: b-9's receipt for m0 does not reach d", () =>
    // b-9 registers b: b's base instance can never return, the copy goes (releaseCopies).
    scenario({}, (w) => w.reg("b", { features: custodyFeatures, instanceId: "b-9" })))

  it.effect("pushed out by the mailbox's bound: a receipt for m0 from b, back, does not reach d", () =>
    scenario({ mailboxCapacity: 1 }, (w) => {
      // One more message for away c: the mailbox, bounded at one, pushes the oldest (the copy) out.
      w.send("c", message("m1"))
      return baseReturns(w)
    }))

  it.effect("expired: a receipt for m0 from b, back, does not reach d", () =>
    scenario({ mailboxRetention: "1 second" }, (w) => {
      // Past the mailbox's retention (within the route's hour), a registration prunes the mailbox.
      w.clock.now += 2_000
      w.reg("g", {})
      return baseReturns(w)
    }))

  it.effect("not replaced by a resend under m0's id to another session, its record gone: b's return gets the copy and its cancel, c's the resend", () =>
    Effect.gen(function*() {
      // One replay record kept: d's next send pushes m0's out (its route stays), so a send under m0's id is new.
      const w = yield* copyLeftWorld({ replayRecords: 1 })
      w.closeAbandoned(w.reg("c", {}, "C"))
      const { m0 } = ownReader(w)
      w.send("c", message("m1"))
      w.send("c", { ...m0, content: { text: "m0 again" } })
      assert.strictEqual(w.router.stats().withdrawnCopiesHeld, 1, "the resend to c took the place of the copy kept for b")
      const b = baseReturns(w)
      assert.deepStrictEqual(messagesAndControls(w.framesOf(b)), [`message ${m0.id}`, `cancel ${m0.id}`], "b's return was not given the copy and its cancel")
      assert.deepStrictEqual(textsOf(w.framesOf(b), m0.id), [m0.content.text], "b's return was given another message under m0's id")
      const c = w.reg("c", {}, "C")
      assert.deepStrictEqual(textsOf(w.framesOf(c), m0.id), ["m0 again"], "c's return was not given the resend")
    }))
})
