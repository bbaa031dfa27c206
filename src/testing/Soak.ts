/**
 * Many seeds in a row: the soak behind `npm run sim` and the seed sweep in
 * `npm test`. Each failing seed is shrunk to a minimal workload and reported
 * with its trace.
 */
import { Effect } from "effect"
import type { ViolationKind } from "./Ledger.ts"
import type { SimulationConfig, SimReport } from "./Simulation.ts"
import {
  formatFailure,
  generateWorkload,
  runWorkload,
  sessionCountOf,
  sessionNames,
  shrinkWorkload,
  type WorkloadOptions
} from "./Workload.ts"

/**
 * Violations the simulation found in the broker and that are not fixed yet
 * (docs/testing.md, "Known issues"). `npm run sim` and the `npm test` sweep
 * report them without failing; their own tests show each one.
 */
export const KNOWN_ISSUES: ReadonlyArray<ViolationKind> = []

export interface SoakOptions extends WorkloadOptions {
  /** First seed. Default 1. */
  readonly from?: number
  /** How many seeds. */
  readonly seeds: number
  /** Everything but the seed. */
  readonly config?: Omit<SimulationConfig, "seed">
  /** Shrink failing seeds (slower). Default true. */
  readonly shrink?: boolean
  /** Stop after this many failures. Default 5. */
  readonly maxFailures?: number
  /** Called after each seed (progress output). */
  readonly onSeed?: (report: SimReport) => Effect.Effect<void>
}

export interface SoakFailure {
  readonly seed: number
  readonly report: SimReport
  /** The seed, the minimal workload and its trace, ready to print. */
  readonly description: string
}

export interface SoakSummary {
  readonly runs: number
  readonly failures: ReadonlyArray<SoakFailure>
  /** Trace lines over all runs. */
  readonly events: number
  readonly frames: number
  readonly checks: number
  readonly simulatedMs: number
  readonly messages: {
    readonly sent: number
    readonly acknowledged: number
    readonly delivered: number
    readonly refused: number
    readonly unknown: number
    readonly failedNotified: number
    readonly lostToCrash: number
    readonly lostInFlight: number
    readonly stranded: number
  }
  readonly asks: { readonly started: number; readonly replied: number; readonly timedOut: number; readonly failed: number }
  readonly violations: Readonly<Partial<Record<ViolationKind, number>>>
  /** Runs that had only tolerated violations (known issues), by kind. */
  readonly tolerated: Readonly<Partial<Record<ViolationKind, number>>>
}

const messageKeys = [
  "sent",
  "acknowledged",
  "delivered",
  "refused",
  "unknown",
  "failedNotified",
  "lostToCrash",
  "lostInFlight",
  "stranded"
] as const

export const soak = (options: SoakOptions): Effect.Effect<SoakSummary> =>
  Effect.gen(function*() {
    const from = options.from ?? 1
    const maxFailures = options.maxFailures ?? 5
    const failures: Array<SoakFailure> = []
    const violations: Partial<Record<ViolationKind, number>> = {}
    const tolerated: Partial<Record<ViolationKind, number>> = {}
    const tolerate = new Set(options.config?.tolerate ?? [])
    const messages = {
      sent: 0,
      acknowledged: 0,
      delivered: 0,
      refused: 0,
      unknown: 0,
      failedNotified: 0,
      lostToCrash: 0,
      lostInFlight: 0,
      stranded: 0
    }
    const asks = { started: 0, replied: 0, timedOut: 0, failed: 0 }
    let runs = 0
    let events = 0
    let frames = 0
    let checks = 0
    let simulatedMs = 0
    for (let seed = from; seed < from + options.seeds && failures.length < maxFailures; seed++) {
      const config: SimulationConfig = { ...options.config, seed }
      const report = yield* runWorkload(config, undefined, options)
      runs++
      events += report.events
      frames += report.frames
      checks += report.checks
      simulatedMs += report.simulatedMs
      for (const key of messageKeys) messages[key] += report.messages[key]
      asks.started += report.asks.started
      asks.replied += report.asks.replied
      asks.timedOut += report.asks.timedOut
      asks.failed += report.asks.failed + report.asks.interrupted
      for (const violation of report.violations) {
        const tally = tolerate.has(violation.kind) ? tolerated : violations
        tally[violation.kind] = (tally[violation.kind] ?? 0) + 1
      }
      if (options.onSeed !== undefined) yield* options.onSeed(report)
      if (report.ok) continue
      const count = sessionCountOf(config, options)
      const names = config.sessions?.map((entry) => typeof entry === "string" ? entry : entry.name) ?? sessionNames(count)
      const ops = generateWorkload(seed, count, options)
      const shrunk = options.shrink === false
        ? { ops, report, runs: 0 }
        : yield* shrinkWorkload(config, ops, report, options)
      failures.push({ seed, report, description: formatFailure(seed, shrunk, names) })
    }
    return { runs, failures, events, frames, checks, simulatedMs, messages, asks, violations, tolerated }
  })

export const formatSummary = (summary: SoakSummary, elapsedMs: number): string => {
  const m = summary.messages
  const lines = [
    `runs: ${summary.runs}   failures: ${summary.failures.length}   wall time: ${(elapsedMs / 1000).toFixed(1)} s (${
      (elapsedMs / Math.max(1, summary.runs)).toFixed(1)
    } ms/run)`,
    `events: ${summary.events}   frames: ${summary.frames}   invariant checks: ${summary.checks}   simulated time: ${
      (summary.simulatedMs / 3_600_000).toFixed(1)
    } h`,
    `messages: ${m.sent} sent, ${m.acknowledged} acknowledged, ${m.delivered} delivered, ${m.refused} refused, ${m.unknown} outcome unknown to the sender`,
    `  acknowledged but not delivered: ${m.failedNotified} sender told (expired), ${m.lostToCrash} lost to a broker crash, ${m.lostInFlight} lost in flight to a dying receiver, ${m.stranded} stranded in the mailbox`,
    `asks: ${summary.asks.started} started, ${summary.asks.replied} replied, ${summary.asks.timedOut} timed out, ${summary.asks.failed} failed or cancelled`
  ]
  const kinds = Object.entries(summary.violations)
  if (kinds.length > 0) lines.push(`violations: ${kinds.map(([kind, count]) => `${kind} ×${count}`).join(", ")}`)
  const known = Object.entries(summary.tolerated)
  if (known.length > 0) {
    lines.push(`known issues (tolerated, see docs/testing.md): ${known.map(([kind, count]) => `${kind} ×${count}`).join(", ")}`)
  }
  for (const failure of summary.failures) lines.push("", failure.description)
  return lines.join("\n")
}
