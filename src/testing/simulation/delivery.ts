/**
 * Delivery modes in generated workloads (`delivery-v1`): the `DeliverySend`
 * operation — a send with a chosen mode, or a burst of replace updates on one
 * thread — how it is drawn, printed and run. workload/draw.ts and
 * workload/plainOps.ts call these; the invariants it exercises live in ledger/delivery.ts.
 */
import { Effect, Schema } from "effect"
import type { Prng } from "../Prng.ts"
import type { SimSession, SimulationService } from "./types.ts"

/** The modes a `DeliverySend` draws: `replace` is `queue` + `queueMode: "replace"` on a thread. */
export const DeliverySendMode = Schema.Literals(["steer", "queue", "passive", "replace"])
/** A drawn mode. */
export type DeliverySendMode = typeof DeliverySendMode.Type

/**
 * The fields of a `DeliverySend` op: sender and target by index, the mode,
 * the thread (for `replace`: `t<thread>`), how many messages (a burst, for
 * `replace`) and the simulated time between two of them.
 */
export const DeliverySendFields = {
  from: Schema.Int,
  to: Schema.Int,
  mode: DeliverySendMode,
  thread: Schema.Int,
  count: Schema.Int,
  gapMs: Schema.Int
}

/** A `DeliverySend` op's fields, as drawn. */
export interface DeliverySendDraw {
  readonly mode: DeliverySendMode
  readonly thread: number
  readonly count: number
  readonly gapMs: number
}

/** How often a `DeliverySend` is drawn in a workload with `delivery: true`, against the other weights. */
export const DELIVERY_WEIGHT = 16

/**
 * Draws a mode; a replace burst of 2–6 updates on one of 3 threads, 0–700 ms
 * apart (most coalesce within the broker's 1500 ms window, some open a new one).
 */
export const drawDeliverySend = (prng: Prng): DeliverySendDraw => {
  const mode = prng.pick<DeliverySendMode>(["steer", "queue", "passive", "replace", "replace"])
  return mode === "replace"
    ? { mode, thread: prng.int(0, 2), count: prng.int(2, 6), gapMs: prng.int(0, 700) }
    : { mode, thread: 0, count: 1, gapMs: 0 }
}

/** One line of the printed workload. */
export const formatDeliverySend = (draw: DeliverySendDraw, from: string, to: string): string =>
  draw.mode === "replace"
    ? `${from} sends ${draw.count} replace updates to ${to} on thread t${draw.thread}, ${draw.gapMs} ms apart`
    : `${from} sends to ${to} (${draw.mode})`

/** Runs the op: the send, or the burst, with the simulated gaps between. */
export const runDeliverySend = (
  sim: SimulationService,
  draw: DeliverySendDraw,
  from: SimSession,
  to: SimSession,
  counter: number
): Effect.Effect<void> =>
  Effect.gen(function*() {
    const options = draw.mode === "replace"
      ? { delivery: "queue" as const, queueMode: "replace" as const, threadId: `t${draw.thread}` }
      : { delivery: draw.mode }
    for (let i = 0; i < draw.count; i++) {
      if (i > 0) yield* sim.advance(draw.gapMs)
      yield* from.send(to.name, `${draw.mode} ${counter}.${i} ${from.name}→${to.name}`, options)
    }
  })
