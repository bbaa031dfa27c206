/**
 * The takeover custody hold's counters (`BrokerStats.custodyHolds*`,
 * CustodyHold.ts "Counted"): what the simulation's summary reads to show a
 * sweep reached the hold. On a Router driven by hand, with the setups of
 * takeover-custody-order.test.ts (test/support/custodyHold.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import type { Router, RouterStats } from "../../src/broker/Router.ts"
import { registerFrame } from "../support/broker.ts"
import { setUp } from "../support/custodyHold.ts"
import { fakeConnection } from "../support/fakeConnection.ts"

/** The custody hold counters of `router`'s stats. */
const holdCounts = (router: Router): Pick<
  RouterStats,
  | "custodyHoldsTaken"
  | "custodyHoldsCarried"
  | "custodyHoldsAdopted"
  | "custodyHeldMessages"
  | "custodyHeldWaits"
  | "custodyHeldDepartures"
  | "custodyHeldReturns"
> => {
  const s = router.stats()
  return {
    custodyHoldsTaken: s.custodyHoldsTaken,
    custodyHoldsCarried: s.custodyHoldsCarried,
    custodyHoldsAdopted: s.custodyHoldsAdopted,
    custodyHeldMessages: s.custodyHeldMessages,
    custodyHeldWaits: s.custodyHeldWaits,
    custodyHeldDepartures: s.custodyHeldDepartures,
    custodyHeldReturns: s.custodyHeldReturns
  }
}

const none = {
  custodyHoldsTaken: 0,
  custodyHoldsCarried: 0,
  custodyHoldsAdopted: 0,
  custodyHeldMessages: 0,
  custodyHeldWaits: 0,
  custodyHeldDepartures: 0,
  custodyHeldReturns: 0
}

/** One try of `reader`'s drainer on its oldest parked item: a wait is abandoned (interrupted). */
const offerOnce = (router: Router, reader: Peer): void => {
  const entry = router.output.drain.nextParked(reader)
  if (entry === undefined) return
  Effect.runSync(Fiber.interrupt(Effect.runFork(router.output.drain.offerParked(reader, entry))))
}

describe("the custody hold's counters", () => {
  it.effect("a takeover with mail unconfirmed in the old custody: a hold taken, a held sender's wait, its kept mail and departure, a carry-over", () =>
    Effect.gen(function*() {
      const { close, closeOld, router, send, sender, takeOver, takeOverAs } = yield* setUp()
      takeOver()
      assert.deepStrictEqual(holdCounts(router), { ...none, custodyHoldsTaken: 1 })
      assert.isTrue(send(sender, "m2"), "m2 was not held: the test sets up nothing")
      offerOnce(router, sender)
      assert.strictEqual(holdCounts(router).custodyHeldWaits, 1, "the sender's drainer did not wait for the hold")
      // The sender's connection closes: m2 is forced to the hold and kept, d's departure withheld behind it.
      close(sender)
      assert.deepStrictEqual(holdCounts(router), { ...none, custodyHoldsTaken: 1, custodyHeldWaits: 1, custodyHeldMessages: 1, custodyHeldDepartures: 1 })
      // A third instance takes b over before the old close: the hold is carried, not taken anew.
      takeOverAs(5, "b-3", [])
      closeOld()
      assert.deepStrictEqual(holdCounts(router), {
        ...none,
        custodyHoldsTaken: 1,
        custodyHoldsCarried: 1,
        custodyHeldWaits: 1,
        custodyHeldMessages: 1,
        custodyHeldDepartures: 1
      })
    }))

  it.effect("a held sender that left returns before the hold ends: its return counted as withheld with its departure", () =>
    Effect.gen(function*() {
      const { attach, batch, close, router, send, sender, takeOver } = yield* setUp()
      takeOver()
      assert.isTrue(send(sender, "m2"), "m2 was not held: the test sets up nothing")
      close(sender)
      batch(attach(fakeConnection(9, false)), [registerFrame({ sessionId: "d" })])
      assert.deepStrictEqual(holdCounts(router), { ...none, custodyHoldsTaken: 1, custodyHeldMessages: 1, custodyHeldDepartures: 1, custodyHeldReturns: 1 })
    }))

  it.effect("the session registered anew after its holder closed: the hold adopted, the mailbox's flush of a held sender's mail kept on it", () =>
    Effect.gen(function*() {
      const { awayThenAnew, router } = yield* setUp()
      awayThenAnew()
      assert.deepStrictEqual(holdCounts(router), { ...none, custodyHoldsTaken: 1, custodyHoldsAdopted: 1, custodyHeldMessages: 1 })
    }))

  it.effect("no takeover: the same mail and departure count no hold", () =>
    Effect.gen(function*() {
      const { close, closeOld, router, send, sender } = yield* setUp()
      assert.isFalse(send(sender, "m2"))
      close(sender)
      closeOld()
      assert.deepStrictEqual(holdCounts(router), none)
    }))

  it.effect("a takeover of a client that confirmed all it read counts no hold", () =>
    Effect.gen(function*() {
      const { batch, old, router, send, sender, takeOver } = yield* setUp()
      batch(old, [{ type: "received", frames: old.framesWritten }])
      takeOver()
      assert.isFalse(send(sender, "m2"))
      assert.deepStrictEqual(holdCounts(router), none)
    }))
})
