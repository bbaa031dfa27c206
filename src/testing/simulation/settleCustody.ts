/**
 * The `SettleCustody` op of generated workloads (inserted with `--settle-hold`,
 * beside `SettleHold`): an asker A taken over by a new instance of its own
 * client while the old connection still holds its answerer D's unconfirmed
 * mail, so D's reply to the new instance's ask is kept by the takeover's
 * custody hold, forced there by D's close — and A's deadline comes while the
 * hold keeps it. How it is drawn and inserted, printed and run
 * (`insertSettleCustody`, `settleCustodyOp`: Workload.ts's table lists them).
 *
 * Why: at its deadline an `ask-expiry-v1` client makes one settling round
 * trip (a `list` marked `settle: true`), and the broker holds its answer
 * while a reply to that asker it accepted is kept by a custody hold
 * (`CustodyHolds.keepsReply`, src/broker/ParkedReplies.ts), releasing it
 * when the hold ends (`BrokerStats.answersReleasedCustody`). No mode got
 * there: `--settle-hold` parks the reply behind a slow reader, and
 * `--custody-hold` asks nothing (the counter stayed 0 in both, and
 * together). This op builds the state from real clients and link faults
 * only; the ledger judges A's ask as any other (`answer-after-timeout`,
 * `ask-unsettled`, no loss, per-sender order), and the counter says the
 * broker got there.
 *
 * The op, in order: A's broker-side writes take `delayMs` each and the
 * broker stops reading A for `stallMs` (it sees neither A's confirmations
 * nor, later, its `unregister` and close); D sends A `count` messages (A's
 * old connection's custody); A stops (its orderly close unread) and starts
 * again, a new instance that takes the session over — a custody hold on D;
 * the new instance asks D with a timeout of `timeoutMs`; once D's agent has
 * the question (polled) D replies — held behind the hold — and `closeMs`
 * after the ask D stops or is killed (`close`): its held reply is forced to
 * A's new connection and kept by the hold. A's deadline comes meanwhile
 * (before or after D's close), its settling answer held. The takeover ends
 * the old connection, whose close waits for its slow write in progress (at
 * most the 2 s end grace): that close ends the hold, and the reply then the
 * answer reach A. D starts again `returnMs` after its close.
 *
 * In half the seeds (a stream of its own, `settle-custody/take-back`) the
 * op is its take-back variant instead (`SettleCustodyDraw.takeBack`,
 * `runTakeBack`, review settle4): the reply is written to A's old
 * connection, never confirmed, when another instance takes the session
 * over, and A's own client — its ask waiting — takes it back before that
 * old close: its settling answer must wait for the reply the close gives
 * back (`CustodyHolds.keepsReply`, `BrokerStats.custodyAwaitedReplies`).
 *
 * A and D are distinct running sessions of one group and one pi scope (an
 * ask to a session the asker cannot see fails at once); a supervisor (a new
 * client of it holds no capability) and the ephemeral session (its stop ends
 * it) are neither (`notSession`). The op takes the next running sessions
 * that fit, or is skipped. Drawn from a stream of its own
 * (`Prng.derive(seed, "settle-custody")`) and inserted into the ordinary
 * workload, whose own draws are unchanged.
 */
import { Effect, Schema } from "effect"
import { Prng } from "../Prng.ts"
import { nextRunning } from "./running.ts"
import type { Insert, InsertedOp } from "./inserted.ts"
import type { SimSession, SimulationService } from "./types.ts"

/** How D closes once its reply is held: orderly or killed. */
const SettleCustodyClose = Schema.Literals(["stop", "kill"])

/** Where the take-back variant's reply waits on A's old connection: written and unconfirmed, or in a slow write. */
const SettleCustodyWritten = Schema.Literals(["custody", "write"])

/** The fields of a `SettleCustody` op (sessions by index; see the module header for the order of events). */
export const SettleCustodyFields = {
  asker: Schema.Int,
  answerer: Schema.Int,
  count: Schema.Int,
  delayMs: Schema.Int,
  stallMs: Schema.Int,
  timeoutMs: Schema.Int,
  closeMs: Schema.Int,
  close: SettleCustodyClose,
  returnMs: Schema.Int,
  notSession: Schema.Array(Schema.Int),
  takeBack: Schema.optionalKey(Schema.Struct({ written: SettleCustodyWritten, takeoverMs: Schema.Int }))
}

/** A drawn `SettleCustody`. */
export interface SettleCustodyDraw {
  readonly _tag: "SettleCustody"
  readonly after: number
  readonly asker: number
  readonly answerer: number
  readonly count: number
  readonly delayMs: number
  readonly stallMs: number
  readonly timeoutMs: number
  readonly closeMs: number
  readonly close: "stop" | "kill"
  readonly returnMs: number
  /** Sessions the op never uses (a supervisor, the ephemeral one). */
  readonly notSession: ReadonlyArray<number>
  /**
   * The take-back variant (review settle4; absent: the op as above): D's
   * reply to A's ask waits on A's old connection — written there and never
   * confirmed (`custody`), or in its slow write in progress (`write`) —
   * when, `takeoverMs` after the ask, another client instance takes A's
   * session over and A's own client, its connection dropped, takes it back
   * before that old connection's close. `count`, `stallMs`, `closeMs`,
   * `close` and `returnMs` are not used.
   */
  readonly takeBack?: { readonly written: "custody" | "write"; readonly takeoverMs: number }
}

/** How long A's orderly stop may take: its close waits 2 s for an `unregister` answer the broker does not read. */
const STOP_MS = 2_000

/**
 * The `SettleCustody` op of `seed`'s workload, with the index among the
 * workload's `ops` other ops (0 to `ops`) it goes before; none in a world of
 * fewer than two sessions.
 */
export const drawSettleCustody = (
  seed: number,
  sessions: number,
  ops: number,
  notSession: ReadonlyArray<number> = []
): ReadonlyArray<readonly [number, SettleCustodyDraw]> => {
  if (sessions < 2) return []
  const prng = Prng.derive(seed, "settle-custody")
  const asker = prng.int(0, sessions - 1)
  const answerer = (asker + prng.int(1, sessions - 1)) % sessions
  const at = prng.int(0, ops)
  // The hold lasts until the old connection's `end` flushed its outbox, at most END_GRACE (2 s) after the
  // takeover: A's deadline and D's close come within it, mostly.
  const timeoutMs = prng.int(400, 1500)
  // D closes before A's deadline (the reply kept when the settling list comes) or after it (the answer held
  // behind the parked reply first, then behind the kept one).
  const closeMs = prng.chance(0.5) ? prng.int(50, timeoutMs - 100) : timeoutMs + prng.int(50, Math.max(100, 1900 - timeoutMs))
  const drawn = {
    _tag: "SettleCustody",
    after: prng.int(0, 2500),
    asker,
    answerer,
    count: prng.int(1, 3),
    // D's sends go out in one write (often): it lasts past A's stop and the takeover's 2 s end grace.
    delayMs: prng.int(4300, 6000),
    timeoutMs,
    closeMs,
    // Past A's orderly stop and the takeover: the broker reads neither A's `unregister` nor its close first.
    stallMs: STOP_MS + prng.int(1000, 3000),
    close: prng.weighted({ stop: 1, kill: 1 }),
    returnMs: prng.int(100, 2000),
    notSession
  } as const
  // The take-back variant from a stream of its own, so the op's other fields are those of before.
  const variant = Prng.derive(seed, "settle-custody/take-back")
  if (!variant.chance(0.5)) return [[at, drawn]]
  const written = variant.weighted({ custody: 1, write: 1 })
  const takeoverMs = variant.int(150, 400)
  // The old close comes at most END_GRACE (2 s) after the takeover; A's own client is back well before
  // (its reconnect's first delay): its deadline comes between.
  return [[at, { ...drawn, timeoutMs: takeoverMs + variant.int(900, 1700), takeBack: { written, takeoverMs } }]]
}

/** A `SettleCustody`, printed. */
export const formatSettleCustody = (op: SettleCustodyDraw, name: (index: number) => string): string => {
  const a = name(op.asker)
  const d = name(op.answerer)
  if (op.takeBack !== undefined) {
    const where = op.takeBack.written === "custody"
      ? `written to ${a}'s connection (its broker-side writes then take ${op.delayMs} ms)`
      : `in a write to ${a}'s connection that takes ${op.delayMs} ms`
    return `${a} asks ${d} (timeout ${op.timeoutMs} ms) and stops reading; ${d} replies, ${where}; ${op.takeBack.takeoverMs} ms after the ask another instance takes ${a} over, and ${a}'s connection drops: its client takes the session back`
  }
  return `${a}'s broker-side writes take ${op.delayMs} ms and the broker stops reading ${a} for ${op.stallMs} ms; ${d} sends ${a} ${op.count}; ${a} stops and starts again (a takeover) and asks ${d} (timeout ${op.timeoutMs} ms); ${d} replies, and ${op.closeMs} ms after the ask ${
    op.close === "stop" ? "stops" : "is killed"
  } (and starts ${op.returnMs} ms later)`
}

/** The text of message `k` of the op number `counter` from `from` to `to`. */
export const settleCustodyText = (counter: number, k: string, from: string, to: string): string =>
  `settle-custody ${counter}.${k} ${from}→${to}`

/** How often the op looks whether D's agent has the question yet. */
const QUESTION_POLL_MS = 20

/** Whether `session`'s current generation was handed the question `text`. */
const hasQuestion = (session: SimSession, text: string): Effect.Effect<boolean> =>
  Effect.map(session.inbox, (inbound) => inbound.some((item) => item.expectsReply && item.message.content.text === text))

/** Runs the op with the drawn sessions, or the next running sessions after them that fit. */
export const runSettleCustody = (sim: SimulationService, op: SettleCustodyDraw, counter: number): Effect.Effect<void> =>
  Effect.gen(function*() {
    const sessions = sim.sessions
    const fits = (session: SimSession) => !op.notSession.includes(sessions.indexOf(session))
    const asker = yield* nextRunning(sessions, op.asker, fits)
    if (asker === undefined) return yield* sim.note("settle custody: skipped (no asker running)")
    // One group and one pi scope: an ask to a session the asker cannot see fails before it is sent.
    const answerer = yield* nextRunning(
      sessions,
      op.answerer,
      (s) => s !== asker && s.group === asker.group && s.scopeId === asker.scopeId && fits(s)
    )
    if (answerer === undefined) return yield* sim.note("settle custody: skipped (no answerer running)")
    if (op.takeBack !== undefined) return yield* runTakeBack(sim, op, op.takeBack, counter, asker, answerer)
    const to = asker.name
    // Long enough to keep the old connection's write in progress past the takeover.
    yield* asker.delayWrites("broker", op.delayMs, op.stallMs + op.delayMs * (op.count + 2))
    yield* asker.stall("broker", op.stallMs)
    for (let k = 1; k <= op.count; k++) yield* answerer.send(to, settleCustodyText(counter, `${k}`, answerer.name, to))
    // Its `unregister` and close are not read: the broker still holds the old connection when the new client registers.
    yield* asker.stop
    yield* asker.start
    const question = `settle-custody ${counter} ${asker.name}→${answerer.name}`
    yield* asker.ask(answerer.name, question, { timeout: op.timeoutMs })
    // D replies once its agent has the question (held behind the hold: D is a held sender), then closes.
    let waited = 0
    while (waited < op.closeMs && !(yield* hasQuestion(answerer, question))) {
      yield* sim.advance(QUESTION_POLL_MS)
      waited += QUESTION_POLL_MS
    }
    yield* answerer.reply(`settled ${counter}`, { to: asker.name })
    yield* sim.advance(Math.max(0, op.closeMs - waited))
    yield* op.close === "stop" ? answerer.stop : answerer.kill
    yield* sim.advance(op.returnMs)
    yield* answerer.start
  })

/** The take-back variant: time for the ask's commit (the simulated disk's default 5 ms, many times over), which its acknowledgement waits for. */
const ACK_MS = 50

/** The take-back variant: how often it looks whether A's `list` round trip came back. */
const PROBE_POLL_MS = 5

/** The take-back variant: how long D's reply is given to reach the broker and A's old connection. */
const REPLY_MS = 20

/** The take-back variant: how long the op lasts after the takeover, past the old close (at most the 2 s end grace) and A's deadline. */
const HOLD_MS = 2_200

/** The take-back variant: how long the other instance's connection may stay, should nothing close it first. */
const OTHER_MS = 10_000

/**
 * The take-back variant (`SettleCustodyDraw.takeBack`, review settle4): A
 * asks D; once D's agent has the question (so the broker read the ask),
 * the ask's commit is over and a `list` round trip of A's came back (so
 * A's client read the ask's acknowledgement, which its deadline counts
 * from), A's client stops reading its connection, and D replies: the reply
 * is written to that connection and never confirmed (`custody`: only then
 * are A's broker-side writes slowed), or stays in its slow write (`write`).
 * `takeoverMs` after the ask another instance takes the session over (a
 * bare `register` on a connection of A's own,
 * `SimulationService.ownConnection`): a custody hold on the old
 * connection, whose close waits for its slow write (at most the 2 s end
 * grace), also once A's connection drops on A's side, next. A's client,
 * alive, reconnects and registers its own instance again — not a rejoin
 * (the session's connection is the other instance's), a takeover that
 * carries the hold. A's deadline comes while the hold waits: its settling
 * answer must wait for the old close, which gives the reply back ahead of
 * it (`BrokerStats.custodyAwaitedReplies`); answered at once, A's ask ends
 * in a timeout and the reply comes after (`answer-after-timeout`).
 */
const runTakeBack = (
  sim: SimulationService,
  op: SettleCustodyDraw,
  takeBack: { readonly written: "custody" | "write"; readonly takeoverMs: number },
  counter: number,
  asker: SimSession,
  answerer: SimSession
) =>
  Effect.gen(function*() {
    const question = `settle-custody ${counter} ${asker.name}→${answerer.name}`
    yield* asker.ask(answerer.name, question, { timeout: op.timeoutMs })
    let waited = 0
    while (waited < takeBack.takeoverMs && !(yield* hasQuestion(answerer, question))) {
      yield* sim.advance(QUESTION_POLL_MS)
      waited += QUESTION_POLL_MS
    }
    // A's client must read the ask's acknowledgement before it stops reading, else it sends the ask again on its
    // next connection and its deadline counts from that one. The acknowledgement waits for the ask's commit; then
    // a `list` round trip on A's connection: its answer comes after what was queued before it.
    yield* sim.advance(ACK_MS)
    waited += ACK_MS
    const probe = yield* asker.list
    while (waited < takeBack.takeoverMs && probe !== undefined && probe.fiber.pollUnsafe() === undefined) {
      yield* sim.advance(PROBE_POLL_MS)
      waited += PROBE_POLL_MS
    }
    // Until the drop: A's client never reads, nor confirms, the reply.
    yield* asker.stall("client")
    const slow = asker.delayWrites("broker", op.delayMs, op.delayMs * 2)
    if (takeBack.written === "write") yield* slow
    yield* answerer.reply(`settled ${counter}`, { to: asker.name })
    yield* sim.advance(REPLY_MS)
    waited += REPLY_MS
    // The reply is written: what follows on the old connection (its `taken_over`) is slow, and its `end` waits for it.
    if (takeBack.written === "custody") yield* slow
    yield* sim.advance(Math.max(0, takeBack.takeoverMs - waited))
    const other = yield* sim.ownConnection(asker)
    if (other === undefined) return yield* sim.note("settle custody: the other instance did not register")
    // The broker closes it when A's client takes the session back; this only bounds it.
    yield* other.closeAfter(OTHER_MS)
    yield* asker.drop("client")
    // The workload's next op waits until the old close (the hold's end), so it cannot end A's ask first.
    yield* sim.advance(HOLD_MS)
  })

/** Inserts `seed`'s `SettleCustody` op(s) into a workload's `ops` (`WorkloadOptions.settleHold`, after its `SettleHold`; never stopping or starting `notSession`): each spliced in before the op at its drawn index. */
export const insertSettleCustody: Insert<SettleCustodyDraw> = (ops, { seed, sessions, notSession }) => {
  for (const [index, op] of drawSettleCustody(seed, sessions, ops.length, notSession)) ops.splice(index, 0, op)
}

/** The `SettleCustody` op as Workload.ts's table of inserted ops prints and runs it. */
export const settleCustodyOp: InsertedOp<SettleCustodyDraw> = { format: formatSettleCustody, run: runSettleCustody }
