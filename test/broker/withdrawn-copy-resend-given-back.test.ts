/**
 * A cancelled message given back after a resend under its id (review cpback,
 * defect 1, found by helper cpcopy): c's m0, cancelled while f-1's write of
 * it is stuck (test/support/withdrawnCopyLeft.ts's `toldReader`: the cancel
 * told f-1, and kept the copy for b's base instance). Past the replay
 * record's hour d sends "m0 again" under m0's id: a new message, queued for
 * c, whose own replay record forgets m0's withdrawal (DeliveryRecords.keep,
 * review revf R1). f-1's connection then closes and gives the old m0 back.
 * It was withdrawn before the resend came, so it goes silently: c's return
 * is given the resend, never the cancelled text. And the resend, given back
 * itself by a write to c that never completed, is not taken for the old
 * message: c's next return gets it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { custodyFeatures } from "../support/controlWorld.ts"
import { copyLeftWorld, HOUR, textsOf, toldReader } from "../support/withdrawnCopyLeft.ts"

describe("a cancelled message given back after a resend under its id", () => {
  it.effect("c's return gets the resend's text, not the cancelled one", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({})
      const { f1, m0 } = toldReader(w)
      w.clock.now += HOUR + 1_000
      w.send("c", { ...m0, content: { text: "m0 again" } })
      assert.strictEqual(w.router.stats().withdrawnCopiesHeld, 0, "the resend did not replace the copy: the test sets up nothing")
      w.closeAbandoned(f1)
      const c = w.reg("c", {})
      assert.deepStrictEqual(textsOf(w.framesOf(c), m0.id), ["m0 again"], "c was not given the resend alone")
    }))

  it.effect("the resend given back by c's unfinished write reaches c's next return", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({})
      const { f1, m0 } = toldReader(w)
      w.clock.now += HOUR + 1_000
      w.send("c", { ...m0, content: { text: "m0 again" } })
      w.closeAbandoned(f1)
      // c-1's write of the resend never completes: its close gives the resend back.
      w.closeAbandoned(w.reg("c", { features: custodyFeatures, instanceId: "c-1" }, "B", true))
      const c = w.reg("c", { features: custodyFeatures, instanceId: "c-1" })
      assert.deepStrictEqual(textsOf(w.framesOf(c), m0.id), ["m0 again"], "c's return was not given the resend")
    }))
})
