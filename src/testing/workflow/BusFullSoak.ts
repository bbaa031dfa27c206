/**
 * Soaks of the whole workflow layer on the bus (BusFull.ts): many seeds of
 * `runBusWorkflowFull` summed, and the summary the sim CLI prints
 * (`npm run sim -- --workflow-bus-full`).
 */
import { Effect } from "effect"
import type { ViolationKind } from "../Ledger.ts"
import { replayCommand, type SimArgs } from "../simArgs.ts"
import { type BusFullReport, runBusWorkflowFull } from "./BusFull.ts"

/** Many seeds of `runBusWorkflowFull`, summed. */
export interface BusFullSummary {
  readonly runs: number
  readonly failures: ReadonlyArray<BusFullReport>
  /** Bus trace lines. */
  readonly events: number
  readonly busMessages: number
  readonly simulatedMs: number
  readonly checks: number
  /** The reports' tallies, summed by name. */
  readonly tally: Readonly<Record<string, number>>
}

/** Runs seeds `from`…`from + seeds - 1`, stopping after `maxFailures` failing ones. */
export const busFullSoak = (options: {
  readonly from: number
  readonly seeds: number
  readonly ops?: number | undefined
  readonly maxFailures?: number | undefined
  /** The workloads reload the parent too. */
  readonly parentReloads?: boolean | undefined
  /** `--strict` (see `BusFullConfig.strictInFlight`). */
  readonly strictInFlight?: boolean | undefined
  /** `--tolerate` (see `BusFullConfig.tolerate`). */
  readonly tolerate?: ReadonlyArray<ViolationKind> | undefined
}): Effect.Effect<BusFullSummary> =>
  Effect.gen(function*() {
    const failures: Array<BusFullReport> = []
    const tally: Record<string, number> = {}
    let runs = 0, events = 0, busMessages = 0, simulatedMs = 0, checks = 0
    for (let seed = options.from; seed < options.from + options.seeds; seed++) {
      const report = yield* runBusWorkflowFull({
        seed,
        ops: options.ops,
        parentReloads: options.parentReloads,
        strictInFlight: options.strictInFlight,
        tolerate: options.tolerate
      })
      runs++
      events += report.bus.events
      busMessages += report.bus.messages.acknowledged
      simulatedMs += report.bus.simulatedMs
      checks += report.checks
      for (const [name, value] of Object.entries(report.tally)) tally[name] = (tally[name] ?? 0) + value
      if (!report.ok) {
        failures.push(report)
        if (failures.length >= (options.maxFailures ?? 5)) break
      }
    }
    return { runs, failures, events, busMessages, simulatedMs, checks, tally }
  })

/**
 * The summary as the sim CLI prints it; each failing seed with its replay
 * command, made from `args` (the command line's flags).
 */
export const formatBusFullSummary = (
  summary: BusFullSummary,
  elapsedMs: number,
  args: SimArgs = { workflowBusFull: true }
): string => {
  const t = (name: string) => summary.tally[name] ?? 0
  return [
    "the whole workflow layer on the bus",
    `runs: ${summary.runs}   failures: ${summary.failures.length}   wall: ${(elapsedMs / 1000).toFixed(1)} s`,
    `events: ${summary.events}   bus messages acknowledged: ${summary.busMessages}   simulated time: ${(summary.simulatedMs / 3_600_000).toFixed(1)} h   workflow checks: ${summary.checks}`,
    `accepted by the workflow hosts: ${t("messages")}   terminals surfaced: ${t("terminals")}   passive: ${t("passive")}`,
    `foreground calls: ${t("foregroundCalls")}   groups: ${t("groups")} (${t("skipped")} member(s) skipped)   detached from P: ${t("detached")}   from the stage: ${t("stageDetached")}`,
    `stages closed: ${t("stagesClosed")}   late asks: ${t("lateAsks")} (${t("postMortems")} post-mortem turns, ${t("replyErrors")} replyErrors in all)   to the parent chat: ${t("parentChat")}`,
    ...(t("reloads") + t("reloadsSkipped") === 0 ? [] : [
      `parent reloads: ${t("reloads")} (${t("reloadsSkipped")} skipped: a subagent call held the parent)`
    ]),
    ...summary.failures.map((report) =>
      `seed ${report.seed} (${replayCommand(report.seed, args)}): ${
        [...report.violations.map((v) => `${v.kind}: ${v.message}`), ...report.bus.violations.map((v) => `${v.kind}: ${v.message}`)]
          .slice(0, 3).join("; ")
      }`
    )
  ].join("\n")
}
