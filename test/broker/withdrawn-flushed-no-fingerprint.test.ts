/**
 * Review revcg CG2 (HIGH, wrong verdict; a regression of fixcc's fingerprint
 * rule over cpback's defect 1): a message flushed from the mailbox after its
 * replay record was pushed out (`replayRecords: 1`) is routed on a record
 * made by Receipts.addRoute with no fingerprint. Cancelled while b's write of
 * it is stuck, then resent under its id: DeliveryRecords.keep noted the
 * forgotten withdrawal with that empty fingerprint, so withdrawnBeforeResend
 * never matched the given-back m0, and the cancelled text came back live to b
 * and took the resend's place in the mailbox. With no fingerprint held the
 * stamp alone tells now, as under cpback. The clock is a plain number moved
 * by hand, no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { copyLeftWorld, HOUR, textsOf } from "../support/withdrawnCopyLeft.ts"

describe("a cancelled message flushed after its record was pushed out, given back after a resend (review revcg CG2)", () => {
  it.effect("b's return gets nothing of the cancelled m0 and c's return gets the resend", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 1 })
      w.closeAbandoned(w.reg("b", {}))
      w.reg("z", {}, "Z")
      const m0 = message("m0")
      w.send("b", m0)
      // The replay bound pushes m0's record out (no route yet: the record leaves the table).
      w.send("z", message("other"))
      // b returns on a connection whose writes never complete: the flush routes m0 to it.
      const b1 = w.reg("b", {}, "B", true)
      w.cancel(m0.id)
      assert.deepStrictEqual(
        w.framesOf(w.d).flatMap((f) => (f.type === "delivery_failed" || f.type === "error") ? [f.type] : []),
        [],
        "d's cancel was refused: the test sets up nothing"
      )
      w.clock.now += HOUR + 1_000
      w.closeAbandoned(w.reg("c", {}, "C"))
      // The resend goes to c (away): queued under m0's key.
      w.send("c", { ...m0, content: { text: "m0 again" } })
      w.closeAbandoned(b1)
      const b = w.reg("b", {})
      const c = w.reg("c", {}, "C")
      assert.deepStrictEqual(
        { b: textsOf(w.framesOf(b), m0.id), c: textsOf(w.framesOf(c), m0.id) },
        { b: [], c: ["m0 again"] },
        "the cancelled m0 came back live (and the resend lost its mailbox place)"
      )
    }))
})
