/**
 * The whole workflow layer on the simulated bus (`npm run sim --
 * --workflow-bus-full`): the real broker, clients and session runtimes
 * with the bus's faults (broker crashes, durable or memory; connection
 * drops on either side; stalled readers), and on them
 *
 * - `P`, a parent whose host is `makeParentSession` (`busySteer` drawn per
 *   seed), its background children `C1`, `C2`, its foreground child `F1`
 *   (detach handshake against the attached child, C-ORD-10…20), and its
 *   foreground parallel group `F2`–`F4` (one commit releases it, C-ORD-21,
 *   C-ORD-22); the children send, send progress on the supervisor channel,
 *   ask the parent (the parent's model answers over the broker) and end
 *   their runs with terminals through the barrier (BusFullParent.ts);
 * - `Stage`, a stage session hosted by `Stages` (admission while open, a
 *   busy stage's foreground child `Worker`, close with the terminal
 *   snapshot, late asks to post-mortem turns or correlated replyErrors),
 *   with the peer `Peer` (BusFullStage.ts).
 *
 * The workflow ledger (`WorkflowLedger`) records where every message the
 * workflow hosts accepted ended and checks `wf-terminal-order`,
 * `wf-snapshot-early`, `wf-lost-at-close`, `wf-late-ask`, `wf-lost`,
 * `wf-duplicate` and `wf-skipped-launched`; the bus ledger checks every bus
 * invariant over the same world. What neither checks is in docs/testing.md
 * ("The whole workflow layer on the bus").
 */
import { type Clock, Effect, Exit, FiberSet, Scope } from "effect"
import * as path from "node:path"
import { formatSupervisorMessage } from "../../session/supervisorMessages.ts"
import { Prng } from "../Prng.ts"
import type { SimReport } from "../simulation/types.ts"
import { Simulation } from "../Simulation.ts"
import { runSimulation } from "../Workload.ts"
import type { BusFullCore } from "./BusFullCore.ts"
import { type FullParent, makeFullParent } from "./BusFullParent.ts"
import { type FullStageEngine, makeFullStage } from "./BusFullStage.ts"
import {
  type BusFullConfig,
  type BusFullOp,
  FULL_CHILDREN,
  FULL_FOREGROUND,
  FULL_GROUP,
  FULL_STAGE,
  generateBusFullWorkload
} from "./BusFullWorkload.ts"
import { runDir } from "./runDir.ts"
import { type WorkflowViolation, WorkflowLedger } from "./WorkflowLedger.ts"

/** What one run found. */
export interface BusFullReport {
  readonly seed: number
  /** Every bus invariant and every workflow invariant held. */
  readonly ok: boolean
  readonly bus: SimReport
  /** The workflow ledger's violations. */
  readonly violations: ReadonlyArray<WorkflowViolation>
  readonly busySteer: "steer" | "queue"
  /** Invariant checks the workflow ledger made. */
  readonly checks: number
  /** The workflow ledger's and the engine's counters. */
  readonly tally: Readonly<Record<string, number>>
}

/** How long the children's and the peer's asks wait for their answer: less than the final settling, so each settles. */
const ASK_TIMEOUT = "8 seconds"

/** Applies one operation. */
const apply = (
  parent: FullParent,
  op: BusFullOp,
  counter: { n: number; reloads: number; reloadsSkipped: number },
  engine: FullStageEngine
) =>
  Effect.gen(function*() {
    const sim = yield* Simulation
    const child = (name: string) => parent.children.get(name)
    switch (op._tag) {
      case "send":
        yield* sim.session(op.child).send("P", `${op.child} update ${++counter.n}`, { delivery: op.delivery })
        return
      case "progress": {
        const sender = { runId: parent.runIdOf(op.child), agent: op.child, index: FULL_CHILDREN.indexOf(op.child) }
        yield* sim.session(op.child).supervisorSend(formatSupervisorMessage("progress_update", sender, `${op.child} progress ${++counter.n}`))
        return
      }
      case "ask":
        yield* sim.session(op.child).ask("P", `${op.child} question ${++counter.n}`, { timeout: ASK_TIMEOUT })
        return
      case "answer": {
        const ask = parent.nextAsk()
        if (ask !== undefined) yield* sim.session("P").reply(`answer to ${ask.label}`, { replyTo: ask.messageId })
        return
      }
      case "terminal": {
        const found = child(op.child)
        if (found !== undefined) yield* parent.terminal(found)
        return
      }
      case "busy":
        return yield* parent.setBusy(op.busy)
      case "foreground": {
        const found = child(FULL_FOREGROUND)
        if (found !== undefined) yield* parent.foreground(found, op.unavailable)
        return
      }
      case "group":
        return yield* parent.group(FULL_GROUP.flatMap((name) => child(name) ?? []), op.concurrency)
      case "stage-open":
        return yield* engine.open
      case "stage-busy":
        return yield* engine.setBusy(op.busy)
      case "stage-foreground":
        return yield* engine.foreground(op.unavailable)
      case "stage-send": {
        const from = op.from === "peer" ? FULL_STAGE.peer : FULL_STAGE.child
        const text = `${from} ${op.ask ? "question" : "note"} ${++counter.n}`
        if (op.ask) yield* sim.session(from).ask(FULL_STAGE.session, text, { timeout: ASK_TIMEOUT })
        else yield* sim.session(from).send(FULL_STAGE.session, text)
        return
      }
      case "stage-close":
        return yield* engine.close
      case "retained-gone":
        return yield* engine.retainedGone
      case "crash":
        return yield* sim.broker.crashFor(op.downMs)
      case "reload":
        // A subagent call's tool would be cut by a reload: the engine reloads only between calls.
        if (parent.inCall()) {
          counter.reloadsSkipped++
          return yield* sim.note("engine: P's reload waits: a subagent call holds it (skipped)")
        }
        counter.reloads++
        return yield* sim.session("P").replaceGeneration
      case "drop":
        return yield* sim.session(op.who).drop(op.side)
      case "stall":
        return yield* sim.session(op.who).stall(op.side, op.forMs)
    }
  })

/**
 * Runs one workload (generated from the seed unless given) on the bus with
 * the whole workflow layer hosted, and checks the bus ledger and the
 * workflow invariants.
 */
export const runBusWorkflowFull = (
  config: BusFullConfig,
  operations?: ReadonlyArray<BusFullOp>
): Effect.Effect<BusFullReport> =>
  Effect.scoped(Effect.gen(function*() {
    const ops = operations ?? generateBusFullWorkload(config.seed, config.ops, { parentReloads: config.parentReloads })
    // A parent that reloads keeps a journal, in a directory of the run's.
    const journalFile = ops.some((op) => op._tag === "reload") ? path.join(yield* runDir, "P.parent-journal.jsonl") : undefined
    const world = Prng.derive(config.seed, "bus-workflow-full-world")
    const busySteer = config.busySteer ?? (world.chance(0.5) ? "steer" : "queue")
    const durability = config.durability ?? (world.chance(0.5) ? "durable" : "memory")
    const scope = yield* Scope.make()
    const fibers = yield* FiberSet.make<unknown, unknown>().pipe(Scope.provide(scope))
    let clock: Clock.Clock | undefined
    const core: BusFullCore = {
      ledger: new WorkflowLedger(() => clock?.currentTimeMillisUnsafe() ?? 0),
      broken: config.broken,
      scope,
      fibers,
      alias: (id) => id,
      note: () => undefined
    }
    const parent = makeFullParent(core, busySteer, { journalFile })
    const stage = makeFullStage(core)
    const counter = { n: 0, reloads: 0, reloadsSkipped: 0 }
    const stageTally = { snapshots: 0, stageDetached: 0 }

    const script = Effect.gen(function*() {
      const sim = yield* Simulation
      clock = yield* Effect.clockWith(Effect.succeed)
      core.alias = (id) => sim.ledger.alias(id)
      core.note = (text) => sim.ledger.note(text)
      yield* sim.note(`engine: P's busySteer is ${busySteer}`)
      for (const found of parent.children.values()) found.id = sim.session(found.name).id
      const engine = yield* stage.start(sim.session(FULL_STAGE.child).id)
      for (const op of ops) {
        if (op.pauseMs > 0) yield* sim.advance(op.pauseMs)
        yield* apply(parent, op, counter, engine)
      }
      // The engine's last turn: the parent goes idle, every run still held by a call ends, every ask seen is answered.
      yield* parent.setBusy(false)
      yield* engine.setBusy(false)
      for (let round = 0; round < 20; round++) {
        const held = [...parent.children.values()].filter((found) => found.call === "attached")
        if (held.length === 0 && ![...parent.children.values()].some((found) => found.call === "waiting")) break
        for (const found of held) yield* parent.terminal(found)
        yield* sim.advance(200)
      }
      yield* sim.advance(2000)
      for (let ask = parent.nextAsk(); ask !== undefined; ask = parent.nextAsk()) {
        yield* sim.session("P").reply(`answer to ${ask.label}`, { replyTo: ask.messageId })
      }
      yield* sim.advance(1000)
      const current = parent.current()
      if (current !== undefined) yield* current.idle
      Object.assign(stageTally, engine.tally)
    })

    const bus = yield* runSimulation({
      seed: config.seed,
      sessions: [
        { name: "P", agent: { mode: "manual", host: parent.host } },
        ...FULL_CHILDREN.map((name) => ({ name, supervisor: "P" })),
        { name: FULL_STAGE.session, agent: { mode: "manual", host: stage.host } },
        { name: FULL_STAGE.peer, agent: { mode: "manual" } },
        { name: FULL_STAGE.child, agent: { mode: "manual" } }
      ],
      durability,
      settleMs: config.settleMs ?? 15_000,
      ...(config.strictInFlight === true ? { strictInFlight: true } : {}),
      ...(config.tolerate === undefined ? {} : { tolerate: config.tolerate })
    }, script)
    // The world has settled and closed: the engine's own checks, then its Scope.
    parent.checkGroups()
    parent.checkTerminals()
    core.ledger.finish()
    yield* Scope.close(scope, Exit.void)
    const violations = core.ledger.found
    return {
      seed: config.seed,
      ok: bus.ok && violations.length === 0,
      bus,
      violations,
      busySteer,
      checks: core.ledger.checks,
      tally: {
        ...core.ledger.tally,
        ...parent.tally,
        ...stageTally,
        ...(journalFile === undefined ? {} : { reloads: counter.reloads, reloadsSkipped: counter.reloadsSkipped })
      }
    }
  }))
