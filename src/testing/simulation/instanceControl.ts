/**
 * The `InstanceControl` op of generated workloads (`WorkloadOptions.instanceControl`,
 * `--instance-control`): a control about a message whose client instance is gone. How it is drawn
 * and inserted, printed and run (`insertInstanceControl`, `instanceControlOp`: Workload.ts's table lists them).
 *
 * Why: the broker sends a `message_control` (cancel, supersede) only to the
 * client instance that was given the message (docs/protocol.md, "Receipts
 * and control"; src/broker/ClientInstances.ts, Receipts.ts), and the ledger
 * judges it (`control-to-other-instance`, ledger/instances.ts). The plain
 * workloads seldom build the one order that tells a broker breaking that rule
 * from one keeping it — the Control op follows its send within 30 ms, mostly
 * before any departure — so a broker that took every registration for the
 * id's last instance passed them; only `--parked-flush --unregister
 * --delivery` seeds caught it (docs/testing.md).
 *
 * The op, in order: S sends R a message and waits for the broker's answer;
 * once R's agent has it (polled, at most `readMs`: R's client read it) R
 * leaves — stops (its client confirms what it read, then unregisters) or is
 * killed — and `returnMs` later starts again: a new client, so a new
 * instance of R's id; `controlMs` after that S cancels or supersedes that
 * send, and waits for the answer. The broker must answer "cannot be
 * cancelled" (or, for mail the old client never confirmed, hand it to the
 * new instance first) and never send the control alone to the new one.
 *
 * S and R are distinct running sessions of one group and one pi scope; a
 * supervisor (a new client of it holds no capability) and the ephemeral
 * session (its stop ends it) are never R (`notSession`). The op takes the
 * next running sessions that fit, or is skipped. Drawn from a stream of its
 * own (`Prng.derive(seed, "instance-control")`) and inserted into the
 * ordinary workload, whose own draws are unchanged.
 */
import { Effect, Schema } from "effect"
import { Prng } from "../Prng.ts"
import { ControlAction, runControl } from "./controls.ts"
import { nextRunning } from "./running.ts"
import type { Insert, InsertedOp } from "./inserted.ts"
import type { SimSession, SimulationService } from "./types.ts"

/** How R leaves once it read the message: orderly (it confirms and unregisters) or killed. */
const InstanceControlLeave = Schema.Literals(["stop", "kill"])

/** The fields of an `InstanceControl` op (sessions by index; see the module header for the order of events). */
export const InstanceControlFields = {
  sender: Schema.Int,
  receiver: Schema.Int,
  readMs: Schema.Int,
  leave: InstanceControlLeave,
  returnMs: Schema.Int,
  controlMs: Schema.Int,
  action: ControlAction,
  notSession: Schema.Array(Schema.Int)
}

/** A drawn `InstanceControl`. */
export interface InstanceControlDraw {
  readonly _tag: "InstanceControl"
  readonly after: number
  readonly sender: number
  readonly receiver: number
  readonly readMs: number
  readonly leave: "stop" | "kill"
  readonly returnMs: number
  readonly controlMs: number
  readonly action: ControlAction
  /** Sessions the op never stops (a supervisor, the ephemeral one). */
  readonly notSession: ReadonlyArray<number>
}

/**
 * The `InstanceControl` op of `seed`'s workload, with the index among the workload's `ops` other ops
 * (0 to `ops`) it goes before; none in a world of fewer than two sessions.
 */
export const drawInstanceControl = (
  seed: number,
  sessions: number,
  ops: number,
  notSession: ReadonlyArray<number> = []
): ReadonlyArray<readonly [number, InstanceControlDraw]> => {
  if (sessions < 2) return []
  const prng = Prng.derive(seed, "instance-control")
  const receiver = prng.int(0, sessions - 1)
  const sender = (receiver + prng.int(1, sessions - 1)) % sessions
  return [[prng.int(0, ops), {
    _tag: "InstanceControl",
    after: prng.int(0, 2500),
    sender,
    receiver,
    readMs: prng.int(200, 3000),
    leave: prng.weighted({ stop: 3, kill: 1 }),
    returnMs: prng.int(0, 1500),
    controlMs: prng.int(0, 1500),
    action: prng.chance(0.5) ? "cancel" : "supersede",
    notSession
  }]]
}

/** An `InstanceControl`, printed. */
export const formatInstanceControl = (op: InstanceControlDraw, name: (index: number) => string): string => {
  const s = name(op.sender)
  const r = name(op.receiver)
  return `${s} sends ${r}; once ${r} read it (at most ${op.readMs} ms) ${r} ${
    op.leave === "stop" ? "stops" : "is killed"
  }, starts again ${op.returnMs} ms later (a new instance), and ${op.controlMs} ms after that ${s} ${
    op.action === "cancel" ? "cancels" : "supersedes"
  } that send`
}

/** How often the op looks whether R's agent has the message yet. */
const READ_POLL_MS = 20

/** How long S waits for the broker's answer to its send (the control picks an acknowledged send). */
const SEND_ANSWER_WAIT = "2 seconds"

/** Whether `session`'s current generation was handed the message `text`. */
const hasMessage = (session: SimSession, text: string): Effect.Effect<boolean> =>
  Effect.map(session.inbox, (inbound) => inbound.some((item) => item.message.content.text === text))

/** Runs the op with the drawn sessions, or the next running sessions after them that fit. */
export const runInstanceControl = (sim: SimulationService, op: InstanceControlDraw, counter: number): Effect.Effect<void> =>
  Effect.gen(function*() {
    const sessions = sim.sessions
    const receiver = yield* nextRunning(sessions, op.receiver, (s) => !op.notSession.includes(sessions.indexOf(s)))
    if (receiver === undefined) return yield* sim.note("instance control: skipped (no receiver running)")
    // One group and one pi scope: a send to a session the sender cannot see fails before it is sent.
    const sender = yield* nextRunning(
      sessions,
      op.sender,
      (s) => s !== receiver && s.group === receiver.group && s.scopeId === receiver.scopeId
    )
    if (sender === undefined) return yield* sim.note("instance control: skipped (no sender running)")
    const text = `instance-control ${counter} ${sender.name}→${receiver.name}`
    const sent = yield* sender.send(receiver.name, text)
    if (sent === undefined) return yield* sim.note("instance control: skipped (the sender stopped)")
    yield* sent.result(SEND_ANSWER_WAIT)
    let waited = 0
    while (waited < op.readMs && !(yield* hasMessage(receiver, text))) {
      yield* sim.advance(READ_POLL_MS)
      waited += READ_POLL_MS
    }
    yield* op.leave === "stop" ? receiver.stop : receiver.kill
    yield* sim.advance(op.returnMs)
    yield* receiver.start
    yield* sim.advance(op.controlMs)
    yield* runControl(sender, op.action, 0, counter, receiver.name, true)
  })

/** Inserts `seed`'s `InstanceControl` op(s) into a workload's `ops` (`WorkloadOptions.instanceControl`; never stopping or starting `notSession`): each spliced in before the op at its drawn index. */
export const insertInstanceControl: Insert<InstanceControlDraw> = (ops, { seed, sessions, notSession }) => {
  for (const [index, op] of drawInstanceControl(seed, sessions, ops.length, notSession)) ops.splice(index, 0, op)
}

/** The `InstanceControl` op as Workload.ts's table of inserted ops prints and runs it. */
export const instanceControlOp: InsertedOp<InstanceControlDraw> = { format: formatInstanceControl, run: runInstanceControl }
