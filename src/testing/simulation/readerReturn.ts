/**
 * The `ReaderReturn` op of generated workloads (`WorkloadOptions.readerReturn`,
 * `--reader-return`): a reader's connection drops while it holds the
 * sender's mail or control unconfirmed, the sender cancels or supersedes,
 * and the same client instance comes back. How it is drawn and inserted,
 * printed and run (`insertReaderReturn`, `readerReturnOp`: Workload.ts's
 * table lists them).
 *
 * Why: the broker keeps what such a reader is owed for its return — a
 * control given back alone at the drop (src/broker/KeptControls.ts), or a
 * copy the reader read but never confirmed, given back to the mailbox and
 * then cancelled (src/broker/WithdrawnCopies.ts) — and the ledger checks
 * that the return gets it (`control-never-reached-reader`,
 * ledger/instances.ts). The other workloads seldom build either order: the
 * `InstanceControl` op makes a new instance, which is owed nothing.
 *
 * The op, in order, in one of two shapes (as in test/testing/reader-return.test.ts):
 *
 * - `control`: S sends R and waits for the broker's answer; once R's client
 *   read the message and wrote its confirmation (polled in the ledger, at
 *   most `readMs`) and `confirmMs` more have passed for that confirmation
 *   to reach the broker, R's client stops reading, S cancels or
 *   supersedes that send (the broker writes the control, which R never
 *   reads) and `dropMs` later R's connection drops on `side` — or, with
 *   `leave` `unregister`, R leaves by `unregister` instead (the control
 *   written, unconfirmed: Custody.handBack keeps it, as a close does) and a
 *   new process of R registers as the same client instance, as a pi process
 *   resuming the session file does (`SimSession.unregisterAndResume`);
 * - `copy`: R's client writes take `delayMs` for a while, S sends R; once
 *   R's client read the message (its confirmation still on its way) R's
 *   connection drops on `side`, and `dropMs` later S cancels or supersedes;
 * - `both`: as `copy`, but once R read the message its client stops
 *   reading and S cancels or supersedes before the drop (`dropMs` after the
 *   control's answer): the message and its control are both unconfirmed at
 *   the close, and a cancelled one is kept as a cancelled copy
 *   (`WithdrawnCopies.keepCancelled`).
 *
 * R's client reconnects by itself: the same instance. S and R are distinct
 * running sessions of one group and one pi scope; a supervisor and the
 * ephemeral session are never R (`notSession`, as for the other ops that
 * take a session's connection away). The op takes the next running
 * sessions that fit, or is skipped. Drawn from a stream of its own
 * (`Prng.derive(seed, "reader-return")`) and inserted into the ordinary
 * workload, whose own draws are unchanged; `leave` is drawn last from it,
 * so the op's other fields are as they were before it.
 */
import { Effect, Schema } from "effect"
import { Prng } from "../Prng.ts"
import type { ReaderStage } from "../ledger/readers.ts"
import { ControlAction, runControl } from "./controls.ts"
import { nextRunning } from "./running.ts"
import type { Insert, InsertedOp } from "./inserted.ts"
import type { SimSession, SimulationService } from "./types.ts"

/** What R holds unconfirmed when its connection drops: the sender's control, or its message (see the module header). */
const ReaderReturnShape = Schema.Literals(["control", "copy", "both"])

/** Which side of R's connection drops. */
const ReaderReturnSide = Schema.Literals(["client", "broker"])

/** How R's connection ends in the `control` shape: it drops, or R unregisters (see the module header). */
const ReaderReturnLeave = Schema.Literals(["drop", "unregister"])

/** The fields of a `ReaderReturn` op (sessions by index; see the module header for the order of events). */
export const ReaderReturnFields = {
  sender: Schema.Int,
  receiver: Schema.Int,
  shape: ReaderReturnShape,
  readMs: Schema.Int,
  confirmMs: Schema.Int,
  delayMs: Schema.Int,
  dropMs: Schema.Int,
  side: ReaderReturnSide,
  action: ControlAction,
  leave: ReaderReturnLeave,
  notSession: Schema.Array(Schema.Int)
}

/**
 * The longest `dropMs` drawn: the control must reach the broker before R's
 * client reconnects (a few hundred ms after a drop), or it goes to the live
 * connection and nothing is kept.
 */
const MAX_DROP_MS = 60

/** How often a `control` shape's R leaves by `unregister` rather than by its connection dropping. */
const UNREGISTER_CHANCE = 0.5

/** A drawn `ReaderReturn`. */
export interface ReaderReturnDraw {
  readonly _tag: "ReaderReturn"
  readonly after: number
  readonly sender: number
  readonly receiver: number
  readonly shape: "control" | "copy" | "both"
  /** At most this long for R's agent to have the message. */
  readonly readMs: number
  /** `control`: time for R's confirmation of the message to reach the broker before R stops reading. */
  readonly confirmMs: number
  /** `copy`, `both`: how long each of R's client writes takes (so its confirmation is still on its way at the drop). */
  readonly delayMs: number
  /** `control`, `both`: from the control's answer to the drop; `copy`: from the drop to the control. */
  readonly dropMs: number
  readonly side: "client" | "broker"
  readonly action: ControlAction
  /** `control`: R's connection drops on `side`, or R unregisters and registers again as the same instance (`side` unused). */
  readonly leave: "drop" | "unregister"
  /** Sessions the op never takes as R (a supervisor, the ephemeral one). */
  readonly notSession: ReadonlyArray<number>
}

/**
 * The `ReaderReturn` op of `seed`'s workload, with the index among the workload's `ops` other ops
 * (0 to `ops`) it goes before; none in a world of fewer than two sessions.
 */
export const drawReaderReturn = (
  seed: number,
  sessions: number,
  ops: number,
  notSession: ReadonlyArray<number> = []
): ReadonlyArray<readonly [number, ReaderReturnDraw]> => {
  if (sessions < 2) return []
  const prng = Prng.derive(seed, "reader-return")
  const receiver = prng.int(0, sessions - 1)
  const sender = (receiver + prng.int(1, sessions - 1)) % sessions
  const at = prng.int(0, ops)
  const after = prng.int(0, 2500)
  const shape = prng.weighted({ control: 2, copy: 2, both: 1 })
  const readMs = prng.int(500, 3000)
  const confirmMs = prng.int(50, 400)
  const delayMs = prng.int(1500, 3000)
  const dropMs = prng.int(0, MAX_DROP_MS)
  const side = prng.weighted({ client: 3, broker: 1 })
  // A superseded copy is not kept as a cancelled one (its new message replaces it), so the copy shape mostly cancels.
  const action: ControlAction = prng.chance(shape === "control" ? 0.5 : 0.75) ? "cancel" : "supersede"
  // Drawn last, always, so every field above draws as it did before `leave` existed.
  const unregisters = prng.chance(UNREGISTER_CHANCE)
  return [[at, {
    _tag: "ReaderReturn",
    after,
    sender,
    receiver,
    shape,
    readMs,
    confirmMs,
    delayMs,
    dropMs,
    side,
    action,
    leave: shape === "control" && unregisters ? "unregister" : "drop",
    notSession
  }]]
}

/** A `ReaderReturn`, printed. */
export const formatReaderReturn = (op: ReaderReturnDraw, name: (index: number) => string): string => {
  const s = name(op.sender)
  const r = name(op.receiver)
  const control = op.action === "cancel" ? "cancels" : "supersedes"
  if (op.shape === "both") {
    return `${r}'s writes take ${op.delayMs} ms; ${s} sends ${r}; once ${r} read it (at most ${op.readMs} ms) ${r} stops reading, ${s} ${control} that send, and ${op.dropMs} ms after its answer ${r}'s connection drops on the ${op.side} side (the same instance comes back)`
  }
  const leaves = op.leave === "unregister"
    ? `${r} unregisters and registers again as the same client instance (a new process resuming it)`
    : `${r}'s connection drops on the ${op.side} side (the same instance comes back)`
  return op.shape === "control"
    ? `${s} sends ${r}; once ${r} read it (at most ${op.readMs} ms) and ${op.confirmMs} ms more, ${r} stops reading, ${s} ${control} that send, and ${op.dropMs} ms after its answer ${leaves}`
    : `${r}'s writes take ${op.delayMs} ms; ${s} sends ${r}; once ${r} read it (at most ${op.readMs} ms) ${r}'s connection drops on the ${op.side} side, and ${op.dropMs} ms later ${s} ${control} that send (the same instance comes back)`
}

/** How often the op looks whether R's agent has the message yet. */
const READ_POLL_MS = 5

/** How long S waits for the broker's answer to its send (the control picks an acknowledged send). */
const SEND_ANSWER_WAIT = "2 seconds"

/** How long R's client writes stay slow in the `copy` shape, beyond `delayMs` (the drop ends them anyway). */
const DELAY_SPAN_MS = 1000

/**
 * Advances the world until `session`'s client read the message `text` (the ledger's record of its reads,
 * ledger/readers.ts) and, for `confirmation written`, wrote its confirmation of it, at most `readMs`;
 * whether it did. That read is what the op's case needs — the broker wrote the message to R and, in the
 * `control` shape, R confirmed it before the control comes — not R's host having been handed it: with
 * `--host-refusals` a busy host refuses the hand-off while R's client has read the message and confirmed
 * it once its journal's checkpoint landed (waiting on the host left 8 of seeds 0–11 short of their case).
 * When it runs out the op goes on — the world it makes is still one to judge — but short of the order it
 * was drawn for (R's client never read the message before the control or the drop), so the run counts it
 * as skipped (`insertedOp`): a seed meant to reach a reader's return that never did is otherwise
 * indistinguishable from one that did and passed (seed 7022's first reading). The group move waits on it
 * too (simulation/groupMove.ts).
 */
export const awaitRead = (
  sim: SimulationService,
  session: SimSession,
  text: string,
  readMs: number,
  stage: ReaderStage
): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    let waited = 0
    while (!sim.ledger.readByClientOf(session.id, text, stage)) {
      if (waited >= readMs) return false
      yield* sim.advance(READ_POLL_MS)
      waited += READ_POLL_MS
    }
    return true
  })

/** How the trace and the soak's summary name this op (`SimulationService.insertedOp`). */
const OP = "reader return"

/** Counts the op as having reached its case, or as short of it when the receiver's client never read (and, for `confirmation written`, confirmed) the message in time. */
const counted = (
  sim: SimulationService,
  read: boolean,
  receiver: SimSession,
  text: string,
  readMs: number,
  stage: ReaderStage
): Effect.Effect<void> => {
  const what = stage === "read" ? "read" : "read and confirm"
  return read
    ? sim.insertedOp(OP, "reached", `reader return: reached its case (${receiver.name}'s client did ${what} "${text}" before its control or drop)`)
    : sim.insertedOp(
      OP,
      "skipped",
      `reader return: short of its case: ${receiver.name}'s client did not ${what} "${text}" within ${readMs} ms, the op went on without that read`
    )
}

/** Waits for the read `stage` names (`awaitRead`) and counts the op by it (`counted`). */
const readCounted = (sim: SimulationService, receiver: SimSession, text: string, readMs: number, stage: ReaderStage): Effect.Effect<void> =>
  Effect.flatMap(awaitRead(sim, receiver, text, readMs, stage), (read) => counted(sim, read, receiver, text, readMs, stage))

/** Runs the op with the drawn sessions, or the next running sessions after them that fit. */
export const runReaderReturn = (sim: SimulationService, op: ReaderReturnDraw, counter: number): Effect.Effect<void> =>
  Effect.gen(function*() {
    const sessions = sim.sessions
    const receiver = yield* nextRunning(sessions, op.receiver, (s) => !op.notSession.includes(sessions.indexOf(s)))
    if (receiver === undefined) return yield* sim.insertedOp(OP, "skipped", "reader return: skipped (no receiver running)")
    // One group and one pi scope: a send to a session the sender cannot see fails before it is sent.
    const sender = yield* nextRunning(
      sessions,
      op.sender,
      (s) => s !== receiver && s.group === receiver.group && s.scopeId === receiver.scopeId
    )
    if (sender === undefined) return yield* sim.insertedOp(OP, "skipped", "reader return: skipped (no sender running)")
    const text = `reader-return ${counter} ${sender.name}→${receiver.name}`
    if (op.shape === "control") {
      const sent = yield* sender.send(receiver.name, text)
      if (sent === undefined) return yield* sim.insertedOp(OP, "skipped", "reader return: skipped (the sender stopped)")
      yield* sent.result(SEND_ANSWER_WAIT)
      yield* readCounted(sim, receiver, text, op.readMs, "confirmation written")
      yield* sim.advance(op.confirmMs)
      yield* receiver.stall("client")
      yield* runControl(sender, op.action, 0, counter, receiver.name, true)
      yield* sim.advance(op.dropMs)
      if (op.leave === "unregister") {
        // The trace says the unregister path was taken (the `reader returns:` counters do not tell it from a drop's).
        yield* sim.note(`reader return: ${receiver.name} unregisters with ${sender.name}'s control unconfirmed, and comes back as the same instance`)
        yield* receiver.unregisterAndResume
      } else yield* receiver.drop(op.side)
    } else if (op.shape === "both") {
      yield* receiver.delayWrites("client", op.delayMs, op.delayMs + DELAY_SPAN_MS)
      const sent = yield* sender.send(receiver.name, text)
      if (sent === undefined) return yield* sim.insertedOp(OP, "skipped", "reader return: skipped (the sender stopped)")
      yield* readCounted(sim, receiver, text, op.readMs, "read")
      yield* receiver.stall("client")
      yield* sent.result(SEND_ANSWER_WAIT)
      yield* runControl(sender, op.action, 0, counter, receiver.name, true)
      yield* sim.advance(op.dropMs)
      yield* receiver.drop(op.side)
    } else {
      yield* receiver.delayWrites("client", op.delayMs, op.delayMs + DELAY_SPAN_MS)
      const sent = yield* sender.send(receiver.name, text)
      if (sent === undefined) return yield* sim.insertedOp(OP, "skipped", "reader return: skipped (the sender stopped)")
      yield* readCounted(sim, receiver, text, op.readMs, "read")
      yield* receiver.drop(op.side)
      yield* sent.result(SEND_ANSWER_WAIT)
      yield* sim.advance(op.dropMs)
      yield* runControl(sender, op.action, 0, counter, receiver.name, true)
    }
  })

/** Inserts `seed`'s `ReaderReturn` op(s) into a workload's `ops` (`WorkloadOptions.readerReturn`; never taking the connection of `notSession`): each spliced in before the op at its drawn index. */
export const insertReaderReturn: Insert<ReaderReturnDraw> = (ops, { seed, sessions, notSession }) => {
  for (const [index, op] of drawReaderReturn(seed, sessions, ops.length, notSession)) ops.splice(index, 0, op)
}

/** The `ReaderReturn` op as Workload.ts's table of inserted ops prints and runs it. */
export const readerReturnOp: InsertedOp<ReaderReturnDraw> = { format: formatReaderReturn, run: runReaderReturn }
