/**
 * Under a reused id, two messages staged in `replace` mode for two recipients at once: a cancel names the sender's
 * newest under the id (Cancels.ts; stop 71), so it withdraws the one staged last, not the first one the staging area
 * walks to (ReplaceStaging.withdraw takes the newest by acceptance order, `acceptedLater`; task stgnew limit 1). The
 * replay bound (`replayRecords: 1`) and a send between make the second send under m0 a new message, not a reuse
 * refused. On a Router driven by hand, the clock in the test's hands; no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { stagedUnderOneId } from "../support/stagedUnderOneId.ts"

describe("a cancel under a reused id with two messages staged for two recipients", () => {
  it.effect("withdraws the one staged last (for z), and the older one (for b) is handed over", () =>
    Effect.gen(function*() {
      const { b, z, stageTwo, answersUnderM0, cancelM0, givenM0, closeWindow } = yield* stagedUnderOneId()
      stageTwo({ to: "b", text: "for b", staged: true }, { to: "z", text: "for z", staged: true })
      assert.deepStrictEqual(answersUnderM0(), ["delivery_queued ", "delivery_queued "], "setup: both sends under m0 were not staged")
      assert.deepStrictEqual(cancelM0(), ["delivered"], "the cancel was not answered delivered")
      closeWindow()
      assert.deepStrictEqual({ b: givenM0(b), z: givenM0(z) }, { b: 1, z: 0 }, "the cancel withdrew the older staged message (for b), not the newest")
    }))
})
