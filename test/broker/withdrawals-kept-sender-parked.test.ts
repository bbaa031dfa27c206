/**
 * Whether a withdrawal outlives its route is decided for the withdrawn
 * message itself (MayStillWait.ts's `mayStillWait`: found by its record key where
 * it may still wait), not by whether anything else waits (review revaw
 * AW1). Sender e has one unrelated message (x, to b) parked at its reader
 * behind b-1's full outbox, then cancels MAX_KEPT_WITHDRAWALS messages sink
 * was written at once: none of those withdrawals goes on the withdrawals'
 * list when its route ages, so they do not push d's withdrawal of m1 —
 * still unwritten in b-1's stuck outbox — off it. b-1's `unregister` hands
 * m1 back withdrawn, and b-1's return never gets m1, whose cancel d was
 * answered `delivered`. Hand-driven Router (controlWorld).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_KEPT_WITHDRAWALS } from "../../src/broker/KeptWithdrawals.ts"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, returnAfterTheHour } from "../support/controlWorld.ts"

const HOUR = 3_600_000

describe("a sender's ordinary cancels, with an unrelated message of its own parked, do not crowd a pending withdrawal off the list (review revaw AW1)", () => {
  it.effect("m1, cancelled while unwritten, never reaches b-1's return when their sender has one unrelated message parked", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, { mailboxRetention: 24 * HOUR, outboxCapacity: 2 }, clock)
      w.stick()
      const m0 = message("m0")
      const m1 = message("m1")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      assert.strictEqual(w.b1.outbox.length, 1, "m1 is not waiting in b-1's outbox: the test sets up nothing")
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      assert.deepStrictEqual(w.answersOf(m1.id), ["delivered", "delivered"], "d's cancel of m1 was not taken")
      const e = w.registerOther("e")
      const sink = w.registerOther("sink")
      // e has one unrelated message parked at its reader, behind b-1's full outbox.
      w.batch(e, [{ type: "send", to: "b", message: message("x") }])
      assert.isTrue(e.parked.length > 0, "x is not parked at e's reader: the test sets up nothing")
      for (let sent = 0; sent < MAX_KEPT_WITHDRAWALS; sent++) {
        const n = message(`n${sent}`)
        w.batch(e, [{ type: "send", to: "sink", message: n }])
        sink.writer.flush() // n is written: sink's client has it, nothing of n waits anywhere
        w.batch(e, [{ type: "cancel_message", messageId: n.id }])
        e.writer.flush()
        sink.writer.flush()
      }
      const seen = returnAfterTheHour(w, clock)
      assert.include(seen, `message ${m0.id}`, "m0, never confirmed, did not come back: the test checks nothing")
      assert.notInclude(seen, `message ${m1.id}`, "m1, cancelled (answered delivered) on its way, reached b-1's return")
      assert.notInclude(seen, `cancel ${m1.id}`, "b-1's return got a cancel of m1, which it never received")
    }), 120_000)
})
