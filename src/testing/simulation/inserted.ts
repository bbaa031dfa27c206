/**
 * The shape of an op a workload flag inserts (`--parked-flush`,
 * `--answer-takeover`, …; pressure's `Storm` and `Flood`): what each such
 * op's module gives Workload.ts's table — how the op is inserted into a
 * seed's ordinary ops, printed and run. Whether a run reached the op's case
 * stays with its runner (`sim.insertedOp`). This module owns only the shape
 * and the places a workload keeps from the ops (`InsertContext`).
 */
import type { Effect } from "effect"
import type { SimulationService } from "./types.ts"

/** An op of a workload: its tag and the simulated time (ms) before it. */
export interface TaggedOp {
  readonly _tag: string
  readonly after: number
}

/**
 * What an inserted op's draw needs to know of its workload: the seed, the
 * world's session count, and the sessions the op must leave alone.
 */
export interface InsertContext {
  readonly seed: number
  /** Sessions in the world; ops name them by index below it. */
  readonly sessions: number
  /**
   * Sessions an op that stops, starts or takes the connection of its
   * session never takes: with groups the supervisor (a new client of it
   * holds no capability), and the ephemeral session (its stop ends it).
   */
  readonly notSession: ReadonlyArray<number>
  /**
   * Sessions a held return never takes as its sender (a bare `register`
   * cannot stand for them): with groups the supervisor and its child, and
   * the ephemeral session.
   */
  readonly notSender: ReadonlyArray<number>
}

/** How an inserted op is printed and run (`formatOp`, `applyOps`). */
export interface InsertedOp<Draw extends TaggedOp> {
  /** The op on one line, without its `+Nms` (`formatOp` adds it); `name` names a session index. */
  readonly format: (op: Draw, name: (index: number) => string) => string
  /** Runs the op in the current simulation; `counter` is its number in the script (message texts carry it). */
  readonly run: (sim: SimulationService, op: Draw, counter: number) => Effect.Effect<void>
}

/**
 * How a workload flag's ops are inserted into a seed's ops: drawn from a
 * stream of their own, each spliced in before the op at its drawn index,
 * so the ordinary ops' draws are unchanged.
 */
export type Insert<Draw extends TaggedOp> = <O>(ops: Array<O | Draw>, context: InsertContext) => void
