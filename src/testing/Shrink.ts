/**
 * Shrinking a failing workload to a minimal one (delta debugging over the
 * operation list, then shorter pauses), and printing it as a failure report:
 * the seed, the minimal workload, how to replay it, and its trace.
 */
import { Effect } from "effect"
import type { ViolationKind } from "./Ledger.ts"
import { replayCommand, SIM_DEFAULTS, type SimArgs } from "./simArgs.ts"
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
  /** False when the workload was not shrunk (`--no-shrink`): `ops` are the seed's. */
  readonly shrunk?: boolean
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
 * The kind a failing run is shrunk towards: its first violation of a kind
 * not tolerated (a tolerated one does not fail a run, so shrinking towards
 * it could end on a workload that passes).
 */
export const failingKind = <Kind extends string>(
  violations: ReadonlyArray<{ readonly kind: Kind }>,
  tolerate: ReadonlyArray<Kind> = []
): Kind | undefined => violations.find((violation) => !tolerate.includes(violation.kind))?.kind

/**
 * Removes operations while the run still fails with the same kind of
 * violation (its first one not tolerated, `failingKind`; delta debugging:
 * halves, quarters, … single ops), then tries shorter pauses. A candidate is
 * kept only when its run fails (`!ok`) with that kind. Each candidate is a
 * full deterministic rerun.
 */
export const shrinkWorkload = (
  config: SimulationConfig,
  ops: ReadonlyArray<Op>,
  failing: SimReport,
  options: WorkloadOptions & { readonly maxRuns?: number } = {}
): Effect.Effect<Shrunk> => {
  const tolerate = config.tolerate ?? []
  const kind: ViolationKind | undefined = failingKind(failing.violations, tolerate)
  return deltaShrink({
    ops,
    failing,
    rerun: (candidate) => runWorkload(config, candidate, options),
    stillFailing: (report) => !report.ok && report.violations.some((violation) => violation.kind === kind),
    withoutPause: (op) => op.after === 0 ? undefined : { ...op, after: 0 },
    maxRuns: options.maxRuns ?? 300
  })
}

/**
 * A failing run's seed, its (shrunk) script and the trace of that run, ready
 * to print. `args` are the flags the run was made with (`SimArgs`): the
 * replay lines are `replayCommand`'s, so they run the same world and judge it
 * the same way. `tolerate` names the kinds that did not fail the run: the
 * headline is the first violation of any other kind.
 */
export const formatFailure = (
  seed: number,
  shrunk: Shrunk,
  names: ReadonlyArray<string>,
  args: SimArgs = {},
  tolerate: ReadonlyArray<ViolationKind> = []
): string => {
  const first = shrunk.report.violations.find((violation) => !tolerate.includes(violation.kind))
  const hostile = args.hostile === true
  const groups = args.groups === true
  const refusals = args.hostRefusals === true
  const journal = args.hostJournal === true && !refusals
  const memory = args.durability === "memory"
  const accepted = args.connections === "accepted"
  const workloadOptions = [
    ...(hostile ? ["hostile: true"] : []),
    ...(groups ? ["groups: true"] : []),
    ...(args.delivery === true ? ["delivery: true"] : []),
    ...(args.topics === true ? ["topics: true"] : []),
    ...(args.unregister === true ? ["unregister: true"] : []),
    ...(args.parkedFlush === true ? ["parkedFlush: true"] : []),
    ...(args.heldReturn === true ? ["heldReturn: true"] : []),
    ...(args.custodyHold === true ? ["custodyHold: true"] : []),
    ...(args.settleHold === true ? ["settleHold: true"] : []),
    ...(args.instanceControl === true ? ["instanceControl: true"] : []),
    ...(args.readerReturn === true ? ["readerReturn: true"] : []),
    ...(args.groupMove === true ? ["groupMove: true"] : []),
    ...(args.staleAsk === true ? ["staleAsk: true"] : []),
    ...(args.answerTakeover === true ? ["answerTakeover: true"] : []),
    ...(args.answerMailbox === true ? ["answerMailbox: true"] : []),
    ...(args.ops === undefined || args.ops === SIM_DEFAULTS.ops ? [] : [`ops: ${args.ops}`]),
    ...(args.sessions === undefined || args.sessions === SIM_DEFAULTS.sessions ? [] : [`sessions: ${args.sessions}`]),
    ...(args.traffic === true ? ["weights: trafficWeights"] : []),
    ...(args.traffic === true || args.noPressure === true ? ["pressure: false"] : [])
  ]
  const hostJournal = refusals
    ? ", hostJournal: { ...defaultHostJournal, refusals: defaultHostRefusals }"
    : journal
    ? ", hostJournal: defaultHostJournal"
    : ""
  const clientTimings = args.clientTimings === true ? ", clientTimings: defaultClientTimingRanges" : ""
  const withholdRejoin = args.withholdRejoin === true ? ", withholdRejoin: true" : ""
  const config = `{ seed: ${seed}${hostJournal}${clientTimings}${withholdRejoin}${
    memory ? `, durability: "memory"` : ""
  }${accepted ? `, brokerConnections: "accepted"` : ""}${
    args.scopes === undefined || args.scopes <= 1 ? "" : `, scopes: ${JSON.stringify(Array.from({ length: args.scopes }, (_, i) => `scope-${i + 1}`))}`
  }${args.strict === true ? ", strictInFlight: true" : ""}${
    tolerate.length === 0 ? "" : `, tolerate: ${JSON.stringify(tolerate)}`
  } }`
  const shrunkBy = shrunk.shrunk === false
    ? `workload (${shrunk.ops.length} op(s), not shrunk):`
    : `minimal workload (${shrunk.ops.length} op(s), ${shrunk.runs} reruns to shrink):`
  return [
    `simulation seed ${seed} failed: ${first === undefined ? "?" : `${first.kind}: ${first.message}`}`,
    `replay: runWorkload(${config}${workloadOptions.length === 0 ? "" : `, undefined, { ${workloadOptions.join(", ")} }`})  (${replayCommand(seed, args)})`,
    shrunkBy,
    ...shrunk.ops.map((op) => `  ${formatOp(op, names)}`),
    `replay the ${shrunk.shrunk === false ? "" : "minimal "}workload: ${replayCommand(seed, args, shrunk.ops)}`,
    `trace of the ${shrunk.shrunk === false ? "" : "minimal "}run:`,
    ...shrunk.report.trace.map((line) => `  ${line}`)
  ].join("\n")
}
