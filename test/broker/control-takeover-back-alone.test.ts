/**
 * A cancel of a message the old client instance b-1 READ (confirmed, or a
 * base client's, written to it), still on b-1's connection when another
 * instance, b-2, took the session over: b-2 never had the message and must
 * not get the cancel; b-1 did, and its return after b-2 left gets it once,
 * as a parked control refused at b-1's closed connection while b-2 holds
 * the session is kept for it (control-parked-refused-kept.test.ts).
 *
 * - In b-1's write the socket never took (custody client), or in its outbox
 *   behind that write, kept on b-2's custody hold: b-1's close gives it back
 *   alone (MailReturns.giveBack → `keepAlone`), which dropped it while
 *   another instance was live. Both cases fail without keepAlone's keep.
 * - A base b-1 (no custody, so no hold), the cancel in its outbox: the
 *   takeover's hand-over (OutputEnd.handOver's `handOne`) dropped it. Fails
 *   without handOne's keep (`takeBack` with `keepRefused`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { baseFeatures, controlWorld as world, custodyFeatures } from "../support/controlWorld.ts"

const HOUR = 3_600_000

describe("a cancel given back alone at the old close of a takeover by another instance", () => {
  it.effect("b-2 is not given it; b-1's return after b-2 left is", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: HOUR })
      const m1 = message("m1")
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      w.batch(w.b1, [{ type: "received", frames: w.b1.framesWritten }])
      assert.strictEqual(w.b1.custody?.size, 0, "b-1 did not confirm m1: the test sets up nothing")
      w.stick()
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      assert.deepStrictEqual(w.controlsOf(w.b1), [], "the cancel reached b-1's socket: the test sets up nothing")
      const b2 = w.registerB("b-2")
      w.closeAbandoned(w.b1)
      assert.deepStrictEqual(w.controlsOf(b2), [], "b-2, which never had m1, got its cancel")
      w.batch(b2, [{ type: "unregister" }])
      const back = w.registerB("b-1")
      for (let n = 0; n < 20; n++) {
        w.framesOf(back)
        if (!w.tryDrain(back)) break
      }
      assert.deepStrictEqual(w.controlsOf(back).filter((c) => c.endsWith(m1.id)), [`cancel ${m1.id}`], "b-1 read m1 and was never told of its cancel")
    }))

  it.effect("the cancel still in b-1's outbox behind a stuck write at the takeover: b-2 is not given it; b-1's return after b-2 left is", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: HOUR })
      const m1 = message("m1")
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      w.batch(w.b1, [{ type: "received", frames: w.b1.framesWritten }])
      assert.strictEqual(w.b1.custody?.size, 0, "b-1 did not confirm m1: the test sets up nothing")
      w.stick()
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      assert.strictEqual(w.b1.outbox.length, 1, "the cancel is not waiting in b-1's outbox: the test sets up nothing")
      const b2 = w.registerB("b-2")
      w.closeAbandoned(w.b1)
      for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
        // each step offers one parked item
      }
      assert.deepStrictEqual(w.controlsOf(b2), [], "b-2, which never had m1, got its cancel")
      assert.deepStrictEqual(w.messagesOf(b2), [m0.id], "m0 did not reach b-2: the test checks nothing")
      w.batch(b2, [{ type: "unregister" }])
      const back = w.registerB("b-1")
      for (let n = 0; n < 20; n++) {
        w.framesOf(back)
        if (!w.tryDrain(back)) break
      }
      assert.deepStrictEqual(w.controlsOf(back).filter((c) => c.endsWith(m1.id)), [`cancel ${m1.id}`], "b-1 read m1 and was never told of its cancel")
    }))

  it.effect("a base b-1 (no custody), the cancel in its outbox behind a stuck write at the takeover: b-2 is not given it; b-1's return after b-2 left is", () =>
    Effect.gen(function*() {
      const w = yield* world(baseFeatures, { mailboxRetention: HOUR })
      const m1 = message("m1")
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      assert.deepStrictEqual(w.messagesOf(w.b1), [m1.id], "m1 was not written to b-1: the test sets up nothing")
      w.stick()
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      assert.strictEqual(w.b1.outbox.length, 1, "the cancel is not waiting in b-1's outbox: the test sets up nothing")
      const b2 = w.registerB("b-2", baseFeatures)
      w.closeAbandoned(w.b1)
      for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
        // each step offers one parked item
      }
      assert.deepStrictEqual(w.controlsOf(b2), [], "b-2, which never had m1, got its cancel")
      assert.deepStrictEqual(w.messagesOf(b2), [m0.id], "m0 did not reach b-2: the test checks nothing")
      w.batch(b2, [{ type: "unregister" }])
      const back = w.registerB("b-1", baseFeatures)
      for (let n = 0; n < 20; n++) {
        w.framesOf(back)
        if (!w.tryDrain(back)) break
      }
      assert.deepStrictEqual(w.controlsOf(back).filter((c) => c.endsWith(m1.id)), [`cancel ${m1.id}`], "b-1 read m1 and was never told of its cancel")
    }))
})
