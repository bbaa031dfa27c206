/**
 * The `CustodyHold` op of generated workloads (`--custody-hold`): a
 * recipient B taken over by a new client instance while its old connection
 * still holds mail of a sender D that B's client never confirmed, and D
 * sending, leaving and coming back while the new connection holds D's mail
 * behind that old connection's close. How it is drawn and inserted,
 * printed and run (`insertCustodyHold`, `custodyHoldOp`: Workload.ts's
 * table lists them).
 *
 * Why: the broker's takeover custody hold (src/broker/CustodyHold.ts) holds
 * a held sender's newer mail, its departure and its return until the old
 * connection closes; sweeps took a hold in a few runs of `--withhold-rejoin`
 * (a client's own reconnect without `rejoin-v1`) but never used one: the old
 * connection closed at once, its writer idle and its client gone, before any
 * held sender sent again (`BrokerStats.custodyHeld*` all 0 over 200 seeds of
 * each mode, docs/testing.md "Takeover custody hold"). This op builds the
 * state on purpose, from real clients and link faults only; the ledger
 * judges the run as any other (per-sender order, no loss, no mail after its
 * sender's `session_left`), and the counters say the broker got there.
 *
 * The op, in order: B's broker-side writes take `delayMs` each and the
 * broker stops reading B for `stallMs` (so it sees neither B's confirmations
 * nor, later, B's `unregister` and close); D sends B `count` messages (in
 * B's write in progress or written unconfirmed: B's custody); B stops — its
 * orderly close unread, the broker still holds the old connection — and
 * starts again, a new client instance that takes the session over (P16)
 * while the old connection's write is still in progress, so its close waits
 * for that write (at most the 2 s end grace): the hold lasts until then. D
 * sends B one more (held), then, unless `leave` is `none`, stops (or is
 * killed), starts again `returnMs` later and sends B `more` messages.
 * Between the takeover and the held message, D mostly cancels or supersedes
 * one of its messages in the old connection's custody
 * (simulation/controls.ts): not yet slowed, D is read at once, so the
 * broker routes the control while the hold lasts and must keep it behind
 * that message, which the old close gives back. (A control after the held
 * send would wait unread with D until the hold ends.)
 *
 * In half the seeds (a stream of its own, `custody-hold/confirmed`) the op
 * is its confirmed variant instead (`CustodyHoldDraw.confirmed`,
 * `runConfirmed`): B confirms D's first messages behind the stall and D's
 * cancel of one meets the hold, which the old client's confirmation, read
 * as its connection closes, answers "cannot be cancelled" (review revb's
 * D1; the soak summary's D1 count).
 *
 * A supervisor (lifecycle actions never touch it in a workload with groups:
 * a new client of it holds no capability) and the ephemeral session (its
 * stop ends it) are never B or D (`notSession`); D is in B's group. The op
 * takes the next running sessions that fit, or is skipped. Drawn from a stream of its own
 * (`Prng.derive(seed, "custody-hold")`) and inserted into the ordinary
 * workload, whose own draws are unchanged.
 */
import { Effect, Schema } from "effect"
import { Prng } from "../Prng.ts"
import { type ControlAction, drawOpControl, recentSend, runControl } from "./controls.ts"
import { nextRunning } from "./running.ts"
import type { Insert, InsertedOp } from "./inserted.ts"
import type { SimSession, SimulationService } from "./types.ts"

/** The confirmed variant: time B's client is given to read D's first messages and write its confirmation (behind the stall). */
const CONFIRM_MS = 50

/** How the held sender D leaves while the hold lasts: orderly, killed, or not at all. */
const CustodyHoldLeave = Schema.Literals(["stop", "kill", "none"])

/** The fields of a `CustodyHold` op (sessions by index; see the module header for the order of events). */
export const CustodyHoldFields = {
  recipient: Schema.Int,
  sender: Schema.Int,
  count: Schema.Int,
  delayMs: Schema.Int,
  stallMs: Schema.Int,
  leave: CustodyHoldLeave,
  returnMs: Schema.Int,
  more: Schema.Int,
  notSession: Schema.Array(Schema.Int),
  control: Schema.optionalKey(Schema.Literals(["cancel", "supersede", "none"])),
  controlBack: Schema.optionalKey(Schema.Int),
  confirmed: Schema.optionalKey(Schema.Struct({ slowMs: Schema.Int, stallEndMs: Schema.Int }))
}

/** A drawn `CustodyHold`. */
export interface CustodyHoldDraw {
  readonly _tag: "CustodyHold"
  readonly after: number
  readonly recipient: number
  readonly sender: number
  readonly count: number
  readonly delayMs: number
  readonly stallMs: number
  readonly leave: "stop" | "kill" | "none"
  readonly returnMs: number
  readonly more: number
  /** Sessions the op never stops or starts (a supervisor, the ephemeral one). */
  readonly notSession: ReadonlyArray<number>
  /**
   * What D does, once B was taken over and before the held message, about
   * its `controlBack`-th latest message to B (each in the old connection's
   * custody): a cancel, a supersede, or nothing (absent: nothing).
   */
  readonly control?: ControlAction | "none"
  readonly controlBack?: number
  /**
   * The confirmed variant (review revb's D1; absent: the op as above): B
   * reads and confirms D's messages while the broker does not read B, and
   * only then are B's broker-side writes slowed (`slowMs` each), for D's
   * last message before B stops; the stall ends `stallEndMs` after that
   * message was sent, past B's stop and return and D's control, before the
   * slow write ends. D's control then is a cancel of its first message.
   */
  readonly confirmed?: { readonly slowMs: number; readonly stallEndMs: number }
}

/**
 * The `CustodyHold` op of `seed`'s workload, with the index among the
 * workload's `ops` other ops (0 to `ops`) it goes before; none in a world of
 * fewer than two sessions.
 */
export const drawCustodyHold = (
  seed: number,
  sessions: number,
  ops: number,
  notSession: ReadonlyArray<number> = []
): ReadonlyArray<readonly [number, CustodyHoldDraw]> => {
  if (sessions < 2) return []
  const prng = Prng.derive(seed, "custody-hold")
  const recipient = prng.int(0, sessions - 1)
  const other = prng.int(0, sessions - 2)
  const leave = prng.weighted({ stop: 4, kill: 4, none: 2 })
  const at = prng.int(0, ops)
  const drawn = {
    _tag: "CustodyHold",
    after: prng.int(0, 2500),
    recipient,
    sender: other >= recipient ? other + 1 : other,
    count: prng.int(1, 3),
    delayMs: prng.int(800, 2000),
    // Past B's orderly stop (its close waits 2 s for an answer the broker does not read).
    stallMs: prng.int(2500, 6000),
    leave,
    // Mostly while the hold lasts (the old close waits at most 2 s); sometimes after it ended.
    returnMs: prng.chance(0.8) ? prng.int(0, 400) : prng.int(400, 3000),
    more: prng.int(1, 2),
    notSession
  } as const
  // Drawn last, so the fields above are what they were before controls.
  const withControl = { ...drawn, ...drawOpControl(prng, drawn.count - 1) }
  // The confirmed variant from a stream of its own, so the op's other fields are those of before.
  const variant = Prng.derive(seed, "custody-hold/confirmed")
  if (!variant.chance(0.5)) return [[at, withControl]]
  const slowMs = variant.int(2600, 3600)
  return [[at, { ...withControl, control: "cancel", confirmed: { slowMs, stallEndMs: variant.int(2300, slowMs - 200) } }]]
}

/** A `CustodyHold`, printed. */
export const formatCustodyHold = (op: CustodyHoldDraw, name: (index: number) => string): string => {
  const b = name(op.recipient)
  const d = name(op.sender)
  const leave = op.leave === "none"
    ? ""
    : `, ${op.leave === "stop" ? "stops" : "is killed"}, starts again ${op.returnMs} ms later and sends ${b} ${op.more} more`
  const control = op.control === undefined || op.control === "none"
    ? ""
    : `; ${d} ${op.control}s its ${recentSend(op.controlBack ?? 0)} to ${b}`
  if (op.confirmed !== undefined) {
    return `the broker stops reading ${b} for ${CONFIRM_MS + op.confirmed.stallEndMs} ms; ${d} sends ${b} ${op.count}, which ${b} reads and confirms; ${b}'s broker-side writes take ${op.confirmed.slowMs} ms; ${d} sends ${b} one more; ${b} stops and starts again (a takeover); ${d} cancels its first to ${b}; ${d} sends ${b} one more`
  }
  return `${b}'s broker-side writes take ${op.delayMs} ms and the broker stops reading ${b} for ${op.stallMs} ms; ${d} sends ${b} ${op.count}; ${b} stops and starts again (a takeover)${control}; ${d} sends ${b} one more${leave}`
}

/** The text of message `k` of the op number `counter` from `from` to `to`. */
export const custodyHoldText = (counter: number, k: string, from: string, to: string): string =>
  `custody ${counter}.${k} ${from}→${to}`

/** Runs the op with the drawn recipient and sender, or the next running sessions after them that fit. */
export const runCustodyHold = (sim: SimulationService, op: CustodyHoldDraw, counter: number): Effect.Effect<void> =>
  Effect.gen(function*() {
    const sessions = sim.sessions
    const fits = (session: SimSession) => !op.notSession.includes(sessions.indexOf(session))
    const recipient = yield* nextRunning(sessions, op.recipient, fits)
    if (recipient === undefined) return yield* sim.note("custody hold: skipped (no recipient running)")
    const sender = yield* nextRunning(sessions, op.sender, (session) => session !== recipient && session.group === recipient.group && fits(session))
    if (sender === undefined) return yield* sim.note("custody hold: skipped (no sender running)")
    const to = recipient.name
    if (op.confirmed !== undefined) return yield* runConfirmed(sim, op, op.confirmed, counter, recipient, sender)
    // Long enough to keep a write in progress past the takeover.
    yield* recipient.delayWrites("broker", op.delayMs, op.delayMs * (op.count + op.more + 4))
    yield* recipient.stall("broker", op.stallMs)
    for (let k = 1; k <= op.count; k++) yield* sender.send(to, custodyHoldText(counter, `${k}`, sender.name, to))
    // Its `unregister` and close are not read: the broker still holds the old connection when the new client registers.
    yield* recipient.stop
    yield* recipient.start
    // Before the held send: D is not slowed yet, so the broker handles it while the hold lasts.
    if (op.control !== undefined && op.control !== "none") yield* runControl(sender, op.control, op.controlBack ?? 0, counter, to, true)
    yield* sender.send(to, custodyHoldText(counter, "held", sender.name, to))
    if (op.leave === "none") return
    yield* op.leave === "stop" ? sender.stop : sender.kill
    yield* sim.advance(op.returnMs)
    yield* sender.start
    for (let k = 1; k <= op.more; k++) yield* sender.send(to, custodyHoldText(counter, `back${k}`, sender.name, to))
  })

/**
 * The confirmed variant (`CustodyHoldDraw.confirmed`, review revb's D1): B's
 * client reads and confirms D's first messages while the broker does not
 * read B; a write of D's next is in progress, slowed, when B stops (its
 * `unregister` unread too) and a new client instance takes B over, so the
 * old connection's `end` close waits for that write. D's cancel of its first
 * message meets the custody hold and is put off; the stall ends before the
 * slow write, so the broker reads the old client's confirmation while the
 * connection closes (`PeerReader.confirmWhileClosing`), and the put-off
 * cancel is answered "cannot be cancelled" at the close. `leave`, `returnMs`
 * and `more` are not used.
 */
const runConfirmed = (
  sim: SimulationService,
  op: CustodyHoldDraw,
  confirmed: { readonly slowMs: number; readonly stallEndMs: number },
  counter: number,
  recipient: SimSession,
  sender: SimSession
) =>
  Effect.gen(function*() {
    const to = recipient.name
    yield* recipient.stall("broker", CONFIRM_MS + confirmed.stallEndMs)
    for (let k = 1; k <= op.count; k++) yield* sender.send(to, custodyHoldText(counter, `${k}`, sender.name, to))
    yield* sim.advance(CONFIRM_MS)
    yield* recipient.delayWrites("broker", confirmed.slowMs, confirmed.slowMs * 2)
    yield* sender.send(to, custodyHoldText(counter, "slow", sender.name, to))
    yield* recipient.stop
    yield* recipient.start
    // D's first message to B: behind "slow" and the others.
    yield* runControl(sender, "cancel", op.count, counter, to, true)
    yield* sender.send(to, custodyHoldText(counter, "held", sender.name, to))
    // Past the stall's end and the old close (the slow write, at most the 2 s end grace): the hold is over.
    yield* sim.advance(confirmed.slowMs)
  })

/** Inserts `seed`'s `CustodyHold` op(s) into a workload's `ops` (`WorkloadOptions.custodyHold`; never stopping or starting `notSession`): each spliced in before the op at its drawn index. */
export const insertCustodyHold: Insert<CustodyHoldDraw> = (ops, { seed, sessions, notSession }) => {
  for (const [index, op] of drawCustodyHold(seed, sessions, ops.length, notSession)) ops.splice(index, 0, op)
}

/** The `CustodyHold` op as Workload.ts's table of inserted ops prints and runs it. */
export const custodyHoldOp: InsertedOp<CustodyHoldDraw> = { format: formatCustodyHold, run: runCustodyHold }
