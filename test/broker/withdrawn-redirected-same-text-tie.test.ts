/**
 * A cancelled message redirected under its id with the same text, at the same stamp (no clock move): m0, queued for
 * b and flushed to b's stuck connection b-1 after its replay record was pushed out (`replayRecords: 1`; a route on a
 * record with no fingerprint), is cancelled; d then sends the very same text under m0's id to y. `keep` notes the
 * forgotten withdrawal with the resend's fingerprint (`resend`), and withdrawnBeforeResend decides the stamp tie by
 * fingerprint, target included: m0, given back by b-1 at that stamp, is not the resend (review revrec R2; compared
 * by content alone, as task cg2tie first did, it was delivered).
 * The clock is a plain number, never moved; no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { copyLeftWorld, textsOf } from "../support/withdrawnCopyLeft.ts"

describe("a cancelled message redirected under its id with the same text, at the same stamp", () => {
  it.effect("b's return gets nothing of the cancelled m0 when d sends its text to y under its id", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 1 })
      w.closeAbandoned(w.reg("b", {}))
      w.reg("z", {}, "Z")
      const m0 = message("m0")
      w.send("b", m0)
      w.send("z", message("other"))
      const b1 = w.reg("b", {}, "B", true)
      w.cancel(m0.id)
      const y = w.reg("y", {}, "Y")
      w.send("y", m0)
      const refused = w.framesOf(w.d).filter((f) => f.type === "delivery_failed" || f.type === "error").length
      assert.strictEqual(refused, 0, "d's cancel or resend was refused: the test sets up nothing")
      assert.deepStrictEqual(textsOf(w.framesOf(y), m0.id), ["m0"], "y was not given the resend: the test sets up nothing")
      w.closeAbandoned(b1)
      const b = w.reg("b", {})
      assert.deepStrictEqual(textsOf(w.framesOf(b), m0.id), [], "b's return was given m0, which d cancelled")
    }))
})
