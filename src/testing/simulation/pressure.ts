/**
 * Pressure in generated workloads: two operations that drive the broker's
 * connection path into the branches ordinary traffic never reaches
 * (docs/testing.md, "Pressure"), how they are drawn, printed and run, and the
 * broker limits of the world they run in (`insertPressure`, `stormOp`,
 * `floodOp`: Workload.ts's table lists them).
 *
 * - `Storm`: a registration storm. Processes that are still starting connect
 *   all at once and do not register yet (each probes `health` and leaves after
 *   a while, unless the broker's registration timeout closes it first), while
 *   some sessions' connections drop, so that their reconnections arrive in
 *   the storm. Against the world's small `maxUnregistered`, connections wait
 *   for admission (AdmissionGate: `Waiting` answers their `health`, holds the
 *   rest, reading paused).
 * - `Flood`: a sender writes a burst of long messages to a recipient whose
 *   broker-side writes are slow. The recipient's outbox passes its (small)
 *   character budget, the sender's output is parked, its further frames are
 *   held, and past the world's small `heldLimit` its reader stops reading;
 *   the read pump then holds the batch it took until the reader resumes
 *   (PeerReader.ts, ReadPump.ts).
 *
 * Both are drawn from a stream of their own (`Prng.derive(seed, "pressure")`)
 * and inserted into the ordinary workload, whose own draws are unchanged.
 */
import { Effect, FiberSet, Schema } from "effect"
import type { BrokerCoreOptions } from "../../broker/options.ts"
import { ownedBy } from "../FiberWatch.ts"
import { Prng } from "../Prng.ts"
import type { Insert, InsertedOp } from "./inserted.ts"
import { nextRunning } from "./running.ts"
import { SIM_ADDRESS, type World } from "./world.ts"

/** The fields of a `Storm` op: connections that do not register, how long each stays, sessions whose connection drops. */
export const StormFields = {
  connections: Schema.Int,
  holdMs: Schema.Int,
  drops: Schema.Array(Schema.Int)
}

/** The fields of a `Flood` op: sender and recipient by index, messages, their length, the recipient's slow writes. */
export const FloodFields = {
  from: Schema.Int,
  to: Schema.Int,
  count: Schema.Int,
  size: Schema.Int,
  delayMs: Schema.Int
}

/** A drawn `Storm`. */
export interface StormDraw {
  readonly _tag: "Storm"
  readonly after: number
  readonly connections: number
  readonly holdMs: number
  readonly drops: ReadonlyArray<number>
}

/** A drawn `Flood`. */
export interface FloodDraw {
  readonly _tag: "Flood"
  readonly after: number
  readonly from: number
  readonly to: number
  readonly count: number
  readonly size: number
  readonly delayMs: number
}

/** The chance that a seed's workload has a `Storm`. */
export const STORM_CHANCE = 0.4

/** The chance that a seed's workload has a `Flood`. */
export const FLOOD_CHANCE = 0.4

/**
 * The pressure ops of `seed`'s workload (none, one or both), each with the
 * index among the ordinary ops (0 to `ops`) it goes before, in order.
 */
export const drawPressure = (
  seed: number,
  sessions: number,
  ops: number
): ReadonlyArray<readonly [number, StormDraw | FloodDraw]> => {
  const prng = Prng.derive(seed, "pressure")
  const drawn: Array<readonly [number, StormDraw | FloodDraw]> = []
  if (prng.chance(STORM_CHANCE)) {
    // One or two sessions whose reconnection meets the storm (or none).
    const drops: Array<number> = []
    for (let n = prng.int(0, Math.min(2, sessions)); n > 0; n--) {
      const index = prng.int(0, sessions - 1)
      if (!drops.includes(index)) drops.push(index)
    }
    drawn.push([prng.int(0, ops), {
      _tag: "Storm",
      after: prng.int(0, 2500),
      connections: prng.int(2, 6),
      holdMs: prng.int(200, 3000),
      drops
    }])
  }
  if (prng.chance(FLOOD_CHANCE) && sessions >= 2) {
    const from = prng.int(0, sessions - 1)
    const other = prng.int(0, sessions - 2)
    drawn.push([prng.int(0, ops), {
      _tag: "Flood",
      after: prng.int(0, 2500),
      from,
      to: other >= from ? other + 1 : other,
      count: prng.int(4, 10),
      size: prng.int(4000, 8000),
      delayMs: prng.int(100, 800)
    }])
  }
  return drawn.sort((a, b) => a[0] - b[0])
}

/**
 * The broker limits of a world with pressure (drawn from the seed): few
 * connections may be unregistered at once, small outboxes in characters, and
 * a small held limit, so that a `Storm` or a `Flood` of a few kilobytes
 * reaches what production reaches with 32 launches or megabytes.
 */
export const pressureBroker = (seed: number): BrokerCoreOptions => {
  const prng = Prng.derive(seed, "pressure-world")
  return {
    maxUnregistered: prng.pick([1, 2]),
    outboxChars: prng.pick([4096, 8192]),
    heldLimit: prng.pick([2048, 4096])
  }
}

/** A `Storm`, printed. */
export const formatStorm = (op: StormDraw, name: (index: number) => string): string =>
  `${op.connections} connections that do not register arrive (each leaves after ${op.holdMs} ms)${
    op.drops.length === 0 ? "" : `; ${op.drops.map(name).join(" and ")} ${op.drops.length === 1 ? "drops" : "drop"} on the client side`
  }`

/** A `Flood`, printed. */
export const formatFlood = (op: FloodDraw, from: string, to: string): string =>
  `${to}'s broker-side writes take ${op.delayMs} ms; ${from} sends ${to} ${op.count} messages of ${op.size} characters`

/** The text of flood message `k` of op number `counter`: a short head, then padding to `size`. */
export const floodText = (counter: number, k: number, from: string, to: string, size: number): string => {
  const head = `flood ${counter}.${k} ${from}→${to} `
  return head + "x".repeat(Math.max(0, size - head.length))
}

/**
 * Connections that do not register: each dials, probes `health`, reads what
 * it is sent, and closes after `holdMs` (or when the broker closes it). They
 * are not sessions: the ledger never sees their links (never `attach`ed).
 */
export const storm = (world: World, connections: number, holdMs: number): Effect.Effect<void> =>
  Effect.gen(function*() {
    world.ledger.note(`${connections} connections that do not register arrive`)
    for (let i = 1; i <= connections; i++) {
      const one = Effect.scoped(Effect.gen(function*() {
        const dialed = yield* Effect.result(world.network.dial(SIM_ADDRESS))
        if (dialed._tag === "Failure") return
        const conn = dialed.success
        const readAll = Effect.ignore(Effect.forever(conn.read))
        yield* Effect.ignore(conn.writeAll([`{"type":"health","requestId":"storm-${i}"}`]))
        yield* Effect.raceFirst(readAll, Effect.sleep(holdMs))
        yield* conn.destroy
      }))
      yield* FiberSet.run(world.steps, one.pipe(ownedBy("storm")))
    }
  })

/**
 * Inserts `seed`'s pressure ops into a workload's `ops` (`WorkloadOptions.pressure`): inserted from the last,
 * so each drawn index still names its place among the ordinary ops.
 */
export const insertPressure: Insert<StormDraw | FloodDraw> = (ops, { seed, sessions }) => {
  const drawn = drawPressure(seed, sessions, ops.length)
  for (let i = drawn.length - 1; i >= 0; i--) {
    const [index, pressure] = drawn[i]!
    ops.splice(index, 0, pressure)
  }
}

/** The `Storm` op as Workload.ts's table of inserted ops prints and runs it. */
export const stormOp: InsertedOp<StormDraw> = {
  format: formatStorm,
  run: (sim, op) =>
    Effect.gen(function*() {
      yield* sim.storm(op.connections, op.holdMs)
      for (const index of op.drops) yield* sim.sessions[index]?.drop("client") ?? Effect.void
    })
}

/** The `Flood` op as Workload.ts's table of inserted ops prints and runs it. */
export const floodOp: InsertedOp<FloodDraw> = {
  format: (op, name) => formatFlood(op, name(op.from), name(op.to)),
  run: (sim, op, counter) =>
    Effect.gen(function*() {
      const sessions = sim.sessions
      // The drawn sender and recipient, or the next running sessions after them (a flood between
      // sessions that are stopped would reach nothing).
      const from = yield* nextRunning(sessions, op.from, () => true)
      const to = from === undefined ? undefined : yield* nextRunning(sessions, op.to, (session) => session !== from)
      if (from === undefined || to === undefined) {
        yield* sim.note("flood: skipped (fewer than two sessions running)")
        return
      }
      yield* to.delayWrites("broker", op.delayMs, op.delayMs * (op.count + 4))
      for (let k = 1; k <= op.count; k++) yield* from.send(to.name, floodText(counter, k, from.name, to.name, op.size))
    })
}
