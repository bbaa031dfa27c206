/**
 * The `StaleAsk` op of generated workloads (`WorkloadOptions.staleAsk`,
 * `--stale-ask`): an ask whose question its target's connection holds
 * unread past the ask's deadline, then gives back. How it is drawn and
 * inserted, printed and run (`insertStaleAsk`, `staleAskOp`: Workload.ts's
 * table lists them).
 *
 * Why: a question given back past its deadline, never asked, expired — its
 * asker is owed the `expired` receipt, and a retry `E_DELIVERY_EXPIRED` —
 * unless its asker withdrew it before the deadline. The session's wait sends
 * `cancel_ask` as it times out, after the deadline: no withdrawal (review
 * revq Q1, `AskWithdrawals.withdrawnWithin`). The other workloads seldom build that
 * order (the target's connection must outlive the deadline holding the
 * question, and drop after the asker's cancel); the ledger checks the end
 * (`ask-expired-untold`, ledger/askExpiry.ts).
 *
 * The op, in order: T's client stops reading; A asks T with a timeout of
 * `timeoutMs`; once A's wait has ended (its timeout, and its `cancel_ask`
 * written), `lateMs` later T's connection drops on `side` and T's client
 * reconnects by itself (the same instance), its question given back past
 * the deadline. A and T are distinct running sessions of one group and one
 * pi scope; a supervisor and the ephemeral session are never T
 * (`notSession`). The op takes the next running sessions that fit, or is
 * skipped. Drawn from a stream of its own (`Prng.derive(seed, "stale-ask")`)
 * and inserted into the ordinary workload, whose own draws are unchanged.
 */
import { Effect, Schema } from "effect"
import { Prng } from "../Prng.ts"
import { nextRunning } from "./running.ts"
import type { Insert, InsertedOp } from "./inserted.ts"
import type { SimulationService } from "./types.ts"

/** Which side of T's connection drops. */
const StaleAskSide = Schema.Literals(["client", "broker"])

/** The fields of a `StaleAsk` op (sessions by index; see the module header for the order of events). */
export const StaleAskFields = {
  asker: Schema.Int,
  target: Schema.Int,
  timeoutMs: Schema.Int,
  lateMs: Schema.Int,
  side: StaleAskSide,
  notSession: Schema.Array(Schema.Int)
}

/** A drawn `StaleAsk`. */
export interface StaleAskDraw {
  readonly _tag: "StaleAsk"
  readonly after: number
  readonly asker: number
  readonly target: number
  /** The ask's timeout: short of the default liveness interval (10 s), so T's client seldom drops the stalled connection first. */
  readonly timeoutMs: number
  /** From the end of A's wait to T's drop (A's `cancel_ask` on its way, or read). */
  readonly lateMs: number
  readonly side: "client" | "broker"
  /** Sessions the op never takes as T (a supervisor, the ephemeral one). */
  readonly notSession: ReadonlyArray<number>
}

/**
 * The `StaleAsk` op of `seed`'s workload, with the index among the workload's `ops` other ops
 * (0 to `ops`) it goes before; none in a world of fewer than two sessions.
 */
export const drawStaleAsk = (
  seed: number,
  sessions: number,
  ops: number,
  notSession: ReadonlyArray<number> = []
): ReadonlyArray<readonly [number, StaleAskDraw]> => {
  if (sessions < 2) return []
  const prng = Prng.derive(seed, "stale-ask")
  const target = prng.int(0, sessions - 1)
  const asker = (target + prng.int(1, sessions - 1)) % sessions
  const at = prng.int(0, ops)
  return [[at, {
    _tag: "StaleAsk",
    after: prng.int(0, 2500),
    asker,
    target,
    timeoutMs: prng.int(1000, 4000),
    lateMs: prng.int(0, 400),
    side: prng.weighted({ client: 3, broker: 1 }),
    notSession
  }]]
}

/** A `StaleAsk`, printed. */
export const formatStaleAsk = (op: StaleAskDraw, name: (index: number) => string): string => {
  const a = name(op.asker)
  const t = name(op.target)
  return `${t} stops reading; ${a} asks ${t} (timeout ${op.timeoutMs} ms); ${op.lateMs} ms after ${a}'s wait ended ${t}'s connection drops on the ${op.side} side (the same instance comes back, the question given back past its deadline)`
}

/** How long past its timeout the op waits for A's wait to end (a settling round trip may prolong it). */
const WAIT_SLACK_MS = 15_000

/** Runs the op with the drawn sessions, or the next running sessions after them that fit. */
export const runStaleAsk = (sim: SimulationService, op: StaleAskDraw, counter: number): Effect.Effect<void> =>
  Effect.gen(function*() {
    const sessions = sim.sessions
    const target = yield* nextRunning(sessions, op.target, (s) => !op.notSession.includes(sessions.indexOf(s)))
    if (target === undefined) return yield* sim.note("stale ask: skipped (no target running)")
    // One group and one pi scope: an ask of a session the asker cannot see fails before it is sent.
    const asker = yield* nextRunning(
      sessions,
      op.asker,
      (s) => s !== target && s.group === target.group && s.scopeId === target.scopeId
    )
    if (asker === undefined) return yield* sim.note("stale ask: skipped (no asker running)")
    yield* target.stall("client")
    const asked = yield* asker.ask(target.name, `stale question ${counter} ${asker.name}→${target.name}`, { timeout: op.timeoutMs })
    if (asked === undefined) {
      yield* target.resume("client")
      return yield* sim.note("stale ask: skipped (the asker stopped)")
    }
    yield* asked.result(`${op.timeoutMs + WAIT_SLACK_MS} millis`)
    yield* sim.advance(op.lateMs)
    yield* target.drop(op.side)
  })

/** Inserts `seed`'s `StaleAsk` op(s) into a workload's `ops` (`WorkloadOptions.staleAsk`; never taking the connection of `notSession`): each spliced in before the op at its drawn index. */
export const insertStaleAsk: Insert<StaleAskDraw> = (ops, { seed, sessions, notSession }) => {
  for (const [index, op] of drawStaleAsk(seed, sessions, ops.length, notSession)) ops.splice(index, 0, op)
}

/** The `StaleAsk` op as Workload.ts's table of inserted ops prints and runs it. */
export const staleAskOp: InsertedOp<StaleAskDraw> = { format: formatStaleAsk, run: runStaleAsk }
