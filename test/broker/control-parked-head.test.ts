/**
 * A parked control taken out as the head of its reader's parked list while
 * that reader's drainer waits on it (ParkedDrain.dropControls; review revao):
 * m1 is written to b-1 (read, never confirmed); then b-1's writes stick, m0
 * is in a write its socket never takes and m2 fills b-1's outbox, so d's
 * cancel of m1 parks at d's reader as the head of its list (its `delivered`
 * answer behind it); d's drainer offers it and waits for room at b-1. b-1
 * unregisters: its hand-back gives m1 back, withdrawn on its way, and the
 * parked cancel goes with it; the drainer waiting on it, woken by the
 * hand-back's room, finds it gone and does not stall, and b-1's return gets
 * m1 and its cancel once (the kept copy's), not the parked one as well.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { ControlFrame } from "../../src/broker/ControlFrame.ts"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, drainedSeen } from "../support/controlWorld.ts"

describe("a parked control taken out as the head its reader's drainer waits on", () => {
  it.effect("the cancel leaves d's parked list, the drainer waiting on it ends, b-1's return gets m1 and one cancel", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: 3_600_000, outboxCapacity: 1 })
      const m1 = message("m1")
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      w.stick()
      w.batch(w.d, [{ type: "send", to: "b", message: message("m0") }])
      w.batch(w.d, [{ type: "send", to: "b", message: message("m2") }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      const head = w.router.output.drain.nextParked(w.d)
      if (head === undefined || !(head[1] instanceof ControlFrame)) {
        return assert.fail("the cancel is not d's parked head: the test sets up nothing")
      }
      const drainer = Effect.runFork(w.router.output.drain.offerParked(w.d, head))
      assert.isUndefined(drainer.pollUnsafe(), "d's drainer did not wait on its head: the test sets up nothing")
      w.batch(w.b1, [{ type: "unregister" }])
      assert.isFalse(w.d.parked.some(([, item]) => item instanceof ControlFrame), "the cancel of m1 is still parked at d's reader")
      assert.isDefined(drainer.pollUnsafe(), "d's drainer still waits on the cancel taken out of its list")
      yield* Fiber.interrupt(drainer)
      w.closeAbandoned(w.b1)
      const seen = drainedSeen(w, w.registerB("b-1"))
      assert.deepStrictEqual(seen.filter((s) => s.endsWith(m1.id)), [`message ${m1.id}`, `cancel ${m1.id}`])
    }))
})
