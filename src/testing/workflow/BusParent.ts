/**
 * The workflow parent hosted on the simulated bus: one bus-simulation
 * session (`P`) whose `Host.deliver` is the real `makeParentSession`
 * composition of `effect-intercom/workflow` (`inboundEntry` + `ParentInbox`,
 * `IdleQueue`, `DetachHandshake`, `TerminalBarrier`), and sessions `C1`–`C3`
 * acting as its background children (delegated children of `P`): they send
 * ordinary messages over the simulated broker (tagged with their current
 * run by `resolveSource`) and progress updates through `supervisorSend` (the
 * run in the text, on the broker's supervisor channel, C-ORD-24), and
 * the engine (the driver) hands each run's terminal notice to the barrier.
 * The broker's faults (crash and restart, durable or memory, connection
 * drops, stalled readers) run as in any bus workload.
 *
 * It owns one run's recorder (what the parent accepted, what reached its
 * model, in order) and checks C-ORD-25 on it: a child's message the parent's
 * host accepted before the engine handed over the run's terminal is
 * surfaced before that terminal, never after (`wf-bus-terminal-order`). The
 * bus ledger's own invariants run as usual over the same world.
 *
 * Not checked: a message the parent's host had not accepted when the
 * terminal was handed over. The engine's terminal travels outside the bus,
 * so a message still in flight (a crashed broker's mailbox, a dropped or
 * stalled connection) arrives after it; a progress update keeps its run
 * (it is in the text), a plain send is named by `resolveSource` after the
 * child's next run (`late` counts both). Messages the bus ledger excuses
 * (lost in flight to a dropped connection, lost with a memory-mode broker)
 * never reach the host and so are never accepted.
 */
import { Clock, Effect } from "effect"
import type { SessionInfo } from "../../protocol/frames.ts"
import type { Inbound } from "../../session/Host.ts"
import { formatSupervisorMessage } from "../../session/supervisorMessages.ts"
import { inboundEntry, inboundMessageOf, supervisorSourceOf } from "../../workflow/InboundAdapter.ts"
import type { EntrySource } from "../../workflow/InboundEntry.ts"
import { makeParentSession, type ParentAgent, type ParentEntry, type ParentSession } from "../../workflow/ParentSession.ts"
import type { TerminalBatch, TerminalNotice } from "../../workflow/TerminalBarrier.ts"
import type { InboundMessage } from "../../client/events.ts"
import type { AgentHost } from "../SimAgent.ts"
import { Prng } from "../Prng.ts"
import type { SimReport } from "../simulation/types.ts"
import { runSimulation } from "../Workload.ts"
import { Simulation } from "../Simulation.ts"

/** The bus-hosted parent's children (bus session names). */
export const BUS_CHILDREN: ReadonlyArray<string> = ["C1", "C2", "C3"]

/** One operation of a bus workflow workload, after `pauseMs` of simulated time. */
export type BusWorkflowOp =
  | { readonly _tag: "send"; readonly child: string; readonly delivery: "steer" | "queue"; readonly pauseMs: number }
  | { readonly _tag: "progress"; readonly child: string; readonly pauseMs: number }
  | { readonly _tag: "terminal"; readonly child: string; readonly pauseMs: number }
  | { readonly _tag: "busy"; readonly busy: boolean; readonly pauseMs: number }
  | { readonly _tag: "crash"; readonly downMs: number; readonly pauseMs: number }
  | { readonly _tag: "drop"; readonly who: string; readonly side: "client" | "broker"; readonly pauseMs: number }
  | { readonly _tag: "stall"; readonly who: string; readonly side: "client" | "broker"; readonly forMs: number; readonly pauseMs: number }

/**
 * A deliberately broken composition, to prove the invariant bites:
 * `barrier-without-prelude` hands the terminal to the agent without the
 * barrier's claim of the run's queued messages.
 */
export type BusWorkflowBrokenBuild = "barrier-without-prelude"

/** Settings of one bus workflow run. */
export interface BusWorkflowConfig {
  readonly seed: number
  /** Operations to generate when none are given. Default 30. */
  readonly ops?: number | undefined
  readonly broken?: BusWorkflowBrokenBuild | undefined
  /** How long the healed world settles before the final checks (ms). Default 15,000 (reconnects take at most 4 s). */
  readonly settleMs?: number | undefined
}

/** What one bus workflow run found. */
export interface BusWorkflowReport {
  readonly seed: number
  /** The bus ledger held and so did `wf-bus-terminal-order`. */
  readonly ok: boolean
  /** The bus simulation's own report (its invariants, tallies, trace). */
  readonly bus: SimReport
  /** `wf-bus-terminal-order` violations. */
  readonly violations: ReadonlyArray<string>
  /** Children's messages the parent's host accepted. */
  readonly accepted: number
  /** Terminals the parent's agent was handed. */
  readonly terminals: number
  /** Messages that were accepted before their run's terminal and checked against it. */
  readonly checked: number
  /**
   * Messages sent before their child's terminal that a fault held up until
   * after the engine handed the terminal over: not checked (see the header).
   */
  readonly late: number
  /** Accepted progress updates whose run the parent read from the broker's supervisor channel (C-ORD-24). */
  readonly supervisorChannel: number
}

/**
 * A seeded workload: children's sends (mostly), terminals (each followed by
 * the child's next run), the parent going busy and idle, and broker and
 * connection faults. Plain data: the same list for the same seed.
 */
export const generateBusWorkflowWorkload = (seed: number, count = 30): ReadonlyArray<BusWorkflowOp> => {
  const prng = Prng.derive(seed, "bus-workflow")
  const ops: Array<BusWorkflowOp> = []
  const who = ["P", ...BUS_CHILDREN]
  for (let i = 0; i < count; i++) {
    const pauseMs = prng.chance(0.6) ? prng.int(0, 20) : prng.int(50, 2500)
    const kind = prng.weighted({ send: 8, progress: 4, terminal: 3, busy: 3, crash: 1, drop: 2, stall: 1 })
    switch (kind) {
      case "send":
        ops.push({ _tag: "send", child: prng.pick(BUS_CHILDREN), delivery: prng.chance(0.5) ? "steer" : "queue", pauseMs })
        break
      case "progress":
        ops.push({ _tag: "progress", child: prng.pick(BUS_CHILDREN), pauseMs })
        break
      case "terminal":
        ops.push({ _tag: "terminal", child: prng.pick(BUS_CHILDREN), pauseMs })
        break
      case "busy":
        ops.push({ _tag: "busy", busy: prng.chance(0.6), pauseMs })
        break
      case "crash":
        ops.push({ _tag: "crash", downMs: prng.int(100, 3000), pauseMs })
        break
      case "drop":
        ops.push({ _tag: "drop", who: prng.pick(who), side: prng.chance(0.5) ? "client" : "broker", pauseMs })
        break
      case "stall":
        ops.push({ _tag: "stall", who: prng.pick(who), side: prng.chance(0.5) ? "client" : "broker", forMs: prng.int(100, 2000), pauseMs })
        break
    }
  }
  return ops
}

/** One run's view of the parent: the engine's run table and the parent's model. */
interface Recorder {
  busy: boolean
  parent: ParentSession<string> | undefined
  readonly runs: Map<string, number>
  readonly childIds: Map<string, string>
  /** Per run id: message ids the parent's host accepted, in order. */
  readonly accepted: Map<string, Array<string>>
  /** What reached the parent's model, in order: message ids and `terminal:<run>`. */
  readonly model: Array<string>
  /** Per run id: what was accepted before the engine handed over its terminal. */
  readonly before: Map<string, ReadonlyArray<string>>
  acceptedCount: number
  /** Per child: the `terminalAt` of its last terminal. */
  readonly lastTerminalAt: Map<string, number>
  /** Messages sent before their child's last terminal but accepted after it (held up by a fault). */
  lateCount: number
  /** Accepted messages whose source the parent read from the supervisor channel's run metadata. */
  supervisorCount: number
  note: (text: string) => void
}

const runIdOf = (recorder: Recorder, child: string): string => `run-${child}-${recorder.runs.get(child) ?? 1}`

/** The engine's view of a sender: a child's plain sends carry its current run (C-ORD-24). */
const resolverOf = (recorder: Recorder) => (from: SessionInfo): EntrySource | undefined =>
  from.name !== undefined && recorder.runs.has(from.name)
    ? { subagentRunId: runIdOf(recorder, from.name), subagentAgent: from.name }
    : undefined

const agentOf = (recorder: Recorder): ParentAgent<string> => {
  const push = (entries: ReadonlyArray<ParentEntry>) => {
    for (const entry of entries) recorder.model.push(entry.messageId)
  }
  return {
    isIdle: Effect.sync(() => !recorder.busy),
    deliverBatch: (batch) => Effect.sync(() => push(batch)),
    surface: (entry) => Effect.sync(() => push([entry])),
    passive: (entry) => Effect.sync(() => push([entry])),
    dispatchTerminal: (batch: TerminalBatch<InboundMessage, string>) =>
      Effect.sync(() => {
        recorder.note(`parent model ← ${batch.prelude.length} claimed message(s), then the terminal of ${batch.terminal.runId}`)
        push(batch.prelude)
        recorder.model.push(`terminal:${batch.terminal.runId}`)
      })
  }
}

/** The parent session's host: records acceptance, then the real workflow composition decides. */
const parentHost = (recorder: Recorder): AgentHost => (context) =>
  Effect.gen(function*() {
    const resolveSource = resolverOf(recorder)
    const parent = yield* makeParentSession(agentOf(recorder), {
      generation: context.generation,
      busySteer: "queue",
      resolveSource
    })
    recorder.parent = parent
    recorder.note = context.note
    return (inbound: Inbound) =>
      Effect.suspend(() => {
        // The source as the parent reads it: the supervisor channel's run metadata, else resolveSource.
        const source = inboundEntry(inboundMessageOf(inbound), { resolveSource }).source
        if (source !== undefined && source.subagentAgent !== undefined) {
          recorder.childIds.set(source.subagentAgent, inbound.from.id)
          const list = recorder.accepted.get(source.subagentRunId) ?? []
          list.push(inbound.message.id)
          recorder.accepted.set(source.subagentRunId, list)
          recorder.acceptedCount++
          if (supervisorSourceOf(inboundMessageOf(inbound)) !== undefined) recorder.supervisorCount++
          if (inbound.message.timestamp <= (recorder.lastTerminalAt.get(source.subagentAgent) ?? -1)) recorder.lateCount++
        }
        return parent.deliver(inbound)
      })
  })

/** C-ORD-25 on the bus-hosted parent: accepted before the terminal ⇒ in the model before it. */
const checkTerminalOrder = (recorder: Recorder): { violations: Array<string>; checked: number } => {
  const violations: Array<string> = []
  let checked = 0
  const position = new Map<string, number>()
  recorder.model.forEach((label, index) => {
    if (!position.has(label)) position.set(label, index)
  })
  for (const [runId, before] of recorder.before) {
    const at = position.get(`terminal:${runId}`)
    if (at === undefined) continue
    for (const id of before) {
      checked++
      const surfaced = position.get(id)
      if (surfaced === undefined || surfaced > at) {
        violations.push(
          `wf-bus-terminal-order: ${runId}'s message ${id} was accepted by the parent before its terminal and ${
            surfaced === undefined ? "never surfaced" : "surfaced after it"
          }`
        )
      }
    }
  }
  return { violations, checked }
}

/**
 * Runs one bus workflow workload (generated from the seed unless given) in
 * a bus simulation with the parent `P` hosted by the workflow layer, and
 * checks the bus ledger and `wf-bus-terminal-order`.
 */
export const runBusWorkflow = (
  config: BusWorkflowConfig,
  operations?: ReadonlyArray<BusWorkflowOp>
): Effect.Effect<BusWorkflowReport> =>
  Effect.gen(function*() {
    const ops = operations ?? generateBusWorkflowWorkload(config.seed, config.ops)
    const recorder: Recorder = {
      busy: false,
      parent: undefined,
      runs: new Map(BUS_CHILDREN.map((child) => [child, 1])),
      childIds: new Map(),
      accepted: new Map(),
      model: [],
      before: new Map(),
      acceptedCount: 0,
      lastTerminalAt: new Map(),
      lateCount: 0,
      supervisorCount: 0,
      note: () => undefined
    }
    const agent = agentOf(recorder)
    let counter = 0
    const script = Effect.gen(function*() {
      const sim = yield* Simulation
      for (const op of ops) {
        if (op.pauseMs > 0) yield* sim.advance(op.pauseMs)
        switch (op._tag) {
          case "send": {
            yield* sim.session(op.child).send("P", `${op.child} update ${++counter}`, { delivery: op.delivery })
            break
          }
          case "progress": {
            // contact_supervisor's progress_update: the run travels in the text, on the broker's supervisor channel (C-ORD-24).
            const sender = { runId: runIdOf(recorder, op.child), agent: op.child, index: BUS_CHILDREN.indexOf(op.child) }
            yield* sim.session(op.child).supervisorSend(
              formatSupervisorMessage("progress_update", sender, `${op.child} progress ${++counter}`)
            )
            break
          }
          case "terminal": {
            const runId = runIdOf(recorder, op.child)
            const parent = recorder.parent
            if (parent === undefined) break
            const terminalAt = yield* Clock.currentTimeMillis
            recorder.before.set(runId, [...(recorder.accepted.get(runId) ?? [])])
            recorder.lastTerminalAt.set(op.child, terminalAt)
            const childId = recorder.childIds.get(op.child)
            const notice: TerminalNotice<string> = {
              owner: "P",
              runId,
              source: op.child,
              terminalAt,
              status: "completed",
              child: { ids: childId === undefined ? [] : [childId], names: [op.child] },
              notice: runId
            }
            const outcome = config.broken === "barrier-without-prelude"
              ? yield* Effect.exit(agent.dispatchTerminal({ prelude: [], terminal: notice }))
              : yield* Effect.exit(parent.terminal(notice))
            yield* sim.note(`engine: terminal of ${runId} ${outcome._tag === "Success" ? "handed over" : "refused"}`)
            // The child resumes as a new run (C-ORD-30).
            recorder.runs.set(op.child, (recorder.runs.get(op.child) ?? 1) + 1)
            break
          }
          case "busy": {
            recorder.busy = op.busy
            yield* sim.note(`engine: parent ${op.busy ? "busy" : "idle"}`)
            if (!op.busy && recorder.parent !== undefined) yield* recorder.parent.idle
            break
          }
          case "crash":
            yield* sim.broker.crashFor(op.downMs)
            break
          case "drop":
            yield* sim.session(op.who).drop(op.side)
            break
          case "stall":
            yield* sim.session(op.who).stall(op.side, op.forMs)
            break
        }
      }
      // The engine's last turn ends: the parent goes idle and takes what waits.
      recorder.busy = false
      yield* sim.advance(1000)
      if (recorder.parent !== undefined) yield* recorder.parent.idle
    })
    const bus = yield* runSimulation({
      seed: config.seed,
      sessions: [
        { name: "P", agent: { mode: "manual", host: parentHost(recorder) } },
        ...BUS_CHILDREN.map((name) => ({ name, supervisor: "P" }))
      ],
      durability: Prng.derive(config.seed, "bus-workflow-world").chance(0.5) ? "durable" : "memory",
      settleMs: config.settleMs ?? 15_000
    }, script)
    const { checked, violations } = checkTerminalOrder(recorder)
    return {
      seed: config.seed,
      ok: bus.ok && violations.length === 0,
      bus,
      violations,
      accepted: recorder.acceptedCount,
      terminals: recorder.model.filter((label) => label.startsWith("terminal:")).length,
      checked,
      late: recorder.lateCount,
      supervisorChannel: recorder.supervisorCount
    }
  })
