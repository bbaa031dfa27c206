/**
 * What an attack is given: its seeded generator, its budget, the healthy
 * sessions' ids (to collide with), and helpers that open counted, measured
 * connections, write frames (counted against the budget), register, and
 * fork background work (slow drips) that the campaign waits for. Every frame
 * the broker writes to an attacker's connection is measured; one over 1 MiB
 * is a finding, named after the attack that provoked it.
 */
import { Duration, Effect, type Scope } from "effect"
import { MAX_FRAME_BYTES } from "../../protocol/constants.ts"
import type { Prng } from "../../testing/Prng.ts"
import type { Findings } from "../Findings.ts"
import type { HealthyView } from "../HealthyTraffic.ts"
import type { BrokerPromises } from "../promises.ts"
import { ANSWER_WAIT, frameOfType, openRaw, type RawConnection } from "../RawConnection.ts"
import type { Tally } from "../Tally.ts"

/** What an attack needs from the campaign. */
export interface AttackKit {
  /** The attack kind running (frames are counted under it). */
  readonly kind: string
  /** This run's own generator: its draws do not depend on other runs. */
  readonly prng: Prng
  /** Unique per run: used in session ids and names so runs never collide by accident. */
  readonly tag: string
  readonly socketPath: string
  /**
   * Full-size floods (million-character names, storms of hundreds of
   * connections, hundreds of asks, tens of megabytes for a session that does
   * not read), or light ones that take the same paths at a fraction of the
   * cost (the CI campaign, which must stay fast against today's broker).
   */
  readonly heavy: boolean
  readonly view: HealthyView
  readonly promises: BrokerPromises
  readonly findings: Findings
  readonly tally: Tally
  /** Frames this attacker may still send. */
  readonly framesLeft: () => number
  /**
   * Bytes this run may spend now: the attacker's byte budget is paced by its
   * frames (it may have spent the share of its bytes that its spent frames
   * earned, plus room for one frame of 1 MiB), so big frames come throughout
   * a campaign rather than all at its start.
   */
  readonly bytesLeft: () => number
  /** Bytes this attacker has not spent of its whole budget (for a rare attack that needs a lot at once). */
  readonly bytesUnspent: () => number
  /** Opens a counted, measured connection; undefined when the broker did not accept it. */
  readonly open: (label?: string) => Effect.Effect<RawConnection | undefined, never, Scope.Scope>
  /** Writes `bytes`, counted as `frames` frames. */
  readonly sendBytes: (conn: RawConnection, bytes: Uint8Array, frames?: number) => Effect.Effect<void>
  /** Writes frame texts (correctly framed), each counted. */
  readonly sendTexts: (conn: RawConnection, texts: ReadonlyArray<string>) => Effect.Effect<void>
  /** Writes objects as JSON frames, each counted. */
  readonly send: (conn: RawConnection, ...frames: ReadonlyArray<object>) => Effect.Effect<void>
  /** Counts frames that were not written through the helpers (a connection opened and left empty). */
  readonly count: (frames: number) => void
  /** Registers with `register` (merged into a valid frame); the session id, or undefined when refused. */
  readonly register: (conn: RawConnection, register?: RegisterParts) => Effect.Effect<string | undefined>
  /**
   * Runs `work` in the background, in its own Scope; the campaign waits for
   * it before its final checks. At most BACKGROUND_LIMIT run at once (a
   * campaign of slow drips only would otherwise hold thousands of sockets):
   * past it, the work is skipped.
   */
  readonly background: (work: Effect.Effect<void, never, Scope.Scope>) => Effect.Effect<void>
}

/** One attacker's budget: frames left, and bytes paced by them (see `AttackKit.bytesLeft`). */
export interface AttackerBudget {
  frames: number
  spentBytes: number
  readonly totalFrames: number
  readonly totalBytes: number
}

/** Bytes an attacker may spend ahead of its pace: one frame at the limit. */
const BYTE_SLACK = MAX_FRAME_BYTES + 4096

/** Parts of a `register` frame an attack chooses; the rest is filled in validly. */
export interface RegisterParts {
  readonly sessionId?: string
  readonly scopeId?: string
  readonly name?: string
  readonly session?: Readonly<Record<string, unknown>>
  readonly features?: ReadonlyArray<string>
}

/** A raw frame with its length prefix, from bytes. */
export const framed = (payload: Uint8Array): Buffer => {
  const header = Buffer.alloc(4)
  header.writeUInt32BE(payload.length, 0)
  return Buffer.concat([header, payload])
}

/** A valid `register` frame (as an object) with the attack's parts. */
export const registerFrame = (kit: Pick<AttackKit, "tag" | "view">, parts: RegisterParts = {}): Record<string, unknown> => ({
  type: "register",
  sessionId: parts.sessionId ?? kit.tag,
  scopeId: parts.scopeId ?? kit.view.scopeId,
  session: {
    cwd: "/tmp/fuzz-attacker",
    model: "fuzz-attacker",
    pid: 2,
    startedAt: 1,
    lastActivity: 1,
    name: parts.name ?? `attacker-${kit.tag}`,
    ...parts.session
  },
  ...(parts.features === undefined ? {} : { features: parts.features })
})

/** Builds the kit for one run of one attack. */
export const makeKit = (
  options:
    & Pick<AttackKit, "kind" | "prng" | "tag" | "socketPath" | "heavy" | "view" | "promises" | "findings" | "tally" | "background">
    & { readonly budget: AttackerBudget }
): AttackKit => {
  const { budget, findings, kind, tally } = options
  let connections = 0
  const spend = (frames: number, bytes: number) => {
    budget.frames -= frames
    budget.spentBytes += bytes
    tally.sent(kind, frames, bytes)
  }
  const sendBytes = (conn: RawConnection, bytes: Uint8Array, frames = 1) =>
    Effect.suspend(() => {
      spend(frames, bytes.length)
      return conn.isClosed() ? Effect.void : conn.write(bytes)
    })
  const sendTexts = (conn: RawConnection, texts: ReadonlyArray<string>) =>
    Effect.suspend(() => {
      const buffers = texts.map((text) => framed(Buffer.from(text, "utf8")))
      return sendBytes(conn, Buffer.concat(buffers), texts.length)
    })
  const kit: AttackKit = {
    ...options,
    framesLeft: () => budget.frames,
    bytesLeft: () => {
      const done = budget.totalFrames === 0 ? 1 : 1 - Math.max(0, budget.frames) / budget.totalFrames
      return Math.floor(budget.totalBytes * done + BYTE_SLACK - budget.spentBytes)
    },
    bytesUnspent: () => budget.totalBytes + BYTE_SLACK - budget.spentBytes,
    open: (label = "c") =>
      Effect.gen(function*() {
        tally.connections++
        const where = `${kind} ${options.tag}/${label}${++connections}`
        const opened = yield* Effect.result(openRaw(options.socketPath, where, (frame) => {
          tally.frameWritten(frame.bytes, where)
          findings.check(frame.bytes <= MAX_FRAME_BYTES, "frame-too-large", () => `${frame.bytes}-byte frame to ${where}`)
        }))
        if (opened._tag === "Success") return opened.success
        tally.dialFailures++
        return undefined
      }),
    sendBytes,
    sendTexts,
    send: (conn, ...frames) => sendTexts(conn, frames.map((frame) => JSON.stringify(frame))),
    count: (frames) => spend(frames, 0),
    register: (conn, parts = {}) =>
      Effect.gen(function*() {
        const frame = registerFrame(kit, parts)
        yield* kit.send(conn, frame)
        const registered = yield* Effect.result(conn.next("registered", frameOfType("registered"), ANSWER_WAIT))
        if (registered._tag === "Failure") return undefined
        const id = registered.success.sessionId
        return typeof id === "string" ? id : undefined
      })
  }
  return kit
}

/** Waits (at most `timeout`) for the broker to close `conn`; whether it did. */
export const closedWithin = (conn: RawConnection, timeout: Duration.Input): Effect.Effect<boolean> =>
  conn.closed.pipe(
    Effect.timeoutOption(timeout),
    Effect.map((done) => done._tag === "Some")
  )

/** A round trip on `conn` (a `health`): once answered, the broker has handled everything sent before it. */
export const roundTrip = (kit: AttackKit, conn: RawConnection): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    const requestId = `${kit.tag}-rt-${kit.prng.int(0, 1e9)}`
    yield* kit.send(conn, { type: "health", requestId })
    const answer = yield* Effect.result(
      conn.next("health_ok", frameOfType("health_ok", (frame) => frame.requestId === requestId), ANSWER_WAIT)
    )
    return answer._tag === "Success"
  })

/** Half a second: how long an attack waits for a broker answer it does not depend on. */
export const SHORT_WAIT = Duration.millis(500)
