/**
 * Simulation seed 33035 (plain mode), pinned by its minimal workload (the
 * replay the sim printed when it shrank the seed on main at 30b997f2): each
 * broker-side write to C takes 680 ms. D's message to C is in one of them
 * when D cancels it; the broker acknowledges the cancel and begins the next
 * write, carrying the control, as C reads the message — and crashes 250 ms
 * into it. C lives on and connects to the next broker, which has neither the
 * message (C confirmed it) nor a route for the control: routes and kept
 * controls are in memory only (docs/protocol.md, "When a receipt is
 * dropped"). The broker did its part; the ledger's `cancel-unheard` flagged
 * it all the same, and now leaves out a control cancel begun on the
 * connection that read the message and cut short there by its broker's
 * crash (ledger/controls.ts, `cancelCutShort`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { KNOWN_ISSUES } from "../../src/testing/Soak.ts"
import { type Op, runWorkload } from "../../src/testing/Workload.ts"

/** Seed 33035's minimal workload, as the sim printed it (`--replay`). */
const seed33035: ReadonlyArray<Op> = [
  { _tag: "DelayWrites", after: 0, session: 2, side: "broker", delayMs: 680, forMs: 2581 },
  { _tag: "Send", after: 0, from: 3, to: 2 },
  { _tag: "Control", after: 20, from: 3, action: "cancel", back: 0 },
  { _tag: "CrashBroker", after: 907, downMs: 2223 }
]

describe("the ledger's cancel-unheard check", () => {
  it.effect("seed 33035's workload: a control cancel on its way to a live client when the broker crashed is not cancel-unheard", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 33035, tolerate: KNOWN_ISSUES }, seed33035)
      const trace = report.trace.join("\n")
      assert.deepStrictEqual(report.violations, [], trace)
      // The case itself: the cancel was acknowledged before C read m1, and the crash cut its control short.
      assert.include(trace, "D's cancel of m1 acknowledged (0 read(s) of it so far)", trace)
      assert.include(trace, "D's cancel of m1: its control was on its way to C's connection #5 when its broker crashed, unread there", trace)
      // C lived on: it connected to the next broker.
      assert.include(trace, "C connected: link #13 to broker #2", trace)
    }))
})
