/**
 * Review L2 (helper wdcopy): a message written to a `received-v1` client and
 * left unconfirmed for more than an hour — past the pruning of its receipt
 * route and replay record — before the connection drops still goes back to
 * the mailbox marked read by that client instance (custody says who it was
 * written to: WithdrawnCopies.ts), so a cancel of it there is kept for that
 * instance's return, which gets the message and the cancel.
 *
 * On a Router driven by hand (control-instance.test.ts's world): writes
 * complete at once, and each connection's frames are recorded.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"

const HOUR = 3_600_000

/** m0 written to b-1, unconfirmed two hours (route and record pruned), then b-1 drops and d cancels m0. */
const cancelledAfterAnOldWrite = Effect.gen(function*() {
  const clock = { now: 1_000_000 }
  const w = yield* world(custodyFeatures, {}, clock)
  const m0 = message("m0")
  w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
  assert.strictEqual(w.b1.custody?.size, 1, "m0 is not in b-1's custody: the test sets up nothing")
  clock.now += 2 * HOUR
  // The clean-ups every send runs first (Send.prune; the idle watcher too): routes and records past the hour go.
  w.router.prune(clock.now)
  w.closeAbandoned(w.b1)
  w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
  return { w, m0 }
})

describe("L2: a copy written more than an hour before its connection dropped, then cancelled in the mailbox", () => {
  it.effect("the same instance's return gets the message and the cancel", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* cancelledAfterAnOldWrite
      const again = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(again)), [`message ${m0.id}`, `cancel ${m0.id}`])
    }))

  it.effect("another instance's registration gets neither", () =>
    Effect.gen(function*() {
      const { w } = yield* cancelledAfterAnOldWrite
      const b2 = w.registerB("b-2")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(b2)), [])
    }))
})
