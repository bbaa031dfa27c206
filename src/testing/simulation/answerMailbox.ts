/**
 * The `AnswerMailbox` op of generated workloads (`WorkloadOptions.answerMailbox`,
 * `--answer-mailbox`): the mailbox case of an answered ask — the question
 * waits in its replier's mailbox, given back by the replier's closed
 * connection, when a `replace`-staged reply to it is accepted; past the
 * deadline the replier comes back. How it is drawn and inserted, printed
 * and run (`insertAnswerMailbox`, `answerMailboxOp`: Workload.ts's table
 * lists them).
 *
 * Why: a reply accepted while a copy of its ask waits in the mailbox drops
 * that copy at once, as answered (`Asks.answeredBy` → `MailDelivery.askClosed`,
 * helper replyclose). Before that fix the copy stayed, and the replier's
 * return past the deadline told the asker `expired` after it had its reply;
 * no workload built the order (the answerTakeover op builds the takeover
 * cases only). The ledger checks the end (`expired-after-answer`,
 * ledger/askExpiry.ts).
 *
 * The op, in order: T stages `FILLERS` messages to A (`replace`, a thread
 * each; its client still reads their acknowledgements), which fall due one
 * replace window later (not all staged within `FILLER_WAIT_MS`: skipped); T's client stops reading; A asks T with a timeout
 * of `timeoutMs`, and the question is written to T's connection, unread;
 * the broker's writes to A then take `slowMs` each until just past T's
 * close, so the fillers falling due fill A's outbox; at least
 * `ANSWER_AT_MS` after the fillers T answers the question with a `replace`
 * reply on a thread of its own; its client reads again (the reply's
 * acknowledgement: the ledger counts only a reply its sender was told the
 * broker took) while its writes are held back, so the question is never
 * confirmed; `KILL_BEFORE_DUE_MS` before the reply falls due T is killed:
 * its connection closes, the question goes back to the mailbox, and the
 * reply goes after it (a closed sender's staged message waits due for room
 * in A's outbox); A's writes speed up, the reply is accepted with the
 * question in the mailbox, and A reads it; T starts again `backAfterMs`
 * past the ask's deadline. In the 40 seeds from 35000 it reached its case
 * in worlds with large outboxes too (with the broker's mailbox drop
 * removed, those seeds failed as well): the reply, staged, is not accepted
 * before the close has given the question back.
 *
 * Sessions are taken as by the answerTakeover op (`connectedPair`) and the
 * question's write is awaited the same way (`questionWritten`). At its end
 * the op counts whether it reached its case — T's reply still staged just
 * after T's close (the ledger's record of that reply: its sender read
 * `delivery_queued` for it, its window still open, nothing replaced it,
 * written nowhere; never the broker's count of every sender's staged
 * messages), T's client told its reply was taken, and A's ask ended with
 * that reply — or was skipped (why goes to the trace):
 * `SimReport.insertedOps`. Drawn from
 * a stream of its own (`Prng.derive(seed, "answer-mailbox")`) and inserted
 * into the ordinary workload, whose own draws are unchanged.
 */
import { Clock, Effect, Exit, Schema } from "effect"
import { DEFAULT_REPLACE_WINDOW_MS } from "../../broker/options.ts"
import { Prng } from "../Prng.ts"
import { connectedPair, questionWritten } from "./answerTakeover.ts"
import type { Insert, InsertedOp } from "./inserted.ts"
import type { Pending, SimSession, SimulationService } from "./types.ts"

/** The fields of an `AnswerMailbox` op (sessions by index; see the module header for the order of events). */
export const AnswerMailboxFields = {
  asker: Schema.Int,
  target: Schema.Int,
  timeoutMs: Schema.Int,
  slowMs: Schema.Int,
  backAfterMs: Schema.Int,
  notSession: Schema.Array(Schema.Int)
}

/** A drawn `AnswerMailbox`. */
export interface AnswerMailboxDraw {
  readonly _tag: "AnswerMailbox"
  readonly after: number
  readonly asker: number
  readonly target: number
  /** The ask's timeout: past the fillers' window, the reply's and A's slow drain. */
  readonly timeoutMs: number
  /** How long each of the broker's writes to A takes while the op runs: its outbox fills. */
  readonly slowMs: number
  /** How long past the ask's deadline T starts again. */
  readonly backAfterMs: number
  /** Sessions the op never takes as T (a supervisor, the ephemeral one). */
  readonly notSession: ReadonlyArray<number>
}

/**
 * The `AnswerMailbox` op of `seed`'s workload, with the index among the workload's `ops` other ops
 * (0 to `ops`) it goes before; none in a world of fewer than two sessions.
 */
export const drawAnswerMailbox = (
  seed: number,
  sessions: number,
  ops: number,
  notSession: ReadonlyArray<number> = []
): ReadonlyArray<readonly [number, AnswerMailboxDraw]> => {
  if (sessions < 2) return []
  const prng = Prng.derive(seed, "answer-mailbox")
  const target = prng.int(0, sessions - 1)
  const asker = (target + prng.int(1, sessions - 1)) % sessions
  const at = prng.int(0, ops)
  const after = prng.int(0, 2500)
  const timeoutMs = prng.int(5000, 8000)
  const slowMs = prng.int(500, 800)
  const backAfterMs = prng.int(200, 2000)
  return [[at, { _tag: "AnswerMailbox", after, asker, target, timeoutMs, slowMs, backAfterMs, notSession }]]
}

/** An `AnswerMailbox`, printed. */
export const formatAnswerMailbox = (op: AnswerMailboxDraw, name: (index: number) => string): string => {
  const a = name(op.asker)
  const t = name(op.target)
  return `${t} stages ${FILLERS} replace messages to ${a}; ${t}'s client stops reading; ${a} asks ${t} (timeout ${op.timeoutMs} ms); the broker's writes to ${a} take ${op.slowMs} ms; ${t} answers with a replace reply and reads its acknowledgement, its writes held back; ${t} is killed inside the reply's window (the question back in the mailbox) and starts again ${op.backAfterMs} ms past the deadline`
}

/** The op's name in the run's tally of inserted ops (`SimReport.insertedOps`). */
const OP = "answer mailbox"

/** How many `replace` messages T stages to A before its reply: more than twice the largest small outbox (16) holds, so it is still full one slow write after they fall due. */
const FILLERS = 34

/** How long the fillers' sends may take together (T's writes may be slowed by an earlier fault). */
const FILLER_WAIT_MS = 1_000

/**
 * When T stages its reply, at the earliest, from the first filler's staging: the fillers (a few ms apart)
 * all fall due inside the reply's window, well before T's close (or, the question written later, before the reply).
 */
const ANSWER_AT_MS = 500

/** How long before its reply falls due T is killed: past the fillers' window, inside the reply's. */
const KILL_BEFORE_DUE_MS = 150

/** How long after T's reply its client reads again (the broker has read the reply and acknowledged it by then). */
const ACK_AFTER_MS = 20

/** How long after T's kill the op looks whether its reply still waits (the broker has read the close by then). */
const CLOSE_SEEN_MS = 20

/** How long A's writes stay slow past T's close: the reply waits for room, then A's outbox drains at once. */
const SLOW_PAST_KILL_MS = 100

/** How long past its timeout the op waits for A's ask to end (a settling round trip may prolong it). */
const SLACK_MS = 15_000

/** The text of message `k` of the op number `counter` from `from` to `to`. */
const text = (counter: number, k: string, from: string, to: string): string => `answer-mailbox ${counter}.${k} ${from}→${to}`

/** A `replace` send's delivery options on thread `threadId`. */
const replace = (threadId: string): { readonly delivery: "queue"; readonly queueMode: "replace"; readonly threadId: string } => ({
  delivery: "queue",
  queueMode: "replace",
  threadId
})

/** The step in which the op watches the fillers' sends. */
const FILLER_STEP_MS = 5

/** Waits, step by step, until every one of `pending` is done, at most `FILLER_WAIT_MS`. */
const settled = (sim: SimulationService, pending: ReadonlyArray<Pending<unknown, unknown>>): Effect.Effect<void> =>
  Effect.gen(function*() {
    for (let waited = 0; waited < FILLER_WAIT_MS && pending.some((p) => p.fiber.pollUnsafe() === undefined); waited += FILLER_STEP_MS) {
      yield* sim.advance(FILLER_STEP_MS)
    }
  })

/** Whether `pending` is done and succeeded. */
const isSuccess = (pending: Pending<unknown, unknown>): boolean => {
  const exit = pending.fiber.pollUnsafe()
  return exit !== undefined && Exit.isSuccess(exit)
}

/** Runs the op with the drawn sessions, or the next ones after them that fit and are connected (`connectedPair`). */
export const runAnswerMailbox = (sim: SimulationService, op: AnswerMailboxDraw, counter: number): Effect.Effect<void> =>
  Effect.gen(function*() {
    const pair = yield* connectedPair(sim, op)
    if (pair === undefined) {
      return yield* sim.insertedOp(OP, "skipped", "answer mailbox: skipped (no target and asker connected within 10 s)")
    }
    const { asker, target } = pair
    const staging = yield* Clock.currentTimeMillis
    // Staged while T still reads its acknowledgements: they fall due one window on.
    const fillers: Array<Pending<unknown, unknown>> = []
    for (let k = 0; k < FILLERS; k++) {
      const filler = yield* target.send(asker.name, text(counter, `fill-${k}`, target.name, asker.name), replace(`answer-mailbox-${counter}-fill-${k}`))
      if (filler !== undefined) fillers.push(filler)
    }
    yield* settled(sim, fillers)
    if (fillers.length < FILLERS || fillers.some((filler) => !isSuccess(filler))) {
      return yield* sim.insertedOp(OP, "skipped", `answer mailbox: skipped (T's ${FILLERS} fillers not all staged within ${FILLER_WAIT_MS} ms)`)
    }
    yield* target.stall("client")
    const asked = yield* asker.ask(target.name, text(counter, "question", asker.name, target.name), { timeout: op.timeoutMs })
    const questionId = asked === undefined ? undefined : yield* questionWritten(sim, asker, asked)
    const askedAt = yield* Clock.currentTimeMillis
    if (asked === undefined || questionId === undefined) {
      yield* target.resume("client")
      return yield* sim.insertedOp(OP, "skipped", "answer mailbox: skipped (the question was not written to the target in time)")
    }
    // The reply staged after the fillers, so that they fall due inside its window, before T's close.
    const answerAt = Math.max(askedAt, staging + ANSWER_AT_MS)
    // A's writes slow (from before the fillers fall due, unless the question came late) until just after T's close.
    yield* asker.delayWrites("broker", op.slowMs, answerAt + DEFAULT_REPLACE_WINDOW_MS - KILL_BEFORE_DUE_MS + SLOW_PAST_KILL_MS - askedAt)
    yield* sim.advance(answerAt - askedAt)
    const answered = yield* target.answer(asker.id, questionId, text(counter, "answer", target.name, asker.name), replace(`answer-mailbox-${counter}-answer`))
    // T's client reads the broker's acknowledgement of its reply (so the world knows the broker took it), but
    // nothing it writes from now reaches the broker before its close: the question stays unconfirmed.
    yield* sim.advance(ACK_AFTER_MS)
    yield* target.delayWrites("client", DEFAULT_REPLACE_WINDOW_MS + SLACK_MS)
    yield* target.resume("client")
    yield* sim.advance(DEFAULT_REPLACE_WINDOW_MS - KILL_BEFORE_DUE_MS - ACK_AFTER_MS)
    const acked = answered?.fiber.pollUnsafe()
    // T's connection closes: the question goes back to the mailbox, and the reply, staged, waits for room.
    yield* target.kill
    // The broker's read of the close: what T staged goes now, or waits for room.
    yield* sim.advance(CLOSE_SEEN_MS)
    // T's own reply, never the broker's count of every sender's staged messages (review revah AH1).
    const staged = sim.ledger.replyStagedAt(target.id, questionId, yield* Clock.currentTimeMillis)
    const exit = yield* asked.result(`${op.timeoutMs + SLACK_MS} millis`)
    const now = yield* Clock.currentTimeMillis
    // Past the deadline (the broker's runs from its read of the ask, before `askedAt`).
    yield* sim.advance(Math.max(0, askedAt + op.timeoutMs - now) + op.backAfterMs)
    yield* target.start
    const replied = Exit.isSuccess(exit) && exit.value._tag === "Replied" && exit.value.from.id === target.id
    yield* reached(sim, asker, target, staged, acked !== undefined && Exit.isSuccess(acked), replied)
  })

/**
 * Counts the op as having reached its case when T's reply was still staged right after T's close
 * (`staged`: its window open, written nowhere; `Ledger.replyStagedAt`), T's client read its
 * acknowledgement (`acked`) and A's ask ended with T's reply (`replied`); else as skipped.
 */
const reached = (
  sim: SimulationService,
  asker: SimSession,
  target: SimSession,
  staged: boolean,
  acked: boolean,
  replied: boolean
): Effect.Effect<void> => {
  if (staged && acked && replied) {
    return sim.insertedOp(OP, "reached", `answer mailbox: reached its case: ${target.name}'s reply, staged past its close, answered ${asker.name}`)
  }
  return sim.insertedOp(
    OP,
    "skipped",
    `answer mailbox: did not reach its case (${
      [staged ? [] : ["the reply not still staged just after the close"], acked ? [] : ["the reply's acknowledgement not read"], replied ? [] : ["the ask not replied"]]
        .flat().join("; ")
    })`
  )
}

/** Inserts `seed`'s `AnswerMailbox` op(s) into a workload's `ops` (`WorkloadOptions.answerMailbox`; never killing or starting `notSession`): each spliced in before the op at its drawn index. */
export const insertAnswerMailbox: Insert<AnswerMailboxDraw> = (ops, { seed, sessions, notSession }) => {
  for (const [index, op] of drawAnswerMailbox(seed, sessions, ops.length, notSession)) ops.splice(index, 0, op)
}

/** The `AnswerMailbox` op as Workload.ts's table of inserted ops prints and runs it. */
export const answerMailboxOp: InsertedOp<AnswerMailboxDraw> = { format: formatAnswerMailbox, run: runAnswerMailbox }
