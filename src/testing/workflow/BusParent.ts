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
 * surfaced before that terminal, never after (`wf-bus-terminal-order`);
 * that every message the parent's host accepted reaches its model exactly
 * once by the end (`wf-bus-lost`, `wf-bus-duplicate`; C-DLV-14 for a
 * parent); and that every terminal its barrier took does
 * (`wf-bus-terminal-lost`). The bus ledger's own invariants run as usual over the same
 * world.
 *
 * With `parentRestarts`, the parent's process also ends and starts again
 * (`restart`: P is killed, and started after `downMs`), and its session
 * generation is replaced inside the process (`reload`). Each of its session
 * generations keeps a `ParentJournal` over one file of the run, as an
 * engine's parent does: a restarted parent gets back what its idle queue
 * held, and drops the broker's copy of a message its agent already took.
 * The engine (this driver) lives on across the restart, with its run table
 * and the grants its children were launched with (the restarted client gets
 * them as `issuedGrants`).
 *
 * Its parts: the workload (`BusParentWorkload.ts`), the parent's host,
 * model and checks (`BusParentModel.ts`), and here the driver that runs
 * one world and reports.
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
import * as path from "node:path"
import { formatSupervisorMessage } from "../../session/supervisorMessages.ts"
import type { TerminalNotice } from "../../workflow/TerminalBarrier.ts"
import type { ViolationKind } from "../Ledger.ts"
import { Prng } from "../Prng.ts"
import type { SimReport } from "../simulation/types.ts"
import { runSimulation } from "../Workload.ts"
import { Simulation } from "../Simulation.ts"
import { agentOf, checkModel, checkTerminalOrder, checkTerminals, makeRecorder, parentHost, runIdOf } from "./BusParentModel.ts"
import { BUS_CHILDREN, type BusWorkflowBrokenBuild, type BusWorkflowOp, generateBusWorkflowWorkload } from "./BusParentWorkload.ts"
import { runDir } from "./runDir.ts"

export { BUS_CHILDREN, type BusWorkflowBrokenBuild, type BusWorkflowOp, generateBusWorkflowWorkload } from "./BusParentWorkload.ts"

/** Settings of one bus workflow run. */
export interface BusWorkflowConfig {
  readonly seed: number
  /** Operations to generate when none are given. Default 30. */
  readonly ops?: number | undefined
  readonly broken?: BusWorkflowBrokenBuild | undefined
  /** How long the healed world settles before the final checks (ms). Default 15,000 (reconnects take at most 4 s). */
  readonly settleMs?: number | undefined
  /** The generated workload restarts the parent's process too (`restart`). Default false. */
  readonly parentRestarts?: boolean | undefined
  /** `--strict`: the bus ledger counts messages lost in flight to a dying receiver as violations. Default false. */
  readonly strictInFlight?: boolean | undefined
  /** `--tolerate`: bus violation kinds reported without failing the run. Default none. */
  readonly tolerate?: ReadonlyArray<ViolationKind> | undefined
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
  /** Children's messages the parent's host accepted (each once, however often it was handed over). */
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
  /** Times the parent's process restarted. */
  readonly restarts: number
  /** Times the parent's session generation was replaced inside its process. */
  readonly reloads: number
  /** Messages a restarted parent's journal handed over again (its idle queue held them when the process ended). */
  readonly restored: number
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
  Effect.scoped(Effect.gen(function*() {
    const ops = operations ?? generateBusWorkflowWorkload(config.seed, config.ops, { parentRestarts: config.parentRestarts })
    // A parent that restarts keeps a journal (unless the broken build leaves it out), in a directory of the run's.
    const journaled = ops.some((op) => op._tag === "restart" || op._tag === "reload") &&
      config.broken !== "parent-without-journal"
    const journalFile = journaled ? path.join(yield* runDir, "P.parent-journal.jsonl") : undefined
    const recorder = makeRecorder(BUS_CHILDREN)
    let restarts = 0
    let reloads = 0
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
            if (outcome._tag === "Success") recorder.handedTerminals.push(runId)
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
          case "restart": {
            // The process ends: its session generation, idle queue and journal with it.
            recorder.parent = undefined
            yield* sim.session("P").kill
            if (op.downMs > 0) yield* sim.advance(op.downMs)
            yield* sim.session("P").start
            restarts++
            break
          }
          case "reload": {
            // A new session generation over the same client: the old one's idle queue and journal close with it.
            recorder.parent = undefined
            yield* sim.session("P").replaceGeneration
            reloads++
            break
          }
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
        {
          name: "P",
          agent: {
            mode: "manual",
            host: parentHost(recorder, journalFile, { marks: config.broken !== "journal-without-marks" })
          }
        },
        ...BUS_CHILDREN.map((name) => ({ name, supervisor: "P" }))
      ],
      durability: Prng.derive(config.seed, "bus-workflow-world").chance(0.5) ? "durable" : "memory",
      settleMs: config.settleMs ?? 15_000,
      ...(config.strictInFlight === true ? { strictInFlight: true } : {}),
      ...(config.tolerate === undefined ? {} : { tolerate: config.tolerate })
    }, script)
    const order = checkTerminalOrder(recorder)
    const { checked } = order
    const violations = [...order.violations, ...checkModel(recorder), ...checkTerminals(recorder)]
    return {
      seed: config.seed,
      ok: bus.ok && violations.length === 0,
      bus,
      violations,
      accepted: recorder.acceptedCount,
      terminals: recorder.model.filter((label) => label.startsWith("terminal:")).length,
      checked,
      late: recorder.lateCount,
      supervisorChannel: recorder.supervisorCount,
      restarts,
      reloads,
      restored: recorder.restoredCount
    }
  }))
