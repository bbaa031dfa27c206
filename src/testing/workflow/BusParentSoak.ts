/**
 * Soaks of the bus-hosted workflow parent (BusParent.ts): many seeds of
 * `runBusWorkflow` summed, and the summary the sim CLI prints
 * (`npm run sim -- --workflow-bus`).
 */
import { Effect } from "effect"
import type { ViolationKind } from "../Ledger.ts"
import { replayCommand, type SimArgs } from "../simArgs.ts"
import { type BusWorkflowReport, runBusWorkflow } from "./BusParent.ts"

/** Many seeds of `runBusWorkflow`, summed. */
export interface BusWorkflowSummary {
  readonly runs: number
  readonly failures: ReadonlyArray<BusWorkflowReport>
  readonly accepted: number
  readonly checked: number
  readonly terminals: number
  readonly late: number
  /** Parent process restarts, and messages their journals handed over again. */
  readonly restarts: number
  readonly reloads: number
  readonly restored: number
  readonly busMessages: number
  readonly events: number
  readonly simulatedMs: number
}

/** Runs seeds `from`…`from + seeds - 1`, stopping after `maxFailures` failing ones. */
export const busWorkflowSoak = (options: {
  readonly from: number
  readonly seeds: number
  readonly ops?: number | undefined
  readonly maxFailures?: number | undefined
  /** The workloads restart the parent's process too. */
  readonly parentRestarts?: boolean | undefined
  /** `--strict` (see `BusWorkflowConfig.strictInFlight`). */
  readonly strictInFlight?: boolean | undefined
  /** `--tolerate` (see `BusWorkflowConfig.tolerate`). */
  readonly tolerate?: ReadonlyArray<ViolationKind> | undefined
}): Effect.Effect<BusWorkflowSummary> =>
  Effect.gen(function*() {
    const failures: Array<BusWorkflowReport> = []
    let runs = 0, accepted = 0, checked = 0, terminals = 0, late = 0, restarts = 0, reloads = 0, restored = 0
    let busMessages = 0, events = 0, simulatedMs = 0
    for (let seed = options.from; seed < options.from + options.seeds; seed++) {
      const report = yield* runBusWorkflow({
        seed,
        ops: options.ops,
        parentRestarts: options.parentRestarts,
        strictInFlight: options.strictInFlight,
        tolerate: options.tolerate
      })
      runs++
      accepted += report.accepted
      checked += report.checked
      terminals += report.terminals
      late += report.late
      restarts += report.restarts
      reloads += report.reloads
      restored += report.restored
      busMessages += report.bus.messages.acknowledged
      events += report.bus.events
      simulatedMs += report.bus.simulatedMs
      if (!report.ok) {
        failures.push(report)
        if (failures.length >= (options.maxFailures ?? 5)) break
      }
    }
    return { runs, failures, accepted, checked, terminals, late, restarts, reloads, restored, busMessages, events, simulatedMs }
  })

/**
 * The summary as the sim CLI prints it; each failing seed with its replay
 * command, made from `args` (the command line's flags).
 */
export const formatBusWorkflowSummary = (
  summary: BusWorkflowSummary,
  elapsedMs: number,
  args: SimArgs = { workflowBus: true }
): string =>
  [
    "bus-hosted workflow parent",
    `runs: ${summary.runs}   failures: ${summary.failures.length}   wall: ${(elapsedMs / 1000).toFixed(1)} s`,
    `events: ${summary.events}   bus messages acknowledged: ${summary.busMessages}   simulated time: ${(summary.simulatedMs / 3_600_000).toFixed(1)} h`,
    `accepted by the parent: ${summary.accepted}   terminals surfaced: ${summary.terminals}   checked against their terminal: ${summary.checked}   arrived after their terminal (not checked): ${summary.late}`,
    ...(summary.restarts + summary.reloads === 0 ? [] : [
      `parent restarts: ${summary.restarts}   generations replaced in-process: ${summary.reloads}   handed over again by its journal: ${summary.restored}`
    ]),
    ...summary.failures.map((report) =>
      `seed ${report.seed} (${replayCommand(report.seed, args)}): ${[...report.violations, ...report.bus.violations.map((v) => `${v.kind}: ${v.message}`)].slice(0, 3).join("; ")}`
    )
  ].join("\n")
