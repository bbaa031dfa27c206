/**
 * Simulation seed 28741 of `--settle-hold --delivery`: D asks A (2223 ms)
 * while the broker's writes to D are slow, so D never reads the question's
 * acknowledgement; A's reply m42, accepted by the broker well before the
 * deadline, sits in the same slow write. D's connection drops past the
 * timeout since the first send, so its client does not write the question
 * again at the reconnect (requests.ts `ASK_TIMED_OUT_UNWRITTEN`) — and its
 * ask used to end in `ReplyTimeout` right there, before it routed m42, which
 * the broker had given back right behind `registered`
 * (`answer-after-timeout`). The ask now settles on the new connection first
 * (Ask.ts `settleUnwritten`) and ends with m42.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { runWorkload } from "../../src/testing/Workload.ts"

describe("an ask not written again after a reconnect, its timeout up", () => {
  it.effect("seed 28741 of --settle-hold --delivery: the reply given back at the register answers it, the ledger's checks hold", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 28741, tolerate: [] }, undefined, { delivery: true, settleHold: true })
      const trace = report.trace.join("\n")
      assert.deepStrictEqual(report.violations, [], trace)
      // The case itself: D's connection dropped after A's reply was accepted, and the reply answered the ask.
      const accepted = trace.indexOf(`A reply to D "settled 40" → m42 socket_delivered`)
      assert.isAtLeast(accepted, 0, trace)
      assert.isAbove(trace.indexOf("D's connection drops on the client side", accepted), accepted, trace)
      assert.include(trace, `D ask6 (m41) replied by m42 from A "settled 40"`, trace)
    }))
})
