/**
 * Simulation seed 16890 of `--custody-hold --delivery`: each broker-side
 * write to B takes 779 ms. A's message m22 to B is in one of them when A
 * cancels it; the broker acknowledges the cancel and queues the control
 * behind m22. B reads m22 as that write ends, and stops (unregisters and
 * closes its client for good) while the next write, carrying the control,
 * is still on its way; B comes back as a new client instance, which may not
 * be given a control about a message it never got. The broker did its part;
 * the ledger's `cancel-unheard` flagged it all the same, and now leaves out
 * a control cancel begun on the connection that read the message whose
 * client closed for good without reading it (ledger/controls.ts,
 * `cancelCutShort`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { KNOWN_ISSUES } from "../../src/testing/Soak.ts"
import { runWorkload } from "../../src/testing/Workload.ts"

describe("the ledger's cancel-unheard check", () => {
  it.effect("seed 16890 of --custody-hold --delivery: a control cancel on its way to a client that closed for good is not cancel-unheard", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 16890, tolerate: KNOWN_ISSUES }, undefined, { custodyHold: true, delivery: true })
      const trace = report.trace.join("\n")
      assert.deepStrictEqual(report.violations, [], trace)
      // The case itself: the cancel was acknowledged before B read m22, and its control was cut short.
      assert.isTrue(trace.includes("A's cancel of m22 acknowledged (0 read(s) of it so far)"), trace)
      assert.isTrue(
        trace.includes("A's cancel of m22: its control was on its way to B's connection #11 when that client closed for good, unread there"),
        trace
      )
    }))
})
