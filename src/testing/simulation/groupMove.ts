/**
 * The `GroupMove` op of generated workloads (`WorkloadOptions.groupMove`,
 * `--group-move`): a reader holds its sender's control unconfirmed when its
 * client instance moves the session to another group (a new process of the
 * same instance registers it there), then comes back to the first group as
 * itself. How it is drawn and inserted, printed and run (`insertGroupMove`,
 * `groupMoveOp`: Workload.ts's table lists them).
 *
 * Why: a control given back alone at the close of a connection whose
 * session the same client instance has taken into another group is kept for
 * that instance, which can come back to the first group as itself
 * (Registration.mayReturn looks at the instance's live holders in the
 * scope's other groups; review revbk BK1 found the cancel dropped there by
 * reading, test/broker/control-kept-group-move.test.ts). No other op moves
 * a session between groups: a session's group was fixed for its life.
 *
 * The op, in order: S sends R and waits for the broker's answer; once R's
 * client read the message and wrote its confirmation (`awaitRead`, at most
 * `readMs`) and `confirmMs` more have passed, R's client stops reading, S
 * cancels or supersedes that send (the broker writes the control, which R
 * never reads), and `dropMs` after its answer R moves
 * (`SimSession.moveGroup`): its process dies and a new process of its client
 * instance registers R in another group of the world (the first other group
 * a session of it is in; `elsewhere` in a world of one group); `stayMs`
 * later R moves back the same way, and the ledger's
 * `control-never-reached-reader` asks that the control reach it there.
 *
 * R and S are distinct running sessions of one group and one pi scope; the
 * supervisor, its child and the ephemeral session are never R
 * (`InsertContext.notSender`: their registrations carry grants, or end
 * them). The op counts as reached when R's client read and confirmed the
 * message in time, short of its case (skipped) otherwise, or skipped with no
 * R or S running (`insertedOp`). Drawn from a stream of its own
 * (`Prng.derive(seed, "group-move")`) and inserted into the ordinary
 * workload, whose own draws are unchanged.
 */
import { Effect, Schema } from "effect"
import { Prng } from "../Prng.ts"
import { ControlAction, runControl } from "./controls.ts"
import type { Insert, InsertedOp } from "./inserted.ts"
import { awaitRead } from "./readerReturn.ts"
import { nextRunning } from "./running.ts"
import type { SimSession, SimulationService } from "./types.ts"

/** The fields of a `GroupMove` op (sessions by index; see the module header for the order of events). */
export const GroupMoveFields = {
  sender: Schema.Int,
  receiver: Schema.Int,
  readMs: Schema.Int,
  confirmMs: Schema.Int,
  dropMs: Schema.Int,
  stayMs: Schema.Int,
  action: ControlAction,
  notSession: Schema.Array(Schema.Int)
}

/** A drawn `GroupMove`. */
export interface GroupMoveDraw {
  readonly _tag: "GroupMove"
  readonly after: number
  readonly sender: number
  readonly receiver: number
  /** At most this long for R's client to read the message and write its confirmation. */
  readonly readMs: number
  /** Time for R's confirmation to reach the broker before R stops reading. */
  readonly confirmMs: number
  /** From the control's answer to R's move. */
  readonly dropMs: number
  /** How long R stays in the other group before it moves back. */
  readonly stayMs: number
  readonly action: ControlAction
  /** Sessions the op never takes as R (the supervisor, its child, the ephemeral one). */
  readonly notSession: ReadonlyArray<number>
}

/**
 * The `GroupMove` op of `seed`'s workload, with the index among the workload's `ops` other ops (0 to
 * `ops`) it goes before; none in a world of fewer than two sessions.
 */
export const drawGroupMove = (
  seed: number,
  sessions: number,
  ops: number,
  notSession: ReadonlyArray<number> = []
): ReadonlyArray<readonly [number, GroupMoveDraw]> => {
  if (sessions < 2) return []
  const prng = Prng.derive(seed, "group-move")
  const receiver = prng.int(0, sessions - 1)
  const sender = (receiver + prng.int(1, sessions - 1)) % sessions
  return [[prng.int(0, ops), {
    _tag: "GroupMove",
    after: prng.int(0, 2500),
    sender,
    receiver,
    readMs: prng.int(500, 3000),
    confirmMs: prng.int(50, 400),
    dropMs: prng.int(0, 60),
    stayMs: prng.int(0, 3000),
    action: prng.chance(0.5) ? "cancel" : "supersede",
    notSession
  }]]
}

/** A `GroupMove`, printed. */
export const formatGroupMove = (op: GroupMoveDraw, name: (index: number) => string): string => {
  const s = name(op.sender)
  const r = name(op.receiver)
  const control = op.action === "cancel" ? "cancels" : "supersedes"
  return `${s} sends ${r}; once ${r}'s client read and confirmed it (at most ${op.readMs} ms) and ${op.confirmMs} ms more, ${r} stops reading, ${s} ${control} that send, and ${op.dropMs} ms after its answer ${r}'s client instance moves it to another group, and ${op.stayMs} ms later back (the same instance)`
}

/** How long S waits for the broker's answer to its send (the control picks an acknowledged send). */
const SEND_ANSWER_WAIT = "2 seconds"

/** The group a world of one group moves its session to. */
const ELSEWHERE = "elsewhere"

/** How the trace and the soak's summary name this op (`SimulationService.insertedOp`). */
const OP = "group move"

/** The first group other than `session`'s that a session of the world is in, else `ELSEWHERE`. */
const otherGroup = (sessions: ReadonlyArray<SimSession>, session: SimSession): string =>
  sessions.find((other) => other.group !== session.group)?.group ?? ELSEWHERE

/** Runs the op with the drawn sessions, or the next running sessions after them that fit. */
export const runGroupMove = (sim: SimulationService, op: GroupMoveDraw, counter: number): Effect.Effect<void> =>
  Effect.gen(function*() {
    const sessions = sim.sessions
    const receiver = yield* nextRunning(sessions, op.receiver, (s) => !op.notSession.includes(sessions.indexOf(s)))
    if (receiver === undefined) return yield* sim.insertedOp(OP, "skipped", "group move: skipped (no receiver running)")
    // One group and one pi scope: a send to a session the sender cannot see fails before it is sent.
    const sender = yield* nextRunning(
      sessions,
      op.sender,
      (s) => s !== receiver && s.group === receiver.group && s.scopeId === receiver.scopeId
    )
    if (sender === undefined) return yield* sim.insertedOp(OP, "skipped", "group move: skipped (no sender running)")
    const text = `group-move ${counter} ${sender.name}→${receiver.name}`
    const sent = yield* sender.send(receiver.name, text)
    if (sent === undefined) return yield* sim.insertedOp(OP, "skipped", "group move: skipped (the sender stopped)")
    yield* sent.result(SEND_ANSWER_WAIT)
    const read = yield* awaitRead(sim, receiver, text, op.readMs, "confirmation written")
    const elsewhere = otherGroup(sessions, receiver)
    yield* read
      ? sim.insertedOp(OP, "reached", `group move: reached its case (${receiver.name}'s client read and confirmed "${text}" before its control and its move to ${elsewhere})`)
      : sim.insertedOp(
        OP,
        "skipped",
        `group move: short of its case: ${receiver.name}'s client did not read and confirm "${text}" within ${op.readMs} ms, the op went on without that read`
      )
    yield* sim.advance(op.confirmMs)
    yield* receiver.stall("client")
    yield* runControl(sender, op.action, 0, counter, receiver.name, true)
    yield* sim.advance(op.dropMs)
    yield* receiver.moveGroup(elsewhere)
    yield* sim.advance(op.stayMs)
    yield* receiver.moveGroup(undefined)
  })

/** Inserts `seed`'s `GroupMove` op into a workload's `ops` (`WorkloadOptions.groupMove`; never moving `notSender`): spliced in before the op at its drawn index. */
export const insertGroupMove: Insert<GroupMoveDraw> = (ops, { seed, sessions, notSender }) => {
  for (const [index, op] of drawGroupMove(seed, sessions, ops.length, notSender)) ops.splice(index, 0, op)
}

/** The `GroupMove` op as Workload.ts's table of inserted ops prints and runs it. */
export const groupMoveOp: InsertedOp<GroupMoveDraw> = { format: formatGroupMove, run: runGroupMove }
