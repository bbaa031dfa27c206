/**
 * What a client's own rejoin (`rejoin-v1`, the same instanceId) takes from
 * its old connection at its `register` — the custody its client never
 * confirmed, then the untaken rest of the write in progress
 * (Router.abandoned) — goes to the new connection through
 * `Output.undeliverable` (Registration). A control frame among it is not
 * dropped there: the new connection is the same client instance, the one
 * its message's route names, so MailReturns.takeBack forwards it. A
 * guarantee these tests document (they pass without any change of this
 * branch): b-1 read and confirmed m1, its cancel was written to b-1 (in
 * custody, unconfirmed) or stuck in b-1's write, and b-1's rejoin gets the
 * cancel exactly once.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures } from "../support/controlWorld.ts"

describe("a cancel of a message b-1 read, on b-1's old connection at its own rejoin", () => {
  it.effect("written to b-1 and not confirmed (in its custody): the rejoin gets it once", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures)
      const m1 = message("m1")
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      w.batch(w.b1, [{ type: "received", frames: w.b1.framesWritten }])
      assert.strictEqual(w.b1.custody?.size, 0, "b-1 did not confirm m1: the test sets up nothing")
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      assert.deepStrictEqual(w.controlsOf(w.b1), [`cancel ${m1.id}`], "the cancel was not written to b-1: the test sets up nothing")
      assert.strictEqual(w.b1.custody?.size, 1, "the cancel is not in b-1's custody: the test sets up nothing")
      const again = w.registerB("b-1")
      w.closeAbandoned(w.b1)
      assert.deepStrictEqual(
        { controls: w.controlsOf(again), messages: w.messagesOf(again) },
        { controls: [`cancel ${m1.id}`], messages: [] }
      )
    }))

  it.effect("in b-1's write the socket never took: the rejoin gets it once", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures)
      const m1 = message("m1")
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      w.batch(w.b1, [{ type: "received", frames: w.b1.framesWritten }])
      assert.strictEqual(w.b1.custody?.size, 0, "b-1 did not confirm m1: the test sets up nothing")
      w.stick()
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      assert.deepStrictEqual(w.controlsOf(w.b1), [], "the cancel reached b-1's socket: the test sets up nothing")
      const again = w.registerB("b-1")
      w.closeAbandoned(w.b1)
      assert.deepStrictEqual(
        { controls: w.controlsOf(again), messages: w.messagesOf(again) },
        { controls: [`cancel ${m1.id}`], messages: [] }
      )
    }))
})
