/**
 * The `AnswerTakeover` op of generated workloads (`WorkloadOptions.answerTakeover`,
 * `--answer-takeover`): an ask answered by a new client instance of its
 * target's session while the old connection, taken over, still holds the
 * question unconfirmed, and closes past the ask's deadline. How it is
 * drawn and inserted, printed and run (`insertAnswerTakeover`,
 * `answerTakeoverOp`: Workload.ts's table lists them).
 *
 * Why: a reply accepted along an ask's edge ends the ask's other copies as
 * answered (helper replyclose): the copy a takeover's old connection gives
 * back past the deadline goes silently. Before that fix the broker told the
 * asker `expired` after it had its reply, and no workload built the order
 * (the old connection must outlive the deadline holding the question, the
 * new instance answer before it); the ledger checks the end
 * (`expired-after-answer`, ledger/askExpiry.ts).
 *
 * The op, in order: T's client stops reading and the broker stops reading
 * T's connection; A asks T with a timeout of `timeoutMs`, and the question
 * is written to T's connection, never read; T's broker-side writes then
 * take `slowMs` and A sends T a plain message, whose slow write keeps the
 * old connection's close waiting (at most the broker's 2 s end grace); T
 * stops (its `unregister` unread, its client waits 2 s for the answer, then
 * closes) and starts again at once — a new client instance, which takes
 * the session over while the old close waits — and answers A's question
 * through its client (`SimSession.answer`, as an agent answering from what
 * it kept); A's ask ends with the reply; the op waits out the deadline and
 * the old close.
 * The variant (`givenBack`, drawn last from the op's stream, half the
 * seeds; helper answerwip): the slow plain message's write takes only
 * 2150 ms, so the old close comes just after T stops and starts again;
 * the new connection's broker-side writes take `slowMs` from its start, so
 * the question the old close gives it back waits there unwritten; T
 * answers before the deadline; past it the new connection drops with the
 * question still unwritten, and it comes back answered (a reply used to
 * mark only a custody's copy).
 * A and T are distinct running sessions of one group and one pi scope; a
 * supervisor and the ephemeral session are never T (`notSession`), and A
 * is waiting on no ask of its own, nor asked by T (either refuses the ask
 * before it is sent). The op takes the next sessions from the drawn ones
 * that fit and are connected, the broker up, waiting up to 10 s for them
 * (a crash's restart, a reconnect); then it waits, step by step, until the
 * broker has written the question to T (its asker's writes may be slow),
 * up to 1.5 s, and times the rest from there. At its end it counts
 * whether it reached its case (the broker took T's answer) or was skipped
 * (why goes to the trace): the run's tally (`SimReport.insertedOps`),
 * printed by the soak. Drawn from a
 * stream of its own (`Prng.derive(seed, "answer-takeover")`) and inserted
 * into the ordinary workload, whose own draws are unchanged.
 */
import { Effect, Exit, Schema } from "effect"
import { Prng } from "../Prng.ts"
import { nextRunning } from "./running.ts"
import type { Insert, InsertedOp } from "./inserted.ts"
import type { Pending, SimSession, SimulationService } from "./types.ts"

/** The fields of an `AnswerTakeover` op (sessions by index; see the module header for the order of events). */
export const AnswerTakeoverFields = {
  asker: Schema.Int,
  target: Schema.Int,
  timeoutMs: Schema.Int,
  slowMs: Schema.Int,
  givenBack: Schema.optional(Schema.Boolean),
  notSession: Schema.Array(Schema.Int)
}

/** A drawn `AnswerTakeover`. */
export interface AnswerTakeoverDraw {
  readonly _tag: "AnswerTakeover"
  readonly after: number
  readonly asker: number
  readonly target: number
  /** The ask's timeout: past T's stop (2 s) and return and its answer, short of the old close. */
  readonly timeoutMs: number
  /** How long each of the broker's writes to T's old connection takes: its close waits for the one in progress. */
  readonly slowMs: number
  /**
   * The variant (see the module header): the question, given back by the
   * old close, waits unwritten on the new connection when T answers, and
   * that connection drops past the deadline. Absent: the base op.
   */
  readonly givenBack?: boolean | undefined
  /** Sessions the op never takes as T (a supervisor, the ephemeral one). */
  readonly notSession: ReadonlyArray<number>
}

/**
 * The `AnswerTakeover` op of `seed`'s workload, with the index among the workload's `ops` other ops
 * (0 to `ops`) it goes before; none in a world of fewer than two sessions.
 */
export const drawAnswerTakeover = (
  seed: number,
  sessions: number,
  ops: number,
  notSession: ReadonlyArray<number> = []
): ReadonlyArray<readonly [number, AnswerTakeoverDraw]> => {
  if (sessions < 2) return []
  const prng = Prng.derive(seed, "answer-takeover")
  const target = prng.int(0, sessions - 1)
  const asker = (target + prng.int(1, sessions - 1)) % sessions
  const at = prng.int(0, ops)
  const timeoutMs = prng.int(2300, 3200)
  const after = prng.int(0, 2500)
  const slowMs = prng.int(timeoutMs + 500, 4000)
  // Drawn last: the base op's fields are what they were for every seed.
  const givenBack = prng.int(0, 1) === 1
  return [[at, {
    _tag: "AnswerTakeover",
    after,
    asker,
    target,
    timeoutMs,
    slowMs,
    ...(givenBack ? { givenBack } : {}),
    notSession
  }]]
}

/** An `AnswerTakeover`, printed. */
export const formatAnswerTakeover = (op: AnswerTakeoverDraw, name: (index: number) => string): string => {
  const a = name(op.asker)
  const t = name(op.target)
  if (op.givenBack === true) {
    return `${t}'s client and the broker stop reading ${t}; ${a} asks ${t} (timeout ${op.timeoutMs} ms); its old broker-side writes take ${OLD_SLOW_MS} ms and ${a} sends ${t} one more; ${t} stops (unread) and starts again (a takeover); its new connection's broker-side writes take ${op.slowMs} ms; the old close gives the question back there, unwritten, and ${t} answers ${a}'s question; past the deadline the new connection drops`
  }
  return `${t}'s client and the broker stop reading ${t}; ${a} asks ${t} (timeout ${op.timeoutMs} ms); ${t}'s broker-side writes take ${op.slowMs} ms and ${a} sends ${t} one more; ${t} stops (unread) and starts again (a takeover) and answers ${a}'s question; the old connection closes past the deadline`
}

/** The op's name in the run's tally of inserted ops (`SimReport.insertedOps`). */
const OP = "answer takeover"

/**
 * How long the op waits for a target and an asker that fit to be connected with the broker up (a crash's
 * restart, a dropped connection's reconnect): it runs then, or is skipped.
 */
const READY_WAIT_MS = 10_000

/** The step in which the op watches for them. */
const READY_STEP_MS = 50

/**
 * The target and asker of the op: the next running sessions after the drawn ones that fit and are
 * registered on an open connection (the next target when none fits as its asker), the broker up; waited for step by step, at most `READY_WAIT_MS`.
 * T is never one of `notSession`; A shares T's group and pi scope (an ask of a session the asker cannot
 * see fails before it is sent). An asker already waiting on an ask is refused another (AlreadyWaiting),
 * and one the target is asking is refused as a mutual ask: neither is taken. Shared with the mailbox
 * case's op (answerMailbox.ts).
 */
export const connectedPair = (
  sim: SimulationService,
  op: Pick<AnswerTakeoverDraw, "asker" | "target" | "notSession">
): Effect.Effect<{ readonly asker: SimSession; readonly target: SimSession } | undefined> =>
  Effect.gen(function*() {
    const sessions = sim.sessions
    for (let waited = 0; waited <= READY_WAIT_MS; waited += READY_STEP_MS) {
      if (yield* sim.broker.isUp) {
        const connected = sim.ledger.registeredOwners()
        const open = sim.ledger.openQuestions()
        for (let t = 0; t < sessions.length; t++) {
          const target = sessions[(op.target + t) % sessions.length]
          if (target === undefined || op.notSession.includes(sessions.indexOf(target)) || !connected.includes(target.id)) continue
          if (!(yield* target.running)) continue
          const asker = yield* nextRunning(
            sessions,
            op.asker,
            (s) =>
              s !== target && s.group === target.group && s.scopeId === target.scopeId && connected.includes(s.id) &&
              !open.some((question) => question.asker === s.id || (question.asker === target.id && question.target === s.id))
          )
          if (asker !== undefined) return { asker, target }
        }
      }
      yield* sim.advance(READY_STEP_MS)
    }
    return undefined
  })

/**
 * How long the op waits for the question to be written to T: the asker's own client may be slow to write it
 * (its writes delayed by an earlier fault). The broker's deadline runs from its read of the ask, so T's
 * answer, about 2.2 s after the write, still comes before it; the asker's client, timing the ask from its
 * call, may give up first, and still reads the reply when it comes.
 */
const WRITE_WAIT_MS = 1_500

/** The step in which the op watches for that write. */
const WRITE_STEP_MS = 5

/**
 * The id of `asker`'s open question once the broker has written it to a connection (T's: its only target),
 * watched in the ledger step by step; undefined when the ask ended first or the write took longer than
 * `WRITE_WAIT_MS`. Shared with the mailbox case's op (answerMailbox.ts).
 */
export const questionWritten = (
  sim: SimulationService,
  asker: SimSession,
  asked: Pending<unknown, unknown>
): Effect.Effect<string | undefined> =>
  Effect.gen(function*() {
    for (let waited = 0;; waited += WRITE_STEP_MS) {
      const question = sim.ledger.openQuestions().find((open) => open.asker === asker.id)
      if (question?.written === true) return question.questionId
      if (asked.fiber.pollUnsafe() !== undefined || waited >= WRITE_WAIT_MS) return undefined
      yield* sim.advance(WRITE_STEP_MS)
    }
  })

/**
 * Counts the op, at its end, as having reached its case (`kase`) when the broker acknowledged
 * T's answer (a reply accepted while a copy of the question was held elsewhere), else as skipped: the
 * answer was refused, failed or never sent, and nothing was built for the rule to judge.
 */
const reached = (
  sim: SimulationService,
  answered: Pending<unknown, unknown> | undefined,
  kase: string
): Effect.Effect<void> => {
  const exit = answered?.fiber.pollUnsafe()
  return exit !== undefined && Exit.isSuccess(exit)
    ? sim.insertedOp(OP, "reached", `answer takeover: reached its case (${kase}): the broker took T's answer`)
    : sim.insertedOp(OP, "skipped", `answer takeover: did not reach its case (${kase}): T's answer was not taken`)
}

/** How long past its timeout the op waits for A's ask to end (a settling round trip may prolong it). */
const SLACK_MS = 15_000

/** The text of message `k` of the op number `counter` from `from` to `to`. */
const text = (counter: number, k: string, from: string, to: string): string => `answer-takeover ${counter}.${k} ${from}→${to}`

/** Runs the op with the drawn sessions, or the next ones after them that fit and are connected (`connectedPair`). */
export const runAnswerTakeover = (sim: SimulationService, op: AnswerTakeoverDraw, counter: number): Effect.Effect<void> =>
  Effect.gen(function*() {
    const pair = yield* connectedPair(sim, op)
    if (pair === undefined) {
      return yield* sim.insertedOp(OP, "skipped", `answer takeover: skipped (no target and asker connected within ${READY_WAIT_MS} ms)`)
    }
    const { asker, target } = pair
    yield* target.stall("client")
    yield* target.stall("broker")
    const asked = yield* asker.ask(target.name, text(counter, "question", asker.name, target.name), { timeout: op.timeoutMs })
    const questionId = asked === undefined ? undefined : yield* questionWritten(sim, asker, asked)
    if (asked === undefined || questionId === undefined) {
      yield* target.resume("broker")
      yield* target.resume("client")
      return yield* sim.insertedOp(OP, "skipped", "answer takeover: skipped (the question was not written to the target in time)")
    }
    // The variant: the slow write ends just after T's stop and start, so the old close comes before the deadline.
    yield* target.delayWrites("broker", op.givenBack === true ? OLD_SLOW_MS : op.slowMs)
    const slow = yield* asker.send(target.name, text(counter, "slow", asker.name, target.name))
    if (slow !== undefined) yield* slow.result(`${op.timeoutMs} millis`)
    if (op.givenBack === true) return yield* givenBack(sim, op, target, asker, asked, questionId, counter)
    // Its `unregister` unread, its close waits 2 s for the answer; the broker's close of it then waits for the slow write.
    yield* target.stop
    yield* target.start
    const answered = yield* target.answer(asker.id, questionId, text(counter, "answer", target.name, asker.name))
    if (answered !== undefined) yield* answered.result(`${op.timeoutMs} millis`)
    yield* asked.result(`${op.timeoutMs + SLACK_MS} millis`)
    // Past the deadline and the old connection's close (its slow write, or the 2 s end grace).
    yield* sim.advance(op.slowMs)
    yield* reached(sim, answered, "the old close past the deadline")
  })

/**
 * The variant's slow write on the old connection (ms): it ends just after T's stopped client gives up on its
 * `unregister` (2 s) and T starts again, so the old close gives the question back to the new connection
 * before the deadline (at least 2300 ms).
 */
const OLD_SLOW_MS = 2150

/** How long after T starts again the variant answers: past the old close, short of the deadline. */
const ANSWER_AFTER_MS = 160

/** The variant's end (`givenBack`; module header): from T's stop on. */
const givenBack = (
  sim: SimulationService,
  op: AnswerTakeoverDraw,
  target: SimSession,
  asker: SimSession,
  asked: Pending<unknown, unknown>,
  questionId: string,
  counter: number
): Effect.Effect<void> =>
  Effect.gen(function*() {
    yield* target.stop
    yield* target.start
    // The new connection's writes are slow: what the old close gives back waits there, unwritten.
    yield* target.delayWrites("broker", op.slowMs)
    yield* sim.advance(ANSWER_AFTER_MS)
    const answered = yield* target.answer(asker.id, questionId, text(counter, "answer", target.name, asker.name))
    yield* asked.result(`${op.timeoutMs + SLACK_MS} millis`)
    // Past the deadline, the question still unwritten (its write takes slowMs): the new connection drops.
    yield* sim.advance(op.timeoutMs)
    yield* target.drop("broker")
    yield* sim.advance(op.slowMs)
    yield* reached(sim, answered, "the question given back")
  })

/** Inserts `seed`'s `AnswerTakeover` op(s) into a workload's `ops` (`WorkloadOptions.answerTakeover`; never killing or starting `notSession`): each spliced in before the op at its drawn index. */
export const insertAnswerTakeover: Insert<AnswerTakeoverDraw> = (ops, { seed, sessions, notSession }) => {
  for (const [index, op] of drawAnswerTakeover(seed, sessions, ops.length, notSession)) ops.splice(index, 0, op)
}

/** The `AnswerTakeover` op as Workload.ts's table of inserted ops prints and runs it. */
export const answerTakeoverOp: InsertedOp<AnswerTakeoverDraw> = { format: formatAnswerTakeover, run: runAnswerTakeover }
