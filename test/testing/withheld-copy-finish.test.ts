/**
 * Simulation seed 16890 of `--delivery`: A's message to B is written to B's
 * connection, B's client has not read it when A cancels it, and B stops; B
 * comes back as a new client instance. The broker keeps the cancelled copy
 * for the instance that was written it, and a registration of another
 * instance leaves it in the mailbox for that reader (review revm M2, M3).
 * The finish's `mailbox-not-empty` check counted that copy as mail stranded
 * with every session connected; it now leaves out the cancelled copies kept
 * for readers not connected (`RouterStats.withdrawnCopiesHeld`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { KNOWN_ISSUES } from "../../src/testing/Soak.ts"
import { runWorkload } from "../../src/testing/Workload.ts"

describe("the finish's mailbox check", () => {
  it.effect("seed 16890 of --delivery: a cancelled copy kept for an instance that stopped is not mailbox-not-empty", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 16890, tolerate: KNOWN_ISSUES }, undefined, { delivery: true })
      const trace = report.trace.join("\n")
      assert.deepStrictEqual(report.violations, [], trace)
      // The case itself: a copy was kept, and was still in the mailbox when every session was connected.
      assert.isAtLeast(report.paths.withdrawnCopiesKept, 1, trace)
      assert.isTrue(trace.includes("the mailbox holds 1 message(s) with every session connected"), trace)
    }))
})
