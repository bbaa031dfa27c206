/**
 * Hostile sessions in the simulated world: what a buggy or hostile local
 * process does to the others, mixed into a workload at a low rate. Each is
 * a raw connection to the broker — no `IntercomClient`, no session runtime —
 * registered in the first healthy session's scope, that reconnects when it
 * is dropped and reads everything it is sent. Its attacks:
 *
 * - `collide-ask`, `collide-send`: an ask to the other hostile session, or
 *   a send to it or to a healthy session, under the id of a healthy
 *   session's open question or recent message (ids collide by accident
 *   between careless clients; here on purpose): it must not take the
 *   healthy ask's edge, and a healthy receiver must take both messages;
 * - `forged-reply`: a reply to a healthy session's open question it never got;
 * - `foreign-control`: a cancel, an ask cancel or a receipt for a healthy
 *   session's message;
 * - `oversized-presence`: presence fields that add up past 1 MiB;
 * - `oversized-register`: a registration whose cwd grows past 1 MiB on its
 *   way out (lone surrogates: three bytes in, six out);
 * - `big-echo`: a `health` whose request id comes back past 1 MiB.
 *
 * Its own messages are not tracked by the ledger (they reuse healthy ids on
 * purpose); everything it does to the healthy sessions is checked as ever.
 * The end of a run stops the hostile sessions before the final checks.
 */
import { Effect, Schema } from "effect"
import { decodeBrokerFrameText, isFrameDecodeError } from "../../protocol/decode.ts"
import type { Connection } from "../../transport/Connection.ts"
import { ownedBy } from "../FiberWatch.ts"
import { BaseClientIntent } from "../ledger/delivery.ts"
import type { SessionMeta } from "../ledger/types.ts"
import { Prng } from "../Prng.ts"
import { step, worldStep } from "./steps.ts"
import { SIM_ADDRESS, type World } from "./world.ts"

/** The hostile attacks (see the module header). */
export const HostileAttack = Schema.Literals([
  "collide-ask",
  "collide-send",
  "forged-reply",
  "foreign-control",
  "oversized-presence",
  "oversized-register",
  "big-echo"
])
/** One hostile attack. */
export type HostileAttack = typeof HostileAttack.Type

/** The hostile attacks, in order. */
export const HOSTILE_ATTACKS: ReadonlyArray<HostileAttack> = HostileAttack.literals

/** One hostile session of the world. */
export interface HostileState {
  readonly meta: SessionMeta
  readonly index: number
  conn: Connection | undefined
  connections: number
  stopped: boolean
}

/** A handle on one hostile session. */
export interface SimHostile {
  readonly name: string
  readonly id: string
  /** Runs one attack as a step of the world (skipped while it is not connected). */
  readonly attack: (attack: HostileAttack) => Effect.Effect<void>
}

/** The world's hostile sessions (`count` of them), known to the ledger, not yet started. */
export const makeHostileStates = (world: World, count: number, scopeId: string | undefined): ReadonlyArray<HostileState> =>
  Array.from({ length: count }, (_, index) => {
    const name = `X${index + 1}`
    const meta: SessionMeta = { id: `sim-h${index + 1}-${name.toLowerCase()}`, name, scopeId, hostile: true }
    world.ledger.addSession(meta)
    return { meta, index, conn: undefined, connections: 0, stopped: false }
  })

/** Lone surrogates: valid in a JS string and in `JSON.parse`, 3 bytes in UTF-8, 6 once `JSON.stringify` escapes them. */
const surrogates = (count: number): string => "\ud800".repeat(count)

/** Its `register` frame, with `cwdText` as raw JSON string content (default a plain cwd). */
const registerText = (state: HostileState, cwdText = "/sim/hostile"): string =>
  `{"type":"register","sessionId":${JSON.stringify(state.meta.id)},${
    state.meta.scopeId === undefined ? "" : `"scopeId":${JSON.stringify(state.meta.scopeId)},`
  }"session":{"cwd":"${cwdText}","model":"hostile","pid":66,"startedAt":1,"lastActivity":1,"name":${JSON.stringify(state.meta.name)}}}`

/** One connection's life: dial, register, read (handing its own mail to the ledger, as a base client's: `BaseClientIntent`) until it ends. */
const connectOnce = (world: World, state: HostileState): Effect.Effect<void> =>
  Effect.scoped(Effect.gen(function*() {
    const dialed = yield* Effect.result(world.network.dial(SIM_ADDRESS))
    if (dialed._tag === "Failure") return
    const conn = dialed.success
    world.links.get(conn.id)?.attach(state.meta.id, `${state.meta.name}/raw${++state.connections}`)
    state.conn = conn
    yield* conn.writeAll([registerText(state)])
    while (true) {
      const frames = yield* conn.read
      for (const text of frames) {
        const frame = decodeBrokerFrameText(text)
        if (!isFrameDecodeError(frame) && frame.type === "message") {
          world.ledger.hostDelivered(state.meta.id, frame.from.id, frame.message, BaseClientIntent.hostile)
        }
      }
    }
  }).pipe(
    Effect.catch(() => Effect.void),
    Effect.ensuring(Effect.sync(() => {
      state.conn = undefined
    }))
  ))

/** Starts a hostile session: it connects, and reconnects 500 ms after every drop, until stopped. */
export const startHostile = (world: World, state: HostileState): Effect.Effect<void> =>
  Effect.asVoid(step(
    world,
    Effect.gen(function*() {
      while (!state.stopped && !world.state.finished) {
        yield* connectOnce(world, state)
        if (!state.stopped) yield* Effect.sleep("500 millis")
      }
    }),
    world.steps,
    `hostile-${state.meta.name}`
  ))

/** Stops a hostile session: it unregisters and closes, and does not come back. */
export const stopHostile = (world: World, state: HostileState): Effect.Effect<void> =>
  worldStep(
    world,
    `hostile ${state.meta.name} stops`,
    Effect.suspend(() => {
      state.stopped = true
      const conn = state.conn
      return conn === undefined ? Effect.void : Effect.andThen(Effect.ignore(conn.writeAll([`{"type":"unregister"}`])), conn.destroy)
    })
  )

const message = (id: string, text: string, extra: string = "") =>
  `{"id":${JSON.stringify(id)},"timestamp":1,"content":{"text":${JSON.stringify(text)}}${extra}}`

/** The frames of one attack, drawn from `prng` and what the ledger knows now. */
const attackFrames = (
  world: World,
  state: HostileState,
  all: ReadonlyArray<HostileState>,
  attack: HostileAttack,
  prng: Prng
): ReadonlyArray<string> => {
  const { ledger } = world
  const recent = ledger.recentMessageIds(16)
  const open = ledger.openQuestions()
  const anyId = () => recent.length > 0 ? prng.pick(recent) : `none-${prng.int(1, 99)}`
  const others = all.filter((other) => other !== state)
  const twin = others.length > 0 ? prng.pick(others).meta.id : state.meta.id
  switch (attack) {
    case "collide-ask": {
      const id = open.length > 0 ? prng.pick(open).questionId : anyId()
      return [`{"type":"send","to":${JSON.stringify(twin)},"message":${message(id, "colliding ask", `,"expectsReply":true`)}}`]
    }
    case "collide-send": {
      // To the other hostile session (a receipt route taken), or to a healthy one (two messages, one id).
      const healthy = ledger.healthySessions().filter((meta) => meta.scopeId === state.meta.scopeId)
      const to = healthy.length > 0 && prng.chance(0.3) ? prng.pick(healthy).id : twin
      return [`{"type":"send","to":${JSON.stringify(to)},"message":${message(anyId(), "colliding send")}}`]
    }
    case "forged-reply": {
      if (open.length === 0) return []
      const ask = prng.pick(open)
      return [`{"type":"send","to":${JSON.stringify(ask.asker)},"message":${
        message(`${state.meta.id}-r${prng.int(1, 1e6)}`, "forged answer", `,"replyTo":${JSON.stringify(ask.questionId)}`)
      }}`]
    }
    case "foreign-control": {
      const id = open.length > 0 && prng.chance(0.5) ? prng.pick(open).questionId : anyId()
      return [
        prng.pick([
          `{"type":"cancel_message","messageId":${JSON.stringify(id)}}`,
          `{"type":"cancel_ask","messageId":${JSON.stringify(id)}}`,
          `{"type":"message_receipt","receipt":{"messageId":${JSON.stringify(id)},"status":"acknowledged","timestamp":1}}`
        ])
      ]
    }
    case "oversized-presence":
      return [
        `{"type":"presence","name":"${"n".repeat(530_000)}"}`,
        `{"type":"presence","status":"${"s".repeat(530_000)}"}`
      ]
    case "oversized-register":
      return [`{"type":"unregister"}`, registerText(state, surrogates(340_000))]
    case "big-echo":
      return [`{"type":"health","requestId":"${surrogates(340_000)}"}`]
  }
}

/** The handle on hostile session `state` (of `all`). */
export const hostileHandle = (world: World, state: HostileState, all: ReadonlyArray<HostileState>): SimHostile => ({
  name: state.meta.name,
  id: state.meta.id,
  attack: (attack) =>
    worldStep(
      world,
      undefined,
      Effect.suspend(() => {
        const conn = state.conn
        if (conn === undefined) {
          world.ledger.note(`hostile ${state.meta.name} ${attack}: skipped (not connected)`)
          return Effect.void
        }
        const prng = Prng.derive(world.seed, `hostile-${state.meta.name}-${world.now()}`)
        const frames = attackFrames(world, state, all, attack, prng)
        world.ledger.note(`hostile ${state.meta.name} ${attack} (${frames.length} frame(s))`)
        return Effect.ignore(conn.writeAll(frames))
      })
    ).pipe(ownedBy(`hostile-${state.meta.name}`))
})
