/**
 * A broker that is alive but stops answering (SIGSTOP here; a deadlock in
 * life) is the campaign's finding (`broker-hung`), reported with the summary
 * and its replay line — not a `BrokerTrouble` ("no memory report within
 * 30 s") that loses both after every attack run has waited out its limit.
 * The campaign's timeouts are shortened so the test takes seconds. Needs
 * dist/ (`npm run build`): the broker under test is the built CLI's process.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect } from "effect"
import { runCampaign } from "../../src/fuzz/Campaign.ts"
import { formatReport } from "../../src/fuzz/Report.ts"

const signal = (pid: number | undefined, name: NodeJS.Signals) => {
  if (pid === undefined) return
  try {
    process.kill(pid, name)
  } catch {
    // gone already
  }
}

describe("fuzz campaign against a broker that hangs", () => {
  it.live("reports broker-hung with its summary and replay line, and ends the attack phase early", () => {
    let stopped: number | undefined
    return Effect.gen(function*() {
      const frames = 1_000_000
      const report = yield* runCampaign({
        seed: 48,
        frames,
        light: true,
        only: ["garbage"],
        timeouts: { hungAfterMs: 1_000, runLimitMs: 2_000, memoryReportMs: 2_000 },
        // The first progress line names the broker's process as the attack phase starts: it stops there.
        progress: (line) =>
          Effect.sync(() => {
            const pid = /broker process (\d+)/.exec(line)?.[1]
            if (pid === undefined || stopped !== undefined) return
            stopped = Number(pid)
            signal(stopped, "SIGSTOP")
          })
      })
      const summary = formatReport(report)
      assert.isDefined(stopped, "no progress line named the broker's process")
      assert.isFalse(report.ok, summary)
      const hung = report.findings.find((finding) => finding.kind === "broker-hung")
      assert.match(hung?.examples[0] ?? "", /alive but answered no health probe for \d+\.\d s \(bound 1\.0 s\)/, summary)
      // The probe it never answered counts, late, in the summary.
      assert.isAtLeast(report.lateProbes, 1, summary)
      // Stopped, not dead; nothing was waited on after it was found hung.
      assert.isUndefined(report.findings.find((finding) => finding.kind === "broker-crashed"), summary)
      assert.isUndefined(report.memory.after, summary)
      assert.isBelow(report.framesSent, frames / 100, summary)
      assert.include(summary, "replay: npm run fuzz -- --seed 48 --frames 1000000 --light --only garbage", summary)
    }).pipe(Effect.ensuring(Effect.sync(() => {
      // The campaign stops its broker (SIGTERM then SIGCONT); should it not have, the process must not stay stopped.
      signal(stopped, "SIGCONT")
      signal(stopped, "SIGKILL")
    })))
  }, 20_000)

  it.live("reports broker-hung within the final round trips' bound when it hangs after the attack phase", () => {
    let pid: number | undefined
    let stopped: number | undefined
    let attackEnded: number | undefined
    return Effect.gen(function*() {
      const report = yield* runCampaign({
        seed: 49,
        frames: 40,
        light: true,
        only: ["garbage"],
        // Only the final round trips' bound is short: before it, the hang was found by the memory report's.
        timeouts: { finalRoundTripsMs: 1_000, hungAfterMs: 60_000, memoryReportMs: 60_000 },
        // The first progress line names the broker's process; it is stopped as the attack phase ends.
        progress: (line) =>
          Effect.gen(function*() {
            pid ??= Number(/broker process (\d+)/.exec(line)?.[1] ?? Number.NaN)
            if (!line.startsWith("attack phase ended") || Number.isNaN(pid)) return
            attackEnded = yield* Clock.currentTimeMillis
            stopped = pid
            signal(stopped, "SIGSTOP")
          })
      })
      const finished = yield* Clock.currentTimeMillis
      const summary = formatReport(report)
      assert.isDefined(stopped, "no progress line named the broker's process, or the end of the attack phase")
      const hung = report.findings.find((finding) => finding.kind === "broker-hung")
      assert.match(hung?.examples[0] ?? "", /alive but did not answer the healthy sessions' final round trips within 1\.0 s/, summary)
      assert.isUndefined(report.findings.find((finding) => finding.kind === "broker-crashed"), summary)
      // Found hung, nothing after it waited on the broker: no memory report, no connection count, no final probe.
      assert.isUndefined(report.memory.after, summary)
      // Before, each of nine round trips waited out 10 s, and the memory report (60 s here) found the hang.
      assert.isBelow(finished - (attackEnded ?? finished), 15_000, summary)
    }).pipe(Effect.ensuring(Effect.sync(() => {
      signal(stopped, "SIGCONT")
      signal(stopped, "SIGKILL")
    })))
  }, 30_000)
})
