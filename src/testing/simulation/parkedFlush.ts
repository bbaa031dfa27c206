/**
 * The `ParkedFlush` op of generated workloads (`--parked-flush`): a recipient
 * that comes back to more mail than its outbox takes, while it reads slowly
 * and the senders of that mail go on sending, leave, come back or
 * unregister. How it is drawn and inserted, printed and run
 * (`insertParkedFlush`, `parkedFlushOp`: Workload.ts's table lists them).
 *
 * Why: the broker parks what of a registration's mailbox flush does not fit
 * the new outbox on the session's own reader (Output `parkFor`,
 * `Peer.parkedMail`), makes a sender's new mail wait behind its older mail
 * there (`waitsBehindParked`, `parkOwn`), and withholds a departed sender's
 * `session_left` from the recipient until that mail is offered
 * (DepartureHolds.ts, `WithheldDepartures.withholdDeparture`; docs/architecture.md,
 * step 7). The other ops' faults act only on connections already open, so a
 * returning recipient's flush was never parked for long. This op builds that
 * state on purpose; the ledger judges it as any other run (per-sender order,
 * no loss, C-BRK-33's `session_left` after the sender's mail), and the run's
 * `PathTally` counts that the broker got there (`ownParks`, `parkedBehindOwn`,
 * `waitsBehindOwn`, `departuresHeld`, read from `BrokerStats`).
 *
 * The op, in order: the recipient B goes away (an orderly stop or a kill);
 * each sender sends B `count` messages of `size` characters (B's mailbox
 * keeps them); B starts again with its broker-side writes taking `delayMs`
 * each from the dial of its new connection (`SimSession.startSlow`), so the
 * flush fills B's outbox and the rest is parked on B's reader; then, `gapMs`
 * apart, each sender sends `more` messages, then does what `churn` draws for
 * it (nothing, leave and rejoin, die and restart, or unregister), and one
 * that came back sends once more. Once B has started again, one sender
 * mostly cancels or supersedes one of its messages in B's flush
 * (simulation/controls.ts), whose control the broker must keep behind it.
 * B's slow writes end after long enough to
 * write it all; the workload goes on (and `finish` heals and settles).
 *
 * Drawn from a stream of its own (`Prng.derive(seed, "parked-flush")`) and
 * inserted into the ordinary workload, whose own draws are unchanged.
 */
import { Effect, Schema } from "effect"
import { Prng } from "../Prng.ts"
import { type ControlAction, drawOpControl, recentSend, runControl } from "./controls.ts"
import { nextRunning } from "./running.ts"
import type { Insert, InsertedOp } from "./inserted.ts"
import type { SimSession, SimulationService } from "./types.ts"

/** What a sender does once it has sent its `more` messages: `rejoin` stops and starts, `kill` dies and starts. */
export const ParkedFlushChurn = Schema.Literals(["none", "rejoin", "kill", "unregister"])
/** A drawn churn. */
export type ParkedFlushChurn = typeof ParkedFlushChurn.Type

/** The fields of a `ParkedFlush` op (sessions by index; see the module header for the order of events). */
export const ParkedFlushFields = {
  recipient: Schema.Int,
  away: Schema.Literals(["stop", "kill"]),
  senders: Schema.Array(Schema.Int),
  count: Schema.Int,
  size: Schema.Int,
  delayMs: Schema.Int,
  more: Schema.Int,
  gapMs: Schema.Int,
  churn: Schema.Array(ParkedFlushChurn),
  control: Schema.optionalKey(Schema.Literals(["cancel", "supersede", "none"])),
  controlSender: Schema.optionalKey(Schema.Int),
  controlBack: Schema.optionalKey(Schema.Int)
}

/** A drawn `ParkedFlush`. */
export interface ParkedFlushDraw {
  readonly _tag: "ParkedFlush"
  readonly after: number
  readonly recipient: number
  readonly away: "stop" | "kill"
  readonly senders: ReadonlyArray<number>
  readonly count: number
  readonly size: number
  readonly delayMs: number
  readonly more: number
  readonly gapMs: number
  readonly churn: ReadonlyArray<ParkedFlushChurn>
  /**
   * What the sender at `controlSender` (an index into `senders`) does, once
   * B started again, about its `controlBack`-th latest message to B (all of
   * them in B's flush): a cancel, a supersede, or nothing (absent: nothing).
   */
  readonly control?: ControlAction | "none"
  readonly controlSender?: number
  readonly controlBack?: number
}

/** The chance of a second `ParkedFlush` in a seed's workload (there is always one with `--parked-flush`). */
export const SECOND_PARKED_FLUSH_CHANCE = 0.3

/**
 * The broker's outbox budget in characters in a world with `--parked-flush`
 * and no smaller one set (a world without pressure has the production 4 Mi):
 * the op's flush, at least 3 × 3000 characters, never fits it whole.
 */
export const PARKED_FLUSH_OUTBOX_CHARS = 4096

/**
 * The `ParkedFlush` ops of `seed`'s workload (one, sometimes two), each with
 * the index among the workload's `ops` other ops (0 to `ops`) it goes
 * before, in order; none in a world of fewer than two sessions.
 */
export const drawParkedFlush = (
  seed: number,
  sessions: number,
  ops: number
): ReadonlyArray<readonly [number, ParkedFlushDraw]> => {
  if (sessions < 2) return []
  const prng = Prng.derive(seed, "parked-flush")
  const drawn: Array<readonly [number, ParkedFlushDraw]> = []
  const total = prng.chance(SECOND_PARKED_FLUSH_CHANCE) ? 2 : 1
  for (let n = 0; n < total; n++) {
    const recipient = prng.int(0, sessions - 1)
    const others = Array.from({ length: sessions }, (_, i) => i).filter((i) => i !== recipient)
    const senders: Array<number> = []
    for (let k = prng.int(2, 3); k > 0 && others.length > 0; k--) {
      senders.push(others.splice(prng.int(0, others.length - 1), 1)[0]!)
    }
    drawn.push([prng.int(0, ops), {
      _tag: "ParkedFlush",
      after: prng.int(0, 2500),
      recipient,
      away: prng.chance(0.5) ? "stop" : "kill",
      senders,
      count: prng.int(3, 5),
      size: prng.int(1500, 3000),
      delayMs: prng.int(100, 600),
      more: prng.int(1, 3),
      gapMs: prng.int(0, 200),
      churn: senders.map(() => prng.pick<ParkedFlushChurn>(["none", "rejoin", "rejoin", "kill", "unregister", "unregister"]))
    }])
  }
  // From a stream of its own, so the draws above are what they were before controls.
  const controls = Prng.derive(seed, "parked-flush/control")
  return drawn
    .map(([index, op]) =>
      [index, {
        ...op,
        controlSender: controls.int(0, op.senders.length - 1),
        ...drawOpControl(controls, op.count - 1)
      }] as const
    )
    .sort((a, b) => a[0] - b[0])
}

/** A `ParkedFlush`, printed. */
export const formatParkedFlush = (op: ParkedFlushDraw, name: (index: number) => string): string => {
  const churn = op.senders
    .map((sender, i) => [name(sender), op.churn[i] ?? "none"] as const)
    .filter(([, what]) => what !== "none")
    .map(([who, what]) => `${who} ${what === "rejoin" ? "leaves and rejoins" : what === "kill" ? "dies and restarts" : "unregisters"}`)
  const controller = op.senders[op.controlSender ?? 0]
  const control = op.control === undefined || op.control === "none" || controller === undefined
    ? ""
    : `; ${name(controller)} ${op.control}s its ${recentSend(op.controlBack ?? 0)} to it`
  return `${name(op.recipient)} ${op.away === "stop" ? "stops" : "is killed"}; ${op.senders.map(name).join(", ")} each send it ${op.count} messages of ${op.size} characters; it starts again, its broker-side writes taking ${op.delayMs} ms${control}; each sends ${op.more} more, ${op.gapMs} ms apart${
    churn.length === 0 ? "" : `; ${churn.join(", ")}`
  }`
}

/** The text of message `k` of the op number `counter` from `from` to `to`: a short head, then padding to `size`. */
export const parkedFlushText = (counter: number, k: string, from: string, to: string, size: number): string => {
  const head = `parked ${counter}.${k} ${from}→${to} `
  return head + "x".repeat(Math.max(0, size - head.length))
}

/**
 * Runs the op with the drawn recipient and senders, or the next running
 * sessions after them (a flush to or from a stopped session would build
 * nothing).
 */
export const runParkedFlush = (
  sim: SimulationService,
  op: ParkedFlushDraw,
  counter: number
): Effect.Effect<void> =>
  Effect.gen(function*() {
    const sessions = sim.sessions
    const recipient = yield* nextRunning(sessions, op.recipient, () => true)
    if (recipient === undefined) return yield* sim.note("parked flush: skipped (no session running)")
    const senders: Array<readonly [SimSession, ParkedFlushChurn]> = []
    for (const [i, index] of op.senders.entries()) {
      const sender = yield* nextRunning(sessions, index, (session) => session !== recipient && !senders.some(([sender]) => sender === session))
      if (sender !== undefined) senders.push([sender, op.churn[i] ?? "none"])
    }
    if (senders.length === 0) return yield* sim.note("parked flush: skipped (no sender running)")
    const to = recipient.name
    yield* recipient[op.away]
    for (let k = 1; k <= op.count; k++) {
      for (const [sender] of senders) yield* sender.send(to, parkedFlushText(counter, `${k}`, sender.name, to, op.size))
    }
    // Long enough to write every message of the flush and of the rest of the op one at a time.
    const messages = senders.length * (op.count + op.more + 1)
    yield* recipient.startSlow(op.delayMs, op.delayMs * (messages + 4))
    const controller = senders[op.controlSender ?? 0]?.[0]
    if (op.control !== undefined && op.control !== "none" && controller !== undefined) {
      yield* runControl(controller, op.control, op.controlBack ?? 0, counter, to, true)
    }
    for (let k = 1; k <= op.more; k++) {
      for (const [sender] of senders) {
        yield* sim.advance(op.gapMs)
        yield* sender.send(to, parkedFlushText(counter, `m${k}`, sender.name, to, op.size))
      }
    }
    for (const [sender, churn] of senders) {
      yield* sim.advance(op.gapMs)
      if (churn === "none") continue
      if (churn === "unregister") {
        yield* sender.unregister
        continue
      }
      yield* churn === "rejoin" ? sender.stop : sender.kill
      yield* sender.start
      yield* sender.send(to, parkedFlushText(counter, "back", sender.name, to, op.size))
    }
  })

/** Inserts `seed`'s `ParkedFlush` op(s) into a workload's `ops` (`WorkloadOptions.parkedFlush`): inserted from the last, so each drawn index still names its place among the ops before them. */
export const insertParkedFlush: Insert<ParkedFlushDraw> = (ops, { seed, sessions }) => {
  const drawn = drawParkedFlush(seed, sessions, ops.length)
  for (let i = drawn.length - 1; i >= 0; i--) {
    const [index, op] = drawn[i]!
    ops.splice(index, 0, op)
  }
}

/** The `ParkedFlush` op as Workload.ts's table of inserted ops prints and runs it. */
export const parkedFlushOp: InsertedOp<ParkedFlushDraw> = { format: formatParkedFlush, run: runParkedFlush }
