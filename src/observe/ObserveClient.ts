/**
 * `ObserveClient`: reads the broker's live view (`observe-v1`) on a
 * connection of its own, registered as an observer — not a session, so it
 * never appears in `list`, gets no mail and starts no broker (a view of a
 * broker that is not running is an error, not a reason to spawn one).
 *
 * - `snapshot(options)`: one `BrokerSnapshot`, then the connection closes.
 * - `watch(options)`: the snapshot, then an `ObserveEvent` for each change
 *   the broker sends every `intervalMs`, until the stream is interrupted
 *   (its Scope closes the connection) or the broker goes away (the stream
 *   fails with `ObserveError`).
 *
 * Both are what `intercom top` and `intercom ui` are built on.
 */
import { Clock, Data, Duration, Effect, Schema, Stream } from "effect"
import type { Scope } from "effect"
import * as os from "node:os"
import { randomUUID } from "node:crypto"
import { resolveAgentDir, resolveIntercomPaths } from "../config/agentDir.ts"
import { processSocketPlacement } from "../config/runtimeDir.ts"
import { SocketPathError } from "../config/socketPath.ts"
import { type Dialer, dialUnixSocket } from "../client/Dialer.ts"
import { OBSERVE_V1 } from "../protocol/features.ts"
import {
  type BrokerSnapshot,
  ObserveBrokerFrame,
  type ObserveEvent
} from "../protocol/observe.ts"
import type { Connection } from "../transport/Connection.ts"
import { causeText } from "../protocol/causeText.ts"

/** Where to find the broker, and how long to wait for its answers. */
export interface ObserveOptions {
  /** The broker socket; default: the one of `dir`'s agent dir. */
  readonly socketPath?: string | undefined
  /** The agent dir (default: $ATOMIC_CODING_AGENT_DIR, else $PI_CODING_AGENT_DIR, else ~/.pi/agent). */
  readonly dir?: string | undefined
  /** How to open the connection (default: the Unix socket; `dialInMemory` in tests). */
  readonly dial?: Dialer | undefined
  /** How long to wait for the broker's answer to the registration and to `observe` (default 5 s). */
  readonly timeout?: Duration.Input | undefined
}

/** `ObserveOptions` and how often the broker sends what changed. */
export interface WatchOptions extends ObserveOptions {
  /** Milliseconds between two updates, 100 to 60,000 (default 1,000). */
  readonly intervalMs?: number | undefined
}

/** Why the view could not be read; `message` says what to do. */
export class ObserveError extends Data.TaggedError("ObserveError")<{
  /**
   * `NotRunning`: nothing answers on the socket. `Unsupported`: the broker
   * does not offer `observe-v1` (an older broker). `Refused`: it refused the
   * observer (too many). `Closed`: the broker went away. `Timeout`: no
   * answer in time. `Protocol`: an answer this client does not understand.
   * `BadOptions`: the options are wrong.
   */
  readonly reason: "NotRunning" | "Unsupported" | "Refused" | "Closed" | "Timeout" | "Protocol" | "BadOptions"
  readonly socketPath: string
  readonly detail: string
}> {
  override get message(): string {
    switch (this.reason) {
      case "NotRunning":
        return `No intercom broker answers on ${this.socketPath} (${this.detail}). Start one with \`intercom broker\`, or pass the --dir of the agent dir it serves.`
      case "Unsupported":
        return `The intercom broker on ${this.socketPath} does not offer its live view (observe-v1): it is older than this intercom. Restart it with this version (\`intercom broker stop\`, then \`intercom broker\`).`
      case "Refused":
        return `The intercom broker on ${this.socketPath} refused the observer: ${causeText(this.detail)}`
      case "Closed":
        return `The intercom broker on ${this.socketPath} closed the connection (${this.detail}); it may have stopped.`
      case "Timeout":
        return `The intercom broker on ${this.socketPath} did not answer within ${this.detail}.`
      case "Protocol":
        return `Unexpected answer from the intercom broker on ${this.socketPath}: ${causeText(this.detail)}`
      case "BadOptions":
        return this.detail
    }
  }
}

/** The socket of `options`, or the default one of the agent dir. */
const socketPathOf = (options: ObserveOptions): Effect.Effect<string, ObserveError> =>
  options.socketPath !== undefined ? Effect.succeed(options.socketPath) : Effect.gen(function*() {
    const env = process.env
    const agentDir = resolveAgentDir({ dir: options.dir, env, cwd: process.cwd(), homeDir: os.homedir() }).agentDir
    const paths = resolveIntercomPaths(agentDir, yield* processSocketPlacement(env))
    if (paths instanceof SocketPathError) {
      return yield* new ObserveError({ reason: "BadOptions", socketPath: "", detail: paths.message })
    }
    return paths.socketPath
  })

const decodeFrame = Schema.decodeUnknownExit(ObserveBrokerFrame)

/** An observer connection: the frames read and not yet used, and the socket path for errors. */
interface Observer {
  readonly connection: Connection
  readonly socketPath: string
  readonly pending: Array<string>
}

/** The next frame text from the broker. */
const nextText = (observer: Observer): Effect.Effect<string, ObserveError> =>
  Effect.suspend(() => {
    const text = observer.pending.shift()
    if (text !== undefined) return Effect.succeed(text)
    return observer.connection.read.pipe(
      Effect.mapError((error) =>
        new ObserveError({ reason: "Closed", socketPath: observer.socketPath, detail: error.message })
      ),
      Effect.flatMap((frames) => {
        observer.pending.push(...frames)
        return nextText(observer)
      })
    )
  })

const parse = (text: string): { readonly type?: unknown } & Record<string, unknown> => {
  try {
    const value: unknown = JSON.parse(text)
    return typeof value === "object" && value !== null ? { ...value } : {}
  } catch {
    return {}
  }
}

const protocolError = (observer: Observer, detail: string) =>
  new ObserveError({ reason: "Protocol", socketPath: observer.socketPath, detail })

/** Dials and registers as an observer; the connection lives in the current Scope. */
const open = (options: ObserveOptions): Effect.Effect<Observer, ObserveError, Scope.Scope> =>
  Effect.gen(function*() {
    const socketPath = yield* socketPathOf(options)
    const connection = yield* (options.dial ?? dialUnixSocket)(socketPath).pipe(
      Effect.mapError((error) => new ObserveError({ reason: "NotRunning", socketPath, detail: error.reason }))
    )
    const observer: Observer = { connection, socketPath, pending: [] }
    const now = yield* Clock.currentTimeMillis
    yield* connection.writeAll([JSON.stringify({
      type: "register",
      session: { cwd: process.cwd(), model: "observer", pid: process.pid, startedAt: now, lastActivity: now },
      features: [OBSERVE_V1],
      observer: true
    })]).pipe(Effect.mapError((error) => new ObserveError({ reason: "Closed", socketPath, detail: error.message })))
    const answer = parse(yield* nextText(observer))
    if (answer.type === "registration_failed" || answer.type === "error") {
      const detail = typeof answer.reason === "string" ? answer.reason : typeof answer.error === "string" ? answer.error : "no reason given"
      return yield* new ObserveError({ reason: "Refused", socketPath, detail })
    }
    if (answer.type !== "registered") return yield* protocolError(observer, `expected "registered", got ${String(answer.type)}`)
    const features = Array.isArray(answer.features) ? answer.features : []
    if (!features.includes(OBSERVE_V1)) {
      return yield* new ObserveError({ reason: "Unsupported", socketPath, detail: "observe-v1 not granted" })
    }
    return observer
  })

/** Reads frames until the next one of `observe-v1` for `requestId`. */
const nextObserveFrame = (observer: Observer, requestId: string): Effect.Effect<ObserveBrokerFrame, ObserveError> =>
  Effect.flatMap(nextText(observer), (text) => {
    const parsed = parse(text)
    if (parsed.type !== "observe_snapshot" && parsed.type !== "observe_events") return nextObserveFrame(observer, requestId)
    const decoded = decodeFrame(parsed)
    if (decoded._tag === "Failure") return Effect.fail(protocolError(observer, `a malformed "${String(parsed.type)}" frame`))
    if (decoded.value.requestId !== requestId) return nextObserveFrame(observer, requestId)
    return Effect.succeed(decoded.value)
  })

const timeoutOf = (options: ObserveOptions): Duration.Input => options.timeout ?? Duration.seconds(5)

/** Registers, sends `observe`, and waits for the snapshot. */
const start = (
  options: ObserveOptions,
  watch: { readonly intervalMs: number } | undefined
): Effect.Effect<{ readonly observer: Observer; readonly requestId: string; readonly snapshot: BrokerSnapshot }, ObserveError, Scope.Scope> =>
  Effect.gen(function*() {
    const observer = yield* open(options)
    const requestId = randomUUID()
    yield* observer.connection.writeAll([JSON.stringify({
      type: "observe",
      requestId,
      ...(watch === undefined ? {} : { watch: true, intervalMs: watch.intervalMs })
    })]).pipe(Effect.mapError((error) => new ObserveError({ reason: "Closed", socketPath: observer.socketPath, detail: error.message })))
    const frame = yield* nextObserveFrame(observer, requestId)
    if (frame.type !== "observe_snapshot") return yield* protocolError(observer, `expected "observe_snapshot", got "${frame.type}"`)
    return { observer, requestId, snapshot: frame.snapshot }
  }).pipe(
    Effect.timeoutOrElse({
      duration: timeoutOf(options),
      orElse: () =>
        Effect.flatMap(socketPathOf(options), (socketPath) =>
          Effect.fail(new ObserveError({ reason: "Timeout", socketPath, detail: Duration.format(Duration.fromInputUnsafe(timeoutOf(options))) })))
    })
  )

const checkInterval = (intervalMs: number | undefined): Effect.Effect<number, ObserveError> => {
  const interval = intervalMs ?? 1_000
  return Number.isInteger(interval) && interval >= 100 && interval <= 60_000
    ? Effect.succeed(interval)
    : Effect.fail(new ObserveError({
      reason: "BadOptions",
      socketPath: "",
      detail: `intervalMs must be a whole number of milliseconds from 100 to 60000, got ${interval}`
    }))
}

/** Reading the broker's live view (`observe-v1`); see the module header. */
export const ObserveClient = {
  /**
   * One snapshot of the broker's live view.
   *
   * @example
   * ```ts
   * import { Effect } from "effect"
   * import { ObserveClient } from "effect-intercom/observe"
   *
   * const program = Effect.gen(function*() {
   *   const snapshot = yield* ObserveClient.snapshot({})
   *   console.log(`${snapshot.sessionCount} sessions, ${snapshot.askCount} open asks`)
   * })
   * ```
   */
  snapshot: (options: ObserveOptions): Effect.Effect<BrokerSnapshot, ObserveError> =>
    Effect.scoped(Effect.map(start(options, undefined), (started) => started.snapshot)),

  /**
   * The snapshot, then what changes, every `intervalMs` (fold them with
   * `applyEvent`). Interrupting the stream closes the connection.
   *
   * @example
   * ```ts
   * import { Effect, Stream } from "effect"
   * import { ObserveClient } from "effect-intercom/observe"
   *
   * const program = ObserveClient.watch({ intervalMs: 500 }).pipe(
   *   Stream.take(3),
   *   Stream.runForEach((element) => Effect.log("type" in element ? element.type : "snapshot"))
   * )
   * ```
   */
  watch: (options: WatchOptions): Stream.Stream<BrokerSnapshot | ObserveEvent, ObserveError> =>
    Stream.unwrap(Effect.gen(function*() {
      const intervalMs = yield* checkInterval(options.intervalMs)
      const { observer, requestId, snapshot } = yield* start(options, { intervalMs })
      const events = Stream.fromIterableEffectRepeat(
        Effect.flatMap(nextObserveFrame(observer, requestId), (frame) =>
          frame.type === "observe_events"
            ? Effect.succeed<ReadonlyArray<BrokerSnapshot | ObserveEvent>>(frame.events)
            : Effect.succeed([frame.snapshot]))
      )
      return Stream.concat(Stream.make<Array<BrokerSnapshot | ObserveEvent>>(snapshot), events)
    }))
}
