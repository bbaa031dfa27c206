/**
 * A client's own drop in the simulation (ledger/dropped.ts): seed 10425
 * (`--delivery`), where C's stalled reader returns m20 after C's client has
 * dropped the connection itself (a failed liveness probe). Under
 * `received-v1` the client does not hand it to the host
 * (src/client/ConnectionReader.ts, `dropped`); with that guard reverted the
 * run fails `handed-after-drop`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { KNOWN_ISSUES } from "../../src/testing/Soak.ts"
import { runWorkload } from "../../src/testing/Workload.ts"

describe("a message a client took off a connection it had dropped itself", () => {
  it.effect("is not handed to its host: no handed-after-drop (seed 10425, --delivery)", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 10425, tolerate: KNOWN_ISSUES }, undefined, { delivery: true })
      const trace = report.trace.join("\n")
      // The case happened: the ledger saw C's client take m20 after its drop.
      assert.include(trace, "C's client took m20 off link #9 after dropping it itself: not read", trace)
      assert.deepStrictEqual(report.violations, [], trace)
    }))
})
