/**
 * The `SettleHold` op of generated workloads (`--settle-hold`): an asker A
 * whose own deadline comes while the reply to its ask, accepted by the
 * broker, is still parked behind the answerer B's earlier mail to a slow
 * reader C — then that reply is released, forced or taken back. How it is
 * drawn and inserted, printed and run (`insertSettleHold`, `settleHoldOp`:
 * Workload.ts's table lists them).
 *
 * Why: at its deadline an `ask-expiry-v1` client makes one round trip, a
 * `list` marked `settle: true` (src/session/Ask.ts,
 * `IntercomClient.settleRoundTrip`), and the broker holds its answer while
 * a reply to that asker it accepted is parked in another connection's list
 * (src/broker/ParkedReplies.ts; docs/protocol.md). No other mode got there
 * (`BrokerStats.answersBehindReplies` 0 in every sweep): a real client
 * writes each frame on its own, and a send parked on B's reader holds that
 * reader back, so B's reply was read only once B's mail was out. This op
 * builds the state from real clients and link faults only; the ledger judges
 * A's outcome as any other ask's (`answer-after-timeout`, `ask-unsettled`,
 * and the reply's fate: no loss, per-sender order), and the counter says
 * the broker got there.
 *
 * The op, in order: B sends C `count` messages of `size` characters (each
 * send looks C up first, a `list`, whose answers the broker writes B
 * `lookupMs` late, one write each) and the broker stops reading B for
 * `stallMs`, so B's sends wait on B's link; A asks B with a timeout of
 * `stallMs + leadMs`; once B's agent has the question (polled), C's
 * broker-side writes take `delayMs` for a while (only C's first write of
 * the op is slow: then "C reads again") and B replies, after its sends (or
 * its agent did). When the broker reads B again it reads all of that in one
 * batch: C's writer takes the first message, the second fills C's outbox,
 * the rest are parked on B's reader, and the reply behind them (a batch's
 * output keeps its order). A's deadline comes `leadMs` after that; its
 * settling answer is held. `eventMs` after the deadline, `release`
 * happens: `read` (nothing: C's slow write ends by itself, `delayMs` after
 * it began), `slow-stop`/`slow-kill` (C closes: its mail is refused to its
 * mailbox and the reply is offered), `answerer-stop`/`answerer-kill` (B
 * closes: its parked output is forced), `asker-drop` (A's connection
 * drops: the held answer is dropped, A's settle ends ConnectionLost and the
 * reply goes to its mailbox). A session that stopped starts again
 * `returnMs` later. A world whose link buffer is smaller than what B writes
 * meanwhile (`linkCapacity` 1, 2, often 8) splits the batch: the reply is
 * read later and nothing is held.
 *
 * A, B and C are three distinct running sessions of one group and one pi
 * scope (an ask to a session the asker cannot see fails at once) — or, with
 * no third such session running, C is A itself (the reply parked behind B's
 * mail to A, A's own writes slow once); a supervisor
 * (a new client of it holds no capability) and the ephemeral session (its
 * stop ends it) are none of them (`notSession`). The op takes the next
 * running sessions that fit, or is skipped. Drawn from a stream of its own
 * (`Prng.derive(seed, "settle-hold")`) and inserted into the ordinary
 * workload, whose own draws are unchanged.
 */
import { Effect, Schema } from "effect"
import { Prng } from "../Prng.ts"
import { nextRunning } from "./running.ts"
import type { Insert, InsertedOp } from "./inserted.ts"
import type { SimSession, SimulationService } from "./types.ts"

/** What ends the hold: C reads again, C closes, B closes, or A's connection drops. */
export const SettleRelease = Schema.Literals(["read", "slow-stop", "slow-kill", "answerer-stop", "answerer-kill", "asker-drop"])
/** A drawn release. */
export type SettleRelease = typeof SettleRelease.Type

/** How long after B's lookups are answered and the question reaches it B replies (its sends written by then). */
const REPLY_AFTER_MS = 100

/**
 * When B replies, from the broker's last read of B: each lookup's answer is
 * a write of its own, `lookupMs` each, the question one more.
 */
const replyAt = (count: number, lookupMs: number): number => (count + 1) * lookupMs + REPLY_AFTER_MS

/** The fields of a `SettleHold` op (sessions by index; see the module header for the order of events). */
export const SettleHoldFields = {
  asker: Schema.Int,
  answerer: Schema.Int,
  slow: Schema.Int,
  count: Schema.Int,
  size: Schema.Int,
  delayMs: Schema.Int,
  lookupMs: Schema.Int,
  stallMs: Schema.Int,
  leadMs: Schema.Int,
  release: SettleRelease,
  eventMs: Schema.Int,
  returnMs: Schema.Int,
  notSession: Schema.Array(Schema.Int)
}

/** A drawn `SettleHold`. */
export interface SettleHoldDraw {
  readonly _tag: "SettleHold"
  readonly after: number
  readonly asker: number
  readonly answerer: number
  readonly slow: number
  readonly count: number
  readonly size: number
  readonly delayMs: number
  readonly lookupMs: number
  readonly stallMs: number
  readonly leadMs: number
  readonly release: SettleRelease
  readonly eventMs: number
  readonly returnMs: number
  /** Sessions the op never uses (a supervisor, the ephemeral one). */
  readonly notSession: ReadonlyArray<number>
}

/**
 * The `SettleHold` op of `seed`'s workload, with the index among the
 * workload's `ops` other ops (0 to `ops`) it goes before; none in a world of
 * fewer than three sessions.
 */
export const drawSettleHold = (
  seed: number,
  sessions: number,
  ops: number,
  notSession: ReadonlyArray<number> = []
): ReadonlyArray<readonly [number, SettleHoldDraw]> => {
  if (sessions < 3) return []
  const prng = Prng.derive(seed, "settle-hold")
  const asker = prng.int(0, sessions - 1)
  const answerer = (asker + prng.int(1, sessions - 1)) % sessions
  let slow = prng.int(0, sessions - 1)
  while (slow === asker || slow === answerer) slow = (slow + 1) % sessions
  const at = prng.int(0, ops)
  const delayMs = prng.int(2000, 5000)
  // Few frames (a small link buffer must hold every frame B writes while unread), each larger than any
  // outbox budget of the world (4,096 or 8,192 characters): C's writer takes the first (its slow write), the
  // second fills its outbox, and the rest, and B's reply after them, wait parked.
  const count = prng.int(3, 4)
  const lookupMs = prng.int(30, 120)
  return [[at, {
    _tag: "SettleHold",
    after: prng.int(0, 2500),
    asker,
    answerer,
    slow,
    count,
    size: prng.int(8300, 9500),
    delayMs,
    lookupMs,
    // Past B's lookups answered, its sends written, the question delivered and B's reply written.
    stallMs: replyAt(count, lookupMs) + prng.int(100, 500),
    // The deadline while the reply is parked: before C's slow write ends, mostly well before.
    leadMs: prng.int(700, Math.max(800, delayMs - 1000)),
    release: prng.weighted({ read: 4, "slow-stop": 1, "slow-kill": 1, "answerer-stop": 1, "answerer-kill": 1, "asker-drop": 2 }),
    // Mostly within the asker's liveness timeout (3 s unless `--client-timings` draws it), sometimes past it.
    eventMs: prng.chance(0.8) ? prng.int(0, 800) : prng.int(800, 4000),
    returnMs: prng.int(100, 2000),
    notSession
  }]]
}

/** A `SettleHold`, printed. */
export const formatSettleHold = (op: SettleHoldDraw, name: (index: number) => string): string => {
  const a = name(op.asker)
  const b = name(op.answerer)
  const c = name(op.slow)
  const release = {
    read: `${c} reads again (its slow write ends)`,
    "slow-stop": `${c} stops (and starts ${op.returnMs} ms later)`,
    "slow-kill": `${c} is killed (and starts ${op.returnMs} ms later)`,
    "answerer-stop": `${b} stops (and starts ${op.returnMs} ms later)`,
    "answerer-kill": `${b} is killed (and starts ${op.returnMs} ms later)`,
    "asker-drop": `${a}'s connection drops`
  }[op.release]
  return `${c}'s broker-side writes take ${op.delayMs} ms, ${b}'s ${op.lookupMs} ms, and the broker stops reading ${b} for ${op.stallMs} ms; ${b} sends ${c} ${op.count} messages of ${op.size} characters; ${a} asks ${b} (timeout ${
    op.stallMs + op.leadMs
  } ms) and ${b} replies, parked behind that mail; ${op.eventMs} ms after ${a}'s deadline ${release}`
}

/** The text of message `k` of the op number `counter` from `from` to `to`: a short head, then padding to `size`. */
export const settleHoldText = (counter: number, k: string, from: string, to: string, size: number): string => {
  const head = `settle ${counter}.${k} ${from}→${to} `
  return head + "x".repeat(Math.max(0, size - head.length))
}

/** How long the op lets the asker read its question's acknowledgement before C's writes slow down. */
const ACK_MS = 20

/** How often the op looks whether B's agent has the question yet. */
const QUESTION_POLL_MS = 20

/** Whether `session`'s current generation was handed the question `text`. */
const hasQuestion = (session: SimSession, text: string): Effect.Effect<boolean> =>
  Effect.map(session.inbox, (inbox) => inbox.some((inbound) => inbound.expectsReply && inbound.message.content.text === text))

/** Runs the op with the drawn sessions, or the next running sessions after them that fit. */
export const runSettleHold = (sim: SimulationService, op: SettleHoldDraw, counter: number): Effect.Effect<void> =>
  Effect.gen(function*() {
    const sessions = sim.sessions
    const fits = (session: SimSession) => !op.notSession.includes(sessions.indexOf(session))
    const asker = yield* nextRunning(sessions, op.asker, fits)
    if (asker === undefined) return yield* sim.note("settle hold: skipped (no asker running)")
    // One group and one pi scope: an ask to a session the asker cannot see fails before it is sent.
    const near = (s: SimSession) => s.group === asker.group && s.scopeId === asker.scopeId && fits(s)
    const answerer = yield* nextRunning(sessions, op.answerer, (s) => s !== asker && near(s))
    if (answerer === undefined) return yield* sim.note("settle hold: skipped (no answerer running)")
    // With no third session the asker can see (two pi scopes, or others stopped), A is the slow reader itself:
    // the reply is then parked behind B's mail to A.
    const third = yield* nextRunning(sessions, op.slow, (s) => s !== asker && s !== answerer && near(s))
    const slow = third ?? asker
    const to = slow.name
    // A send by name looks its target up first (a `list`): the broker reads and answers those lookups, but
    // its answers reach B only `lookupMs` later, by when the broker no longer reads B. B's sends follow them.
    yield* answerer.delayWrites("broker", op.lookupMs, op.stallMs)
    for (let k = 1; k <= op.count; k++) yield* answerer.send(to, settleHoldText(counter, `${k}`, answerer.name, to, op.size))
    yield* sim.advance(1)
    yield* answerer.stall("broker", op.stallMs)
    const question = `settle ${counter} ${asker.name}→${answerer.name}`
    yield* asker.ask(answerer.name, question, { timeout: op.stallMs + op.leadMs })
    // The question reaches B after the lookups' answers (one outbox); B's reply waits, unread, behind its sends.
    // Another fault of the workload may slow it: B replies once its agent has it, while the broker still does
    // not read B (else the reply would come too late for the batch, and the op goes on without it).
    let waited = replyAt(op.count, op.lookupMs)
    yield* sim.advance(waited)
    while (waited + QUESTION_POLL_MS + ACK_MS < op.stallMs && !(yield* hasQuestion(answerer, question))) {
      yield* sim.advance(QUESTION_POLL_MS)
      waited += QUESTION_POLL_MS
    }
    // Only now C's writes slow down (when C is A, its ask's acknowledgement has reached it), and only C's
    // first write of the op is slow: writes begun after this window go at full speed ("C reads again").
    yield* sim.advance(ACK_MS)
    waited += ACK_MS
    yield* slow.delayWrites("broker", op.delayMs, Math.max(0, op.stallMs - waited) + Math.floor(op.delayMs / 2))
    yield* answerer.reply(`settled ${counter}`, { to: asker.name })
    // The broker reads B again (one batch), then A's deadline comes with the reply parked.
    yield* sim.advance(Math.max(0, op.stallMs - waited) + op.leadMs + op.eventMs)
    switch (op.release) {
      case "read":
        return
      case "asker-drop":
        return yield* asker.drop("client")
      case "slow-stop":
      case "slow-kill":
      case "answerer-stop":
      case "answerer-kill": {
        const closing = op.release.startsWith("slow") ? slow : answerer
        yield* op.release.endsWith("stop") ? closing.stop : closing.kill
        yield* sim.advance(op.returnMs)
        return yield* closing.start
      }
    }
  })

/** Inserts `seed`'s `SettleHold` op(s) into a workload's `ops` (`WorkloadOptions.settleHold`; never stopping or starting `notSession`): each spliced in before the op at its drawn index. */
export const insertSettleHold: Insert<SettleHoldDraw> = (ops, { seed, sessions, notSession }) => {
  for (const [index, op] of drawSettleHold(seed, sessions, ops.length, notSession)) ops.splice(index, 0, op)
}

/** The `SettleHold` op as Workload.ts's table of inserted ops prints and runs it. */
export const settleHoldOp: InsertedOp<SettleHoldDraw> = { format: formatSettleHold, run: runSettleHold }
