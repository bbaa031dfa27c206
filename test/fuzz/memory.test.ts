/**
 * The fuzz campaign's memory check scales with the campaign: a broker that
 * keeps part of what it is sent fails even a short campaign. With a fixed
 * 256 MiB bound, a broker keeping 4 KiB a frame passed a 20,000-frame
 * campaign (13 → 113 MiB of heap). Here a fault hook preloaded into the
 * broker process (leakHook.mjs) keeps 256 KiB a chunk read, up to 128 MiB,
 * and a short campaign must report `memory-retained`. Needs dist/
 * (`npm run build`): the broker under test is the built CLI's process.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { fileURLToPath } from "node:url"
import { runCampaign } from "../../src/fuzz/Campaign.ts"
import { PROMISES, retainedBound } from "../../src/fuzz/promises.ts"
import { formatReport } from "../../src/fuzz/Report.ts"

const MiB = 1024 * 1024

describe("the fuzz campaign's memory bound", () => {
  it("is a floor plus a share per frame, never more than the total budget", () => {
    assert.strictEqual(retainedBound(PROMISES, 0), 32 * MiB)
    assert.strictEqual(retainedBound(PROMISES, 20_000), 32 * MiB + 20_000 * 1024)
    // The review's leak: 4 KiB a frame over a 20,000-frame campaign left 100 MiB more than a healthy one.
    assert.isBelow(retainedBound(PROMISES, 20_000), 100 * MiB)
    assert.strictEqual(retainedBound(PROMISES, 10_000_000), PROMISES.retainedTotalBytes)
  })

  it.live("catches a broker that keeps what it is sent, in a short campaign", () =>
    Effect.gen(function*() {
      const report = yield* runCampaign({
        seed: 49,
        frames: 300,
        light: true,
        only: ["garbage"],
        brokerImports: [fileURLToPath(new URL("leakHook.mjs", import.meta.url))]
      })
      const summary = formatReport(report)
      const retained = report.findings.find((finding) => finding.kind === "memory-retained")
      assert.match(retained?.examples[0] ?? "", /bound 32\.\d MiB for \d+ frames/, summary)
      // What it kept is well under the total budget, which alone let it pass.
      const kept = (report.memory.after?.heap ?? 0) - (report.memory.before?.heap ?? 0)
      assert.isBelow(kept, PROMISES.retainedTotalBytes, summary)
      assert.isFalse(report.ok, summary)
    }), 30_000)
})
