/**
 * A cancelled message given back after a resend that shares its stamp
 * (review revcc, item 3, its probe 1): the broker's stamps never go below
 * the last one given (BrokerStamps.at), so after the clock steps back they
 * stand still. Here a stamp is given three hours ahead of the clock, which
 * then reads earlier; toldReader's m0 is sent and cancelled while f-1's
 * write of it is stuck, and past its hour by the clock d resends under m0's
 * id: m0 and the resend carry the same `brokerReceivedAt`. By the contracts
 * c's return gets the resend alone: a message its sender cancelled, given
 * back unwritten or unconfirmed, is not queued again, and one given back
 * after a new send under its id, with its fingerprint and not a later stamp,
 * goes silently (docs/protocol.md, "Receipts and control"); the resend is a
 * new message and is delivered. (No contract in contracts.md covers it.)
 *
 * Rewritten with the age lists' fix (stamps5): this world used to find the
 * withdrawal only because m0's replay record outlived its hour — z's record,
 * kept before the step, stopped DeliveryRecords.prune's walk (and z's route
 * stopped Receipts.prune's, so m0's route was still there for the resend's
 * queue path to drop with its withdrawal). Now every entry kept before the
 * step counts from it (OutboundRecords' re-dating): at the resend m0's record
 * and route are both past their hour, the route's withdrawal is on the
 * withdrawals' list (f-1's write may still hold m0), and the resend's keep
 * notes that forgotten withdrawal; withdrawnBeforeResend tells the stamp tie
 * apart by the fingerprints, so f-1's give-back of m0 goes silently. The
 * clock is a plain number moved by hand, no sleep; the step back is the
 * modelled fault.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { copyLeftWorld, HOUR, textsOf, toldReader } from "../support/withdrawnCopyLeft.ts"

describe("a cancelled message given back after a resend, the clock stepped back", () => {
  it.effect("c's return gets the resend's text, not the cancelled one", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 + 3 * HOUR }
      const w = yield* copyLeftWorld({}, clock)
      // A stamp given at the later reading (z is no holder of c's identity).
      w.reg("z", {}, "Z")
      w.send("z", message("before the step back"))
      // The clock steps back three hours.
      clock.now = 1_000_000
      const { f1, m0 } = toldReader(w)
      w.clock.now += HOUR + 1_000
      w.send("c", { ...m0, content: { text: "m0 again" } })
      assert.strictEqual(w.router.stats().withdrawnCopiesHeld, 0, "the resend did not replace the copy: the test sets up nothing")
      w.closeAbandoned(f1)
      const c = w.reg("c", {})
      assert.deepStrictEqual(textsOf(w.framesOf(c), m0.id), ["m0 again"], "c was not given the resend alone")
    }))
})
