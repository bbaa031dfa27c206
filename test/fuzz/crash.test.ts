/**
 * A broker that dies in the middle of a campaign is the campaign's finding
 * (`broker-crashed`), reported with the summary and its replay line — not a
 * `BrokerTrouble` that loses both — and the attack phase ends with it rather
 * than spending the rest of its budget on a missing socket. Needs dist/
 * (`npm run build`): the broker under test is the built CLI's process.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { runCampaign } from "../../src/fuzz/Campaign.ts"
import { formatReport } from "../../src/fuzz/Report.ts"

describe("fuzz campaign against a broker that dies", () => {
  it.live("reports broker-crashed with its summary and replay line, and stops attacking", () =>
    Effect.gen(function*() {
      let killed: number | undefined
      const frames = 1_000_000
      const report = yield* runCampaign({
        seed: 47,
        frames,
        light: true,
        only: ["garbage"],
        // The first progress line names the broker's process as the attack phase starts: it dies there.
        progress: (line) =>
          Effect.sync(() => {
            const pid = /broker process (\d+)/.exec(line)?.[1]
            if (pid === undefined || killed !== undefined) return
            killed = Number(pid)
            process.kill(killed, "SIGKILL")
          })
      })
      const summary = formatReport(report)
      assert.isDefined(killed, "no progress line named the broker's process")
      assert.isFalse(report.ok, summary)
      const crashed = report.findings.find((finding) => finding.kind === "broker-crashed")
      assert.match(crashed?.examples[0] ?? "", /exited with SIGKILL/, summary)
      // No memory to sample from a dead process; the attack phase ended with it, its budget unspent.
      assert.isUndefined(report.memory.after, summary)
      assert.isBelow(report.framesSent, frames / 100, summary)
      assert.include(summary, "replay: npm run fuzz -- --seed 47 --frames 1000000 --light --only garbage", summary)
    }), 60_000)
})
