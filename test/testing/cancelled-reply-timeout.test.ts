/**
 * Simulation seed 16890 of `--unregister --reader-return`: the reader-return
 * op's message from A to B went out as A's reply to B's open ask, and the op
 * then cancelled it; the broker answered that the cancel took, the reply
 * was withdrawn and the ask opened again, and B's wait ended at its
 * deadline. The ledger's `answer-after-timeout` took the accepted reply as
 * owed to the ask; a reply its sender cancelled is not.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { KNOWN_ISSUES } from "../../src/testing/Soak.ts"
import { runWorkload } from "../../src/testing/Workload.ts"

describe("answer-after-timeout", () => {
  it.effect("seed 16890 of --unregister --reader-return: a reply its sender cancelled is not owed to the ask that timed out", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 16890, tolerate: KNOWN_ISSUES }, undefined, { unregister: true, readerReturn: true })
      const trace = report.trace.join("\n")
      assert.deepStrictEqual(report.violations, [], trace)
      // The case itself: the ask timed out, and its reply was the one cancelled.
      assert.isTrue(trace.includes("ask5 of B timed out; m15, A's reply to it, was cancelled by its sender"), trace)
    }))
})
