/**
 * Review revaw AW1 (probe): `mayStillWait` (src/broker/Receipts.ts:174-177)
 * asks whether ANY output waits at the receiver or is parked at the sender's
 * reader, not whether the withdrawn message does. Sender e has one unrelated
 * message (x, to b) parked at its reader behind b-1's full outbox; from then
 * on EVERY cancel e makes counts as "may still wait" — here
 * MAX_KEPT_WITHDRAWALS cancels of messages sink was written long before —
 * so each goes on the withdrawals' list when its route ages, and they push
 * d's withdrawal of m1 (truly unwritten in b-1's stuck outbox) off it: b-1's
 * `unregister` hands m1 back not withdrawn and b-1's return gets m1, whose
 * cancel d was answered `delivered` — the AO2 / AU2 failure fixau meant to
 * close. The baseline (e with nothing parked, as
 * withdrawals-kept-not-crowded.test.ts) passes; the first case with 10
 * cancels instead of MAX_KEPT_WITHDRAWALS passes too (checked by hand).
 * Hand-driven Router (controlWorld).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_KEPT_WITHDRAWALS } from "../src/broker/Receipts.ts"
import { message } from "./support/broker.ts"
import { controlWorld as world, custodyFeatures, messagesAndControls } from "./support/controlWorld.ts"

const HOUR = 3_600_000

describe("review revaw AW1: a sender's ordinary cancels, one unrelated message parked at its reader, crowd a pending withdrawal off the list", () => {
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
      clock.now += HOUR + 1_000
      w.router.prune(clock.now)
      w.batch(w.b1, [{ type: "unregister" }])
      for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
        // each step offers one parked item
      }
      w.closeAbandoned(w.b1)
      const back = w.registerB("b-1")
      for (let n = 0; n < 20; n++) {
        w.framesOf(back)
        if (!w.tryDrain(back)) break
      }
      const seen = messagesAndControls(w.framesOf(back))
      assert.include(seen, `message ${m0.id}`, "m0, never confirmed, did not come back: the test checks nothing")
      assert.notInclude(seen, `message ${m1.id}`, "m1, cancelled (answered delivered) on its way, reached b-1's return")
    }), 120_000)

  it.effect("baseline: the same with sink idle at each cancel (as withdrawals-kept-not-crowded.test.ts) passes", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, { mailboxRetention: 24 * HOUR, outboxCapacity: 2 }, clock)
      w.stick()
      const m0 = message("m0")
      const m1 = message("m1")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      const e = w.registerOther("e")
      const sink = w.registerOther("sink")
      for (let sent = 0; sent < MAX_KEPT_WITHDRAWALS; sent++) {
        const n = message(`n${sent}`)
        w.batch(e, [{ type: "send", to: "sink", message: n }])
        sink.writer.flush()
        w.batch(e, [{ type: "cancel_message", messageId: n.id }])
        e.writer.flush()
        sink.writer.flush()
      }
      clock.now += HOUR + 1_000
      w.router.prune(clock.now)
      w.batch(w.b1, [{ type: "unregister" }])
      for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
        // each step offers one parked item
      }
      w.closeAbandoned(w.b1)
      const back = w.registerB("b-1")
      for (let n = 0; n < 20; n++) {
        w.framesOf(back)
        if (!w.tryDrain(back)) break
      }
      const seen = messagesAndControls(w.framesOf(back))
      assert.include(seen, `message ${m0.id}`, "m0, never confirmed, did not come back: the test checks nothing")
      assert.notInclude(seen, `message ${m1.id}`, "m1, cancelled on its way, reached b-1's return")
    }), 120_000)
})
