/**
 * Random workflow workloads: a seed makes a list of operations (plain data)
 * over the workflow world — a busy or idle parent, children sending,
 * asking, answering, running in the foreground, detaching, ending and
 * resuming; stages opening, taking messages and notices, reloading,
 * closing, and late asks after close — mixed with the faults (detach frames
 * lost or late, host hand-overs refused, stage sessions refusing entries,
 * retained conversations gone, runtime generations reloaded). Running one
 * checks the workflow invariants; a soak sums many.
 */
import { Effect, Schema } from "effect"
import { Prng } from "../Prng.ts"
import { replayCommand, type SimArgs } from "../simArgs.ts"
import type { WorkflowBrokenBuild } from "./links.ts"
import { emptyTally, type WorkflowViolationKind } from "./WorkflowLedger.ts"
import { runWorkflowScenario, type WorkflowConfig, type WorkflowReport, type WorkflowSim } from "./WorkflowWorld.ts"

const Int = Schema.Int

/** One kind of workflow operation: `pause`, its `op` name, and its fields. */
const workflowOp = <Name extends string, Fields extends Schema.Struct.Fields>(name: Name, fields: Fields) =>
  Schema.Struct({ pause: Int, op: Schema.Literal(name), ...fields })

/**
 * One operation of a workflow workload; `pause` is the simulated time
 * before it, in ms. A Schema, so that a failing seed's minimal workload,
 * printed as JSON, runs again (`npm run sim -- --workflow --seed S --replay
 * JSON`).
 *
 * @since 0.1.0
 */
export const WorkflowOpSchema = Schema.Union([
  workflowOp("ParentBusy", { busy: Schema.Boolean }),
  workflowOp("ParentReload", {}),
  workflowOp("ParentAsk", { child: Int }),
  workflowOp("ChildSend", { child: Int, kind: Schema.Literals(["send", "progress", "ask"]) }),
  workflowOp("ChildReply", { child: Int }),
  workflowOp("Foreground", { child: Int }),
  workflowOp("ForegroundGroup", { children: Schema.Array(Int), concurrency: Int }),
  workflowOp("Unavailable", { child: Int, value: Schema.Boolean }),
  workflowOp("Terminal", { child: Int, duplicate: Schema.Boolean, requestId: Schema.Boolean }),
  workflowOp("Resume", { child: Int }),
  workflowOp("DropFrames", { count: Int }),
  workflowOp("DelayFrames", { count: Int }),
  workflowOp("RefuseAfter", { after: Int }),
  workflowOp("StageOpen", { stage: Int }),
  workflowOp("StageBusy", { stage: Int, busy: Schema.Boolean }),
  workflowOp("StageSend", { stage: Int, from: Schema.Literals(["peer", "child", "notice"]), ask: Schema.Boolean }),
  workflowOp("StageForeground", { stage: Int }),
  workflowOp("StageReload", { stage: Int }),
  workflowOp("StageRefuse", { stage: Int, count: Int }),
  workflowOp("StageClose", { stage: Int }),
  workflowOp("SendThenClose", { stage: Int, count: Int }),
  workflowOp("LateAsk", { stage: Int, redeliver: Schema.Boolean, companionFirst: Schema.Boolean }),
  workflowOp("Redeliver", { stage: Int, index: Int }),
  workflowOp("RetainedGone", { stage: Int, gone: Schema.Boolean })
])

/**
 * One operation of a workflow workload (see `WorkflowOpSchema`).
 *
 * @since 0.1.0
 */
export type WorkflowOp = typeof WorkflowOpSchema.Type

type OpName = WorkflowOp["op"]

/**
 * How often each operation is drawn. Traffic dominates; the faults are
 * rarer, the lifecycle rarer still.
 *
 * @since 0.1.0
 */
export const workflowWeights: Readonly<Record<OpName, number>> = {
  ParentBusy: 10,
  ParentReload: 3,
  ParentAsk: 3,
  ChildSend: 24,
  ChildReply: 3,
  Foreground: 8,
  ForegroundGroup: 4,
  Unavailable: 1,
  Terminal: 6,
  Resume: 3,
  DropFrames: 2,
  DelayFrames: 4,
  RefuseAfter: 3,
  StageOpen: 6,
  StageBusy: 10,
  StageSend: 20,
  StageForeground: 6,
  StageReload: 2,
  StageRefuse: 2,
  StageClose: 4,
  SendThenClose: 3,
  LateAsk: 6,
  Redeliver: 2,
  RetainedGone: 1
}

/** Children of the parent in a workload's world. */
export const WORKFLOW_CHILDREN = 3
/** Stages per world. */
export const WORKFLOW_STAGES = 2

/**
 * The workload of `seed`: `ops` operations, the same list for the same seed.
 *
 * @since 0.1.0
 */
export const generateWorkflowWorkload = (seed: number, ops = 40): ReadonlyArray<WorkflowOp> => {
  const random = Prng.derive(seed, "workflow-workload")
  const child = () => random.int(0, WORKFLOW_CHILDREN - 1)
  const stage = () => random.int(0, WORKFLOW_STAGES - 1)
  const out: Array<WorkflowOp> = []
  for (let i = 0; i < ops; i++) {
    const pause = random.chance(0.6) ? random.int(0, 5) : random.chance(0.7) ? random.int(5, 120) : random.int(120, 1500)
    const name = random.weighted(workflowWeights)
    switch (name) {
      case "ParentBusy":
        out.push({ pause, op: name, busy: random.chance(0.6) })
        break
      case "ParentReload":
        out.push({ pause, op: name })
        break
      case "ParentAsk":
      case "ChildReply":
      case "Foreground":
      case "Resume":
        out.push({ pause, op: name, child: child() })
        break
      case "ForegroundGroup": {
        const first = child()
        const size = random.int(2, WORKFLOW_CHILDREN)
        const children = Array.from({ length: size }, (_, i) => (first + i) % WORKFLOW_CHILDREN)
        out.push({ pause, op: name, children, concurrency: random.int(1, size) })
        break
      }
      case "Unavailable":
        out.push({ pause, op: name, child: child(), value: random.chance(0.5) })
        break
      case "ChildSend":
        out.push({ pause, op: name, child: child(), kind: random.pick(["send", "send", "progress", "ask"] as const) })
        break
      case "Terminal":
        out.push({ pause, op: name, child: child(), duplicate: random.chance(0.2), requestId: random.chance(0.7) })
        break
      case "DropFrames":
      case "DelayFrames":
        out.push({ pause, op: name, count: random.int(1, 3) })
        break
      case "RefuseAfter":
        out.push({ pause, op: name, after: random.int(0, 2) })
        break
      case "StageOpen":
      case "StageForeground":
      case "StageReload":
      case "StageClose":
        out.push({ pause, op: name, stage: stage() })
        break
      case "StageBusy":
        out.push({ pause, op: name, stage: stage(), busy: random.chance(0.6) })
        break
      case "StageSend":
        out.push({ pause, op: name, stage: stage(), from: random.pick(["peer", "child", "child", "notice"] as const), ask: random.chance(0.25) })
        break
      case "SendThenClose":
        out.push({ pause, op: name, stage: stage(), count: random.int(1, 3) })
        break
      case "StageRefuse":
        out.push({ pause, op: name, stage: stage(), count: random.int(1, 2) })
        break
      case "LateAsk":
        out.push({ pause, op: name, stage: stage(), redeliver: random.chance(0.4), companionFirst: random.chance(0.5) })
        break
      case "Redeliver":
        out.push({ pause, op: name, stage: stage(), index: random.int(0, 9) })
        break
      case "RetainedGone":
        out.push({ pause, op: name, stage: stage(), gone: random.chance(0.5) })
        break
    }
  }
  return out
}

/** Runs one operation; one that does not fit the world's state is skipped. */
const runOp = (sim: WorkflowSim, op: WorkflowOp): Effect.Effect<void> => {
  const childName = (index: number) => `c${index + 1}`
  const stageName = (index: number) => `s${index + 1}`
  switch (op.op) {
    case "ParentBusy":
      return sim.parent.busy(op.busy)
    case "ParentReload":
      return sim.parent.reload
    case "ParentAsk":
      return Effect.asVoid(sim.parent.ask(childName(op.child)))
    case "ChildSend": {
      const child = sim.child(childName(op.child))
      return child.state.done ? Effect.void : Effect.asVoid(child.send(op.kind))
    }
    case "ChildReply":
      return Effect.asVoid(sim.child(childName(op.child)).reply)
    case "Foreground": {
      const child = sim.child(childName(op.child))
      const busy = sim.world.parent.slot.current()
      return child.state.done || busy !== undefined ? Effect.void : child.foreground
    }
    case "ForegroundGroup": {
      if (sim.world.parent.slot.current() !== undefined) return Effect.void
      const names = op.children.map(childName).filter((name) => !sim.child(name).state.done)
      return names.length < 2 ? Effect.void : sim.parent.foregroundGroup(names, op.concurrency)
    }
    case "Unavailable":
      return sim.world.parent.slot.current()?.name === childName(op.child)
        ? sim.child(childName(op.child)).unavailable(op.value)
        : Effect.void
    case "Terminal": {
      const child = sim.child(childName(op.child))
      return child.state.done ? Effect.void : child.terminal({ duplicate: op.duplicate, requestId: op.requestId })
    }
    case "Resume": {
      const child = sim.child(childName(op.child))
      return child.state.done ? child.resume : Effect.void
    }
    case "DropFrames":
      return sim.faults.dropFrames(op.count)
    case "DelayFrames":
      return sim.faults.delayFrames(op.count)
    case "RefuseAfter":
      return sim.faults.refuseAfter(op.after)
    case "StageOpen":
      return sim.stage(stageName(op.stage)).open
    case "StageBusy":
      return sim.stage(stageName(op.stage)).busy(op.busy)
    case "StageSend": {
      const stage = sim.stage(stageName(op.stage))
      return stage.state.phase === "new" ? Effect.void : Effect.asVoid(stage.send({ from: op.from, ask: op.ask }))
    }
    case "StageForeground": {
      const stage = sim.stage(stageName(op.stage))
      return stage.state.phase === "open" && stage.state.slot.current() === undefined
        ? stage.foreground
        : Effect.void
    }
    case "StageReload":
      return sim.stage(stageName(op.stage)).reload
    case "StageRefuse":
      return sim.stage(stageName(op.stage)).refuseInserts(op.count)
    case "StageClose":
      return sim.stage(stageName(op.stage)).close
    case "SendThenClose": {
      // A busy stage's foreground child talks right before the stage closes: the C-ORD-2/3 race.
      const stage = sim.stage(stageName(op.stage))
      if (stage.state.phase !== "open") return Effect.void
      return Effect.gen(function*() {
        if (!stage.state.busy) yield* stage.busy(true)
        if (stage.state.slot.current() === undefined) yield* stage.foreground
        for (let i = 0; i < op.count; i++) yield* stage.send({ from: "child" })
        yield* stage.close
      })
    }
    case "LateAsk": {
      const stage = sim.stage(stageName(op.stage))
      return stage.state.phase === "closed"
        ? Effect.asVoid(stage.lateAsk({ redeliver: op.redeliver, companionFirst: op.companionFirst }))
        : Effect.void
    }
    case "Redeliver":
      return sim.stage(stageName(op.stage)).redeliver(op.index)
    case "RetainedGone":
      return sim.stage(stageName(op.stage)).retainedGone(op.gone)
  }
}

/**
 * Runs a workflow workload (the seed's, unless `ops` is given) and reports
 * what the ledger found.
 *
 * @example
 * const report = yield* runWorkflowWorkload({ seed: 7 })
 * report.ok // every workflow invariant held
 *
 * @since 0.1.0
 */
export const runWorkflowWorkload = (
  config: Omit<WorkflowConfig, "children" | "stages">,
  ops: ReadonlyArray<WorkflowOp> = generateWorkflowWorkload(config.seed)
): Effect.Effect<WorkflowReport> =>
  runWorkflowScenario({ ...config, children: WORKFLOW_CHILDREN, stages: WORKFLOW_STAGES }, (sim) =>
    Effect.forEach(ops, (op) => Effect.andThen(op.pause > 0 ? sim.advance(op.pause) : Effect.void, runOp(sim, op)), {
      discard: true
    }))

/**
 * The sum of many workflow runs.
 *
 * @since 0.1.0
 */
export interface WorkflowSoakSummary {
  readonly runs: number
  readonly failures: ReadonlyArray<{ readonly seed: number; readonly violations: ReadonlyArray<string> }>
  readonly events: number
  readonly checks: number
  readonly simulatedMs: number
  readonly tally: WorkflowReport["tally"]
  readonly violations: Readonly<Partial<Record<WorkflowViolationKind, number>>>
}

const isTallyKey = (key: string): key is keyof WorkflowReport["tally"] =>
  Object.hasOwn(emptyTally(), key)


/**
 * Runs seeds `from` … `from + seeds - 1` and sums them.
 *
 * @since 0.1.0
 */
export const workflowSoak = (options: {
  readonly from?: number
  readonly seeds: number
  readonly ops?: number
  readonly broken?: WorkflowBrokenBuild | undefined
  readonly maxFailures?: number
}): Effect.Effect<WorkflowSoakSummary> =>
  Effect.gen(function*() {
    const from = options.from ?? 1
    const failures: Array<{ readonly seed: number; readonly violations: ReadonlyArray<string> }> = []
    const violations: Partial<Record<WorkflowViolationKind, number>> = {}
    let events = 0
    let checks = 0
    let simulatedMs = 0
    let runs = 0
    const tally = emptyTally()
    for (let seed = from; seed < from + options.seeds; seed++) {
      const report = yield* runWorkflowWorkload({ seed, broken: options.broken }, generateWorkflowWorkload(seed, options.ops ?? 40))
      runs++
      events += report.trace.length
      checks += report.checks
      simulatedMs += report.simulatedMs
      for (const [key, value] of Object.entries(report.tally)) if (isTallyKey(key)) tally[key] += value
      for (const violation of report.violations) violations[violation.kind] = (violations[violation.kind] ?? 0) + 1
      if (!report.ok) {
        failures.push({ seed, violations: report.violations.map((violation) => `${violation.kind}: ${violation.message}`) })
        if (failures.length >= (options.maxFailures ?? 5)) break
      }
    }
    return { runs, failures, events, checks, simulatedMs, tally, violations }
  })

/**
 * The summary as `npm run sim -- --workflow` prints it; each failing seed
 * with its replay command, made from `args` (the command line's flags).
 *
 * @since 0.1.0
 */
export const formatWorkflowSummary = (
  summary: WorkflowSoakSummary,
  elapsedMs: number,
  args: SimArgs = { workflow: true }
): string => {
  const t = summary.tally
  const lines = [
    `workflow simulation`,
    `runs: ${summary.runs}   failures: ${summary.failures.length}   wall time: ${(elapsedMs / 1000).toFixed(1)} s (${(elapsedMs / Math.max(1, summary.runs)).toFixed(1)} ms/run)`,
    `events: ${summary.events}   invariant checks: ${summary.checks}   simulated time: ${(summary.simulatedMs / 3_600_000).toFixed(1)} h`,
    `messages: ${t.messages}   terminals surfaced: ${t.terminals}   detach handshakes: ${t.handshakes} (${t.detached} detached)`,
    `stages closed: ${t.stagesClosed}   late asks: ${t.lateAsks} (${t.postMortems} post-mortem turns, ${t.replyErrors} replyErrors in all)   to the parent chat: ${t.parentChat}   faults: ${t.faults}`
  ]
  const kinds = Object.entries(summary.violations)
  if (kinds.length > 0) lines.push(`violations: ${kinds.map(([kind, count]) => `${kind} ×${count}`).join(", ")}`)
  for (const failure of summary.failures) {
    lines.push(`seed ${failure.seed} failed (${replayCommand(failure.seed, args)}):`)
    for (const violation of failure.violations.slice(0, 5)) lines.push(`  ${violation}`)
  }
  return lines.join("\n")
}
