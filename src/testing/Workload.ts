/**
 * Random workloads: a list of operations generated from a seed and run
 * against a `Simulation` (a failing one is shrunk by Shrink.ts).
 *
 * A workload is plain data, so a failing run prints as a short script and
 * replays exactly: `generateWorkload(seed)` gives the same operations for the
 * same seed, and `runWorkload(seed, ops)` the same trace.
 *
 * This module owns the table of ops a workload flag inserts (`INSERTED`,
 * and `INSERTIONS` in the order a seed's ops depend on) and puts a workload
 * together: the ordinary ops drawn by weight (workload/draw.ts), then each
 * flag's inserted ops, then the controls; `formatOp` and `applyOps` print
 * and run each op, an inserted one through its entry in the table, an
 * ordinary one through workload/plainOps.ts. Each inserted op's module
 * under simulation/ (pressure.ts, parkedFlush.ts, heldReturn.ts, …,
 * answerMailbox.ts) owns its fields, its draw and insertion, its print and
 * its run, and counts whether it reached its case (`sim.insertedOp`). The
 * op Schema and weights are in workload/ops.ts, the options in
 * workload/options.ts, the world a workload runs in in workload/world.ts;
 * this module re-exports them.
 */
import { Effect, Layer } from "effect"
import { withControls } from "./simulation/controls.ts"
import type { Insert, InsertContext, InsertedOp } from "./simulation/inserted.ts"
import { answerMailboxOp, insertAnswerMailbox } from "./simulation/answerMailbox.ts"
import { answerTakeoverOp, insertAnswerTakeover } from "./simulation/answerTakeover.ts"
import { custodyHoldOp, insertCustodyHold } from "./simulation/custodyHold.ts"
import { heldReturnOp, insertHeldReturn } from "./simulation/heldReturn.ts"
import { insertInstanceControl, instanceControlOp } from "./simulation/instanceControl.ts"
import { insertParkedFlush, parkedFlushOp } from "./simulation/parkedFlush.ts"
import { floodOp, insertPressure, stormOp } from "./simulation/pressure.ts"
import { insertReaderReturn, readerReturnOp } from "./simulation/readerReturn.ts"
import { groupMoveOp, insertGroupMove } from "./simulation/groupMove.ts"
import { insertSettleCustody, settleCustodyOp } from "./simulation/settleCustody.ts"
import { insertSettleHold, settleHoldOp } from "./simulation/settleHold.ts"
import { insertStaleAsk, staleAskOp } from "./simulation/staleAsk.ts"
import { Simulation, type SimulationConfig, type SimReport, type SimSession } from "./Simulation.ts"
import { drawPlainOps } from "./workload/draw.ts"
import type { InsertedKind, InsertedOpOf, Op, OpOf } from "./workload/ops.ts"
import type { WorkloadOptions } from "./workload/options.ts"
import { formatPlainOp, runPlainOp } from "./workload/plainOps.ts"
import { childIndexOf, ephemeralIndexOf, HOSTILE_SESSIONS, sessionCountOf, SUPERVISOR_INDEX, workloadConfig } from "./workload/world.ts"

export {
  GROUPS_SUPERVISOR_WEIGHT,
  HOSTILE_WEIGHT,
  TOPIC_COUNT,
  TOPICS_PUBLISH_WEIGHT,
  TOPICS_SUBSCRIBE_WEIGHT,
  UNREGISTER_WEIGHT
} from "./workload/draw.ts"
export { defaultWeights, type Op, type OpKind, OpSchema, type OpWeights, trafficWeights } from "./workload/ops.ts"
export type { WorkloadOptions } from "./workload/options.ts"
export {
  childIndexOf,
  ephemeralIndexOf,
  groupOfIndex,
  groupSpecs,
  HOSTILE_SESSIONS,
  sessionCountOf,
  sessionNames,
  SUPERVISOR_INDEX,
  variedConfig,
  workloadConfig
} from "./workload/world.ts"

/** Each op a workload flag inserts, by kind: how it is printed and run (its module under simulation/). */
const INSERTED: { readonly [K in InsertedKind]: InsertedOp<OpOf<K>> } = {
  Storm: stormOp,
  Flood: floodOp,
  ParkedFlush: parkedFlushOp,
  HeldReturn: heldReturnOp,
  CustodyHold: custodyHoldOp,
  SettleHold: settleHoldOp,
  SettleCustody: settleCustodyOp,
  InstanceControl: instanceControlOp,
  ReaderReturn: readerReturnOp,
  GroupMove: groupMoveOp,
  StaleAsk: staleAskOp,
  AnswerTakeover: answerTakeoverOp,
  AnswerMailbox: answerMailboxOp
}

/**
 * Each workload flag and how it inserts its ops, in the order they are
 * inserted: a later insertion's draw sees the ops before it (their count),
 * so a seed's workload depends on this order. `SettleCustody` comes with
 * `settleHold`, after its `SettleHold`.
 */
const INSERTIONS: ReadonlyArray<readonly [(options: WorkloadOptions) => boolean, Insert<InsertedOpOf>]> = [
  [(options) => options.pressure !== false, insertPressure],
  [(options) => options.parkedFlush === true, insertParkedFlush],
  [(options) => options.heldReturn === true, insertHeldReturn],
  [(options) => options.custodyHold === true, insertCustodyHold],
  [(options) => options.settleHold === true, insertSettleHold],
  [(options) => options.settleHold === true, insertSettleCustody],
  [(options) => options.instanceControl === true, insertInstanceControl],
  [(options) => options.readerReturn === true, insertReaderReturn],
  [(options) => options.staleAsk === true, insertStaleAsk],
  [(options) => options.answerTakeover === true, insertAnswerTakeover],
  [(options) => options.answerMailbox === true, insertAnswerMailbox],
  [(options) => options.groupMove === true, insertGroupMove]
]

/** Whether `op` is one a workload flag inserts (an entry of `INSERTED`). */
const isInserted = (op: Op): op is InsertedOpOf => op._tag in INSERTED

/** The table's entry for inserted ops of kind `kind`. */
const insertedOf = <K extends InsertedKind>(kind: K): InsertedOp<OpOf<K>> => INSERTED[kind]

/**
 * Operations for `seed`: the same list every time.
 *
 * @example
 * const ops = generateWorkload(42, 4, { ops: 20, weights: trafficWeights })
 * for (const op of ops) console.log(formatOp(op, sessionNames(4)))
 * const report = yield* runWorkload({ seed: 42 }, ops, { sessions: 4 })
 */
export const generateWorkload = (seed: number, sessions: number, options: WorkloadOptions = {}): ReadonlyArray<Op> => {
  const ops = drawPlainOps(seed, sessions, options)
  const groups = options.groups === true && sessions >= 2
  const ephemeral = options.unregister === true ? ephemeralIndexOf(sessions, groups) : undefined
  const context: InsertContext = {
    seed,
    sessions,
    notSession: [...(groups ? [SUPERVISOR_INDEX] : []), ...(ephemeral === undefined ? [] : [ephemeral])],
    notSender: [...(groups ? [SUPERVISOR_INDEX, childIndexOf(sessions)] : []), ...(ephemeral === undefined ? [] : [ephemeral])]
  }
  for (const [enabled, insert] of INSERTIONS) if (enabled(options)) insert(ops, context)
  return options.controls === false ? ops : withControls(seed, ops, (op) => op._tag === "Send" ? op.from : undefined)
}

/** One line per op, like the scenario it is. */
export const formatOp = (op: Op, names: ReadonlyArray<string>): string => {
  const name = (index: number) => names[index] ?? `#${index}`
  return `+${op.after}ms ${isInserted(op) ? insertedOf(op._tag).format(op, name) : formatPlainOp(op, name)}`
}

/** The script that runs `ops` in the current simulation. */
export const applyOps = (ops: ReadonlyArray<Op>): Effect.Effect<void, never, Simulation> =>
  Effect.gen(function*() {
    const sim = yield* Simulation
    let counter = 0
    /** Sessions that stopped reading (`Unregister` with `lingerOps`) and leave before the op at `at`, `lingerOps` ops later. */
    let leaving: Array<{ readonly session: SimSession; readonly at: number }> = []
    /** Those due before the op at `upTo`, in the order they were drawn. */
    const leave = (upTo: number) =>
      Effect.gen(function*() {
        const due = leaving.filter((entry) => entry.at <= upTo)
        if (due.length === 0) return
        leaving = leaving.filter((entry) => entry.at > upTo)
        for (const entry of due) yield* entry.session.unregister
      })
    const leaveBefore = (session: SimSession, at: number) => {
      leaving.push({ session, at })
    }
    for (const [index, op] of ops.entries()) {
      yield* sim.advance(op.after)
      yield* leave(index)
      counter++
      yield* isInserted(op) ? insertedOf(op._tag).run(sim, op, counter) : runPlainOp(sim, op, counter, index, leaveBefore)
    }
    yield* leave(Number.POSITIVE_INFINITY)
  })

/**
 * Runs a script in a fresh world for `config` and returns the report (the
 * script ends; `finish` heals, settles and checks).
 *
 * @example
 * const report = yield* runSimulation(
 *   { seed: 1, sessions: ["A", "B"] },
 *   Effect.gen(function*() {
 *     const sim = yield* Simulation
 *     yield* sim.session("A").send("B", "hello")
 *     yield* sim.broker.restart
 *   })
 * )
 * assert.isTrue(report.ok, report.trace.join("\n"))
 */
export const runSimulation = <E>(
  config: SimulationConfig,
  script: Effect.Effect<void, E, Simulation>
): Effect.Effect<SimReport, E> =>
  Effect.gen(function*() {
    const sim = yield* Simulation
    yield* script
    return yield* sim.finish
  }).pipe(Effect.provide(Layer.fresh(Simulation.layer(config))))

/** Runs `ops` (by default the workload generated from `config.seed`). */
export const runWorkload = (
  config: SimulationConfig,
  ops?: ReadonlyArray<Op>,
  options: WorkloadOptions = {}
): Effect.Effect<SimReport> => {
  const count = sessionCountOf(config, options)
  const world = workloadConfig(
    config,
    count,
    options.vary ?? true,
    options.groups === true,
    options.pressure !== false,
    options.unregister === true,
    options.parkedFlush === true,
    // A settle hold needs the same small outboxes as a held return: B's mail to C must not fit C's.
    options.heldReturn === true || options.settleHold === true
  )
  return runSimulation(
    options.hostile === true && world.hostile === undefined ? { ...world, hostile: HOSTILE_SESSIONS } : world,
    applyOps(ops ?? generateWorkload(config.seed, count, options))
  )
}
