/**
 * The `HeldReturn` op of generated workloads (`--held-return`): a sender X
 * whose last messages wait behind a slow recipient B (parked on X's
 * connection) when it leaves, and that registers again on a new connection
 * while they still wait. How it is drawn and inserted, printed and run
 * (`insertHeldReturn`, `heldReturnOp`: Workload.ts's table lists them), Simulation.ts gives the world step
 * (`SimulationService.leaveParked`, `leaveParked` here).
 *
 * Why: the broker withholds X's departure while X's parked output waits
 * (WithheldDepartures.ts's `held`); X registering again meanwhile releases it into the
 * feed with the new join, and each recipient of that output withholds the
 * pair, and X's new mail, until the output is out (`releaseEarly` with
 * `rejoined`, `owePair`, `Peer.returnWaits`; docs/architecture.md,
 * "Membership frames"). The simulated clients never got there: the real
 * client writes each send on its own and its `unregister` after them (the
 * parked send holds its reader back, so the `unregister` is read only once
 * the output is out), and its orderly close ends the connection, which forces
 * the parked output through at once. A probe counted no such return in about
 * 2,000 runs. This op builds the state on purpose; the ledger judges the run
 * as any other (no mail after its sender's `session_left`, `left-before-mail`,
 * with no tolerance; per-sender order; no loss), and `PathTally.returnsHeld`
 * (`BrokerStats.returnsHeld`) counts that the broker got there.
 *
 * The op, in order: B's broker-side writes take `delayMs` each (for long
 * enough to write everything of the op one at a time); X stops (its client
 * unregisters and closes, as always); a connection of X's own — what an X
 * process that does not close after `unregister` writes, dialled by the world
 * and known to the ledger as X's — writes X's `register`, `count` messages of
 * `size` characters to B and `unregister` in one write, so the messages that
 * do not fit B's outbox are parked on that connection and the `unregister` is
 * in their batch; it stays open (reading what it is sent, mail for X handed to
 * X's host as delivered — as a base client's, told no delivery mode:
 * `BaseClientIntent`) until the broker closes it (its registration
 * timeout) or `lingerMs` passed. `returnMs` later X starts again (a new
 * client, a new connection) and sends B `more` messages, and one to another
 * running session. B's slow writes end; the workload goes on (and `finish`
 * heals and settles).
 *
 * The old connection is the world's, not a client's, because no client
 * writes a send and its `unregister` in one write and keeps the connection
 * open; the return is the real client's. Sessions of a group other than
 * `default`, a supervisor, its delegated child and the ephemeral session are
 * never X (their registrations carry what a bare `register` does not:
 * `notSender`): the op picks the next running session that is none of those,
 * or is skipped.
 *
 * Drawn from a stream of its own (`Prng.derive(seed, "held-return")`) and
 * inserted into the ordinary workload, whose own draws are unchanged.
 */
import { Deferred, Effect, FiberSet, Schema } from "effect"
import { decodeBrokerFrameText, isFrameDecodeError } from "../../protocol/decode.ts"
import { newMessage } from "../../session/Sending.ts"
import { ownedBy } from "../FiberWatch.ts"
import { BaseClientIntent } from "../ledger/delivery.ts"
import { Prng } from "../Prng.ts"
import { nextRunning } from "./running.ts"
import type { Insert, InsertedOp } from "./inserted.ts"
import type { SimSession, SimulationService } from "./types.ts"
import { SIM_ADDRESS, type World } from "./world.ts"

/** The fields of a `HeldReturn` op (sessions by index; see the module header for the order of events). */
export const HeldReturnFields = {
  sender: Schema.Int,
  recipient: Schema.Int,
  count: Schema.Int,
  size: Schema.Int,
  delayMs: Schema.Int,
  returnMs: Schema.Int,
  lingerMs: Schema.Int,
  more: Schema.Int,
  notSender: Schema.Array(Schema.Int)
}

/** A drawn `HeldReturn`. */
export interface HeldReturnDraw {
  readonly _tag: "HeldReturn"
  readonly after: number
  readonly sender: number
  readonly recipient: number
  readonly count: number
  readonly size: number
  readonly delayMs: number
  readonly returnMs: number
  readonly lingerMs: number
  readonly more: number
  /** Sessions a bare `register` cannot stand for (a supervisor, its child, the ephemeral one): never the sender. */
  readonly notSender: ReadonlyArray<number>
}

/**
 * The `HeldReturn` op of `seed`'s workload, with the index among the
 * workload's `ops` other ops (0 to `ops`) it goes before; none in a world of
 * fewer than two sessions.
 */
export const drawHeldReturn = (
  seed: number,
  sessions: number,
  ops: number,
  notSender: ReadonlyArray<number> = []
): ReadonlyArray<readonly [number, HeldReturnDraw]> => {
  if (sessions < 2) return []
  const prng = Prng.derive(seed, "held-return")
  const sender = prng.int(0, sessions - 1)
  const other = prng.int(0, sessions - 2)
  return [[prng.int(0, ops), {
    _tag: "HeldReturn",
    after: prng.int(0, 2500),
    sender,
    recipient: other >= sender ? other + 1 : other,
    count: prng.int(3, 5),
    size: prng.int(2500, 3500),
    delayMs: prng.int(500, 2000),
    // Mostly while the output waits (B's first slow write, and the old connection's registration timeout,
    // 1 s, which forces it through); sometimes after, when nothing is held any more.
    returnMs: prng.chance(0.85) ? prng.int(0, 300) : prng.int(300, 1500),
    lingerMs: prng.int(200, 3000),
    more: prng.int(1, 3),
    notSender
  }]]
}

/** A `HeldReturn`, printed. */
export const formatHeldReturn = (op: HeldReturnDraw, name: (index: number) => string): string => {
  const x = name(op.sender)
  const b = name(op.recipient)
  return `${b}'s broker-side writes take ${op.delayMs} ms; ${x} stops, then on a connection of its own registers, sends ${b} ${op.count} messages of ${op.size} characters and unregisters in one write (the connection open for up to ${op.lingerMs} ms); ${op.returnMs} ms later ${x} starts again and sends ${b} ${op.more} more, and another session one`
}

/** The text of message `k` of the op number `counter` from `from` to `to`: a short head, then padding to `size`. */
export const heldReturnText = (counter: number, k: string, from: string, to: string, size: number): string => {
  const head = `held ${counter}.${k} ${from}→${to} `
  return head + "x".repeat(Math.max(0, size - head.length))
}

/** A connection of a session's own, registered as it (`SimulationService.ownConnection`). */
export interface OwnConnection {
  /** Writes `frames` in one write, from a step fiber of the world: it returns before the frames are handed over. */
  readonly write: (frames: ReadonlyArray<string>) => Effect.Effect<void>
  /** Closes it `ms` from now, unless the broker closed it first. */
  readonly closeAfter: (ms: number) => Effect.Effect<void>
}

/**
 * The world step behind `SimulationService.ownConnection`: a connection of
 * `session`'s own (its client stopped, or about to lose its connection and
 * take the session back: simulation/settleCustody.ts), known to the ledger as the
 * session's, registers as it (a bare `register`) and reads what it is sent
 * — mail for the session is handed to its host as delivered, as the process
 * it stands for would, with intent `BaseClientIntent.ownConnection` (a base
 * client is never told a message's mode) — until the broker closes it or
 * `closeAfter`. Returns
 * once the broker answered the registration (undefined if it did not: no
 * broker, or refused); the connection lives on in a step fiber of the world.
 */
export const ownConnection = (world: World, session: SimSession): Effect.Effect<OwnConnection | undefined> =>
  Effect.gen(function*() {
    const ready = yield* Deferred.make<OwnConnection | undefined>()
    const close = yield* Deferred.make<void>()
    const register = JSON.stringify({
      type: "register",
      sessionId: session.id,
      ...(session.scopeId === undefined ? {} : { scopeId: session.scopeId }),
      session: { name: session.name, cwd: `/sim/${session.name.toLowerCase()}`, model: "sim-model", pid: 2000, startedAt: 1, lastActivity: 1 }
    })
    // The connection's Scope is its fiber's: it outlives this step, until the broker closes it or `closeAfter`.
    const life = Effect.scoped(Effect.gen(function*() {
      const dialed = yield* Effect.result(world.network.dial(SIM_ADDRESS))
      if (dialed._tag === "Failure") return world.ledger.note(`${session.name}'s own connection: no broker to dial`)
      const conn = dialed.success
      world.links.get(conn.id)?.attach(session.id, `${session.name}/own${conn.id}`)
      world.ledger.note(`${session.name}'s own connection: link #${conn.id}`)
      const handle: OwnConnection = {
        // In a step fiber of the world: a write that waits for room (a small link, a reader held back)
        // must not hold up the script, which alone moves simulated time on.
        write: (frames) => Effect.asVoid(FiberSet.run(world.steps, Effect.ignore(conn.writeAll(frames)))),
        closeAfter: (ms) => Effect.asVoid(FiberSet.run(world.steps, Effect.andThen(Effect.sleep(ms), Deferred.succeed(close, undefined))))
      }
      const read = Effect.forever(Effect.flatMap(conn.read, (frames) =>
        Effect.gen(function*() {
          for (const text of frames) {
            const frame = decodeBrokerFrameText(text)
            if (isFrameDecodeError(frame)) continue
            if (frame.type === "registered") yield* Deferred.succeed(ready, handle)
            else if (frame.type === "registration_failed") yield* Deferred.succeed(ready, undefined)
            else if (frame.type === "message") world.ledger.hostDelivered(session.id, frame.from.id, frame.message, BaseClientIntent.ownConnection)
          }
        })))
      yield* conn.writeAll([register])
      yield* Effect.raceFirst(Effect.ignore(read), Deferred.await(close))
      yield* conn.destroy
      world.ledger.note(`${session.name}'s own connection closes`)
    })).pipe(Effect.ignore, Effect.ensuring(Deferred.succeed(ready, undefined)))
    yield* FiberSet.run(world.steps, life.pipe(ownedBy(`${session.name}/own`)))
    return yield* Deferred.await(ready)
  })

/**
 * Runs the op with the drawn sender and recipient, or the next running
 * sessions after them (the sender one a bare `register` can stand for).
 */
export const runHeldReturn = (sim: SimulationService, op: HeldReturnDraw, counter: number): Effect.Effect<void> =>
  Effect.gen(function*() {
    const sessions = sim.sessions
    const plain = (session: SimSession) => session.group === "default" && !op.notSender.includes(sessions.indexOf(session))
    const sender = yield* nextRunning(sessions, op.sender, plain)
    if (sender === undefined) return yield* sim.note("held return: skipped (no plain session running)")
    const recipient = yield* nextRunning(sessions, op.recipient, (session) => session !== sender && session.group === sender.group)
    if (recipient === undefined) return yield* sim.note("held return: skipped (no recipient running)")
    const third = yield* nextRunning(sessions, op.recipient + 1, (session) => session !== sender && session !== recipient && session.group === sender.group)
    const to = recipient.name
    yield* sender.stop
    const own = yield* sim.ownConnection(sender)
    if (own === undefined) return yield* sim.note("held return: skipped (its own connection did not register)")
    // B hears it join before its writes slow down; then what does not fit B's outbox waits.
    yield* sim.advance(20)
    // Long enough to write every message of the op one at a time.
    yield* recipient.delayWrites("broker", op.delayMs, op.delayMs * (op.count + op.more + 4))
    const frames: Array<string> = []
    for (let k = 1; k <= op.count; k++) {
      const message = yield* newMessage(heldReturnText(counter, `${k}`, sender.name, to, op.size), undefined, {})
      frames.push(JSON.stringify({ type: "send", to, message }))
    }
    yield* own.write([...frames, `{"type":"unregister"}`])
    yield* own.closeAfter(op.lingerMs)
    yield* sim.advance(op.returnMs)
    yield* sender.start
    for (let k = 1; k <= op.more; k++) yield* sender.send(to, heldReturnText(counter, `back${k}`, sender.name, to, op.size))
    if (third !== undefined) yield* sender.send(third.name, heldReturnText(counter, "back", sender.name, third.name, 64))
  })

/** Inserts `seed`'s `HeldReturn` op(s) into a workload's `ops` (`WorkloadOptions.heldReturn`; never sent by `notSender`): each spliced in before the op at its drawn index. */
export const insertHeldReturn: Insert<HeldReturnDraw> = (ops, { seed, sessions, notSender }) => {
  for (const [index, op] of drawHeldReturn(seed, sessions, ops.length, notSender)) ops.splice(index, 0, op)
}

/** The `HeldReturn` op as Workload.ts's table of inserted ops prints and runs it. */
export const heldReturnOp: InsertedOp<HeldReturnDraw> = { format: formatHeldReturn, run: runHeldReturn }
