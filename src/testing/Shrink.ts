/**
 * Shrinking a failing workload to a minimal one (delta debugging over the
 * operation list, then shorter pauses), and printing it as a failure report:
 * the seed, the minimal workload, how to replay it, and its trace.
 */
import { Effect } from "effect"
import type { ViolationKind } from "./Ledger.ts"
import type { SimulationConfig, SimReport } from "./Simulation.ts"
import { formatOp, type Op, runWorkload, type WorkloadOptions } from "./Workload.ts"

/** A failing workload after shrinking: the fewest ops that still fail the same way, and that run's report. */
export interface Shrunk {
  /** The minimal workload. */
  readonly ops: ReadonlyArray<Op>
  /** The report of its run. */
  readonly report: SimReport
  /** Reruns made while shrinking. */
  readonly runs: number
}

/**
 * Delta debugging over any operation list: removes halves, quarters, …
 * single operations while `stillFailing` holds for the rerun, then tries
 * each operation with its pause zeroed (`withoutPause`, undefined when it
 * has none). Each candidate is one `rerun`; at most `maxRuns` of them.
 * Shared by the bus simulation and the workflow simulation (WorkflowShrink.ts).
 */
export const deltaShrink = <Op, Report>(options: {
  readonly ops: ReadonlyArray<Op>
  readonly failing: Report
  readonly rerun: (ops: ReadonlyArray<Op>) => Effect.Effect<Report>
  readonly stillFailing: (report: Report) => boolean
  readonly withoutPause: (op: Op) => Op | undefined
  readonly maxRuns: number
}): Effect.Effect<{ readonly ops: ReadonlyArray<Op>; readonly report: Report; readonly runs: number }> =>
  Effect.gen(function*() {
    const { maxRuns } = options
    let runs = 0
    let best = { ops: options.ops, report: options.failing }
    const stillFails = (candidate: ReadonlyArray<Op>) =>
      Effect.gen(function*() {
        runs++
        const report = yield* options.rerun(candidate)
        const same = options.stillFailing(report)
        if (same) best = { ops: candidate, report }
        return same
      })
    let chunk = Math.max(1, Math.ceil(best.ops.length / 2))
    while (runs < maxRuns) {
      let progressed = false
      let i = 0
      while (i < best.ops.length && runs < maxRuns) {
        const candidate = [...best.ops.slice(0, i), ...best.ops.slice(i + chunk)]
        if (candidate.length > 0 && (yield* stillFails(candidate))) progressed = true
        else i += chunk
      }
      if (!progressed) {
        if (chunk === 1) break
        chunk = Math.max(1, Math.floor(chunk / 2))
      }
    }
    // Shorter pauses make the trace easier to read.
    for (let i = 0; i < best.ops.length && runs < maxRuns; i++) {
      const op = best.ops[i]
      const zeroed = op === undefined ? undefined : options.withoutPause(op)
      if (zeroed === undefined) continue
      yield* stillFails(best.ops.map((other, j) => j === i ? zeroed : other))
    }
    return { ...best, runs }
  })

/**
 * Removes operations while the run still fails with the same kind of
 * violation (delta debugging: halves, quarters, … single ops), then tries
 * shorter pauses. Each candidate is a full deterministic rerun.
 */
export const shrinkWorkload = (
  config: SimulationConfig,
  ops: ReadonlyArray<Op>,
  failing: SimReport,
  options: WorkloadOptions & { readonly maxRuns?: number } = {}
): Effect.Effect<Shrunk> => {
  const kind: ViolationKind | undefined = failing.violations[0]?.kind
  return deltaShrink({
    ops,
    failing,
    rerun: (candidate) => runWorkload(config, candidate, options),
    stillFailing: (report) => report.violations.some((violation) => violation.kind === kind),
    withoutPause: (op) => op.after === 0 ? undefined : { ...op, after: 0 },
    maxRuns: options.maxRuns ?? 300
  })
}

/** What a failing run's world and workload were made with, to print its replay (`formatFailure`). */
export interface FailureFlags {
  readonly hostile?: boolean
  readonly groups?: boolean
  readonly delivery?: boolean
  readonly topics?: boolean
  /** Sessions leave by `unregister`, one of them ephemeral (`--unregister`). */
  readonly unregister?: boolean
  readonly hostJournal?: boolean
  /** Hosts that refuse hand-offs while busy (`--host-refusals`, which implies `--host-journal`). */
  readonly hostRefusals?: boolean
  /** Each session's client timings drawn from the seed (`--client-timings`). */
  readonly clientTimings?: boolean
  readonly memory?: boolean
  readonly accepted?: boolean
}

/** A failing run's seed, its shrunk script and the trace of the shrunk run, ready to print. */
export const formatFailure = (
  seed: number,
  shrunk: Shrunk,
  names: ReadonlyArray<string>,
  options: FailureFlags = {}
): string => {
  const first = shrunk.report.violations[0]
  const hostile = options.hostile === true
  const groups = options.groups === true
  const refusals = options.hostRefusals === true
  const journal = options.hostJournal === true && !refusals
  const flags = [
    ...(hostile ? [" --hostile"] : []),
    ...(groups ? [" --groups"] : []),
    ...(options.delivery === true ? [" --delivery"] : []),
    ...(options.topics === true ? [" --topics"] : []),
    ...(options.unregister === true ? [" --unregister"] : []),
    ...(journal ? [" --host-journal"] : []),
    ...(refusals ? [" --host-refusals"] : []),
    ...(options.clientTimings === true ? [" --client-timings"] : []),
    ...(options.memory === true ? [" --durability memory"] : []),
    ...(options.accepted === true ? [" --connections accepted"] : [])
  ].join("")
  const workloadOptions = [
    ...(hostile ? ["hostile: true"] : []),
    ...(groups ? ["groups: true"] : []),
    ...(options.delivery === true ? ["delivery: true"] : []),
    ...(options.topics === true ? ["topics: true"] : []),
    ...(options.unregister === true ? ["unregister: true"] : [])
  ]
  const hostJournal = refusals
    ? ", hostJournal: { ...defaultHostJournal, refusals: defaultHostRefusals }"
    : journal
    ? ", hostJournal: defaultHostJournal"
    : ""
  const clientTimings = options.clientTimings === true ? ", clientTimings: defaultClientTimingRanges" : ""
  const config = `{ seed: ${seed}${hostJournal}${clientTimings}${
    options.memory === true ? `, durability: "memory"` : ""
  }${options.accepted === true ? `, brokerConnections: "accepted"` : ""} }`
  return [
    `simulation seed ${seed} failed: ${first === undefined ? "?" : `${first.kind}: ${first.message}`}`,
    `replay: runWorkload(${config}${workloadOptions.length === 0 ? "" : `, undefined, { ${workloadOptions.join(", ")} }`})  (npm run sim -- --seed ${seed}${flags})`,
    `minimal workload (${shrunk.ops.length} op(s), ${shrunk.runs} reruns to shrink):`,
    ...shrunk.ops.map((op) => `  ${formatOp(op, names)}`),
    `replay the minimal workload: npm run sim -- --seed ${seed}${flags} --replay '${JSON.stringify(shrunk.ops)}'`,
    `trace of the minimal run:`,
    ...shrunk.report.trace.map((line) => `  ${line}`)
  ].join("\n")
}
