/**
 * A wire-level test client: frames in, frames out, strictly checked. Over a
 * real Unix socket (raw `node:net`, so it can also send garbage) or over a
 * connection of the in-memory network (test/support/memory.ts), with the same
 * interface. Every frame the broker sends is decoded strictly with the
 * broker-frame Schema: a frame a real pi-intercom client would reject (P04) is
 * recorded as a protocol violation and makes every later `next` fail.
 *
 * Negative checks (`expectNothing`) look at what has arrived *now*; they are
 * exact only after a barrier (`roundTrip`, `settled` in ./barrier.ts): never
 * after a sleep.
 *
 * A client connected with `keep` skips, unread, the frames whose text starts
 * with another type: the 500-connection burst (handshake.test.ts) spent about
 * 40 % of its CPU decoding 124,750 membership frames it never looks at.
 */
import { Data, Duration, Effect, Exit, Fiber, Latch, Queue, type Scope } from "effect"
import { randomUUID } from "node:crypto"
import {
  type BrokerFrame,
  decodeBrokerFrameText,
  encodeFrame,
  FrameDecoder,
  isFrameDecodeError,
  MAX_FRAME_BYTES
} from "../../src/protocol/index.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { connectUnixSocket } from "../../src/transport/UnixSocket.ts"

export type FrameType = BrokerFrame["type"]
export type FrameOf<T extends FrameType> = Extract<BrokerFrame, { readonly type: T }>

/**
 * How long a socket client waits for an expected frame before it fails the
 * test with what it did receive. A bound for failure reports, never a
 * barrier. Generous: the suite shares 2 cores with others.
 */
export const DEFAULT_TIMEOUT: Duration.Input = "10 seconds"

const describeFrames = (frames: ReadonlyArray<Received>): string => {
  const tail = frames.slice(-8).map((r) => (r.consumed ? "  (consumed) " : "  ") + abbreviate(r.text))
  return frames.length === 0 ? " none" : `\n${tail.join("\n")}`
}

const abbreviate = (text: string): string => text.length > 300 ? `${text.slice(0, 300)}… (${text.length} chars)` : text

export class WireTimeout extends Data.TaggedError("WireTimeout")<{
  readonly client: string
  readonly what: string
  readonly recent: string
}> {
  override get message(): string {
    return `[${this.client}] no ${this.what} arrived; recent frames:${this.recent}`
  }
}

export class WireClosed extends Data.TaggedError("WireClosed")<{
  readonly client: string
  readonly what: string
  readonly recent: string
}> {
  override get message(): string {
    return `[${this.client}] connection closed while waiting for ${this.what}; recent frames:${this.recent}`
  }
}

export class WireProtocolViolation extends Data.TaggedError("WireProtocolViolation")<{
  readonly client: string
  readonly detail: string
}> {
  override get message(): string {
    return `[${this.client}] broker sent a frame a strict client rejects (P04): ${this.detail}`
  }
}

export class UnexpectedFrame extends Data.TaggedError("UnexpectedFrame")<{
  readonly client: string
  readonly what: string
  readonly frame: string
}> {
  override get message(): string {
    return `[${this.client}] expected no ${this.what}, got ${abbreviate(this.frame)}`
  }
}

export class StillOpen extends Data.TaggedError("StillOpen")<{
  readonly client: string
  readonly recent: string
}> {
  override get message(): string {
    return `[${this.client}] expected the broker to close the connection, it is still open; recent frames:${this.recent}`
  }
}

export class DialFailed extends Data.TaggedError("DialFailed")<{ readonly path: string; readonly cause: unknown }> {
  override get message(): string {
    return `cannot connect to ${this.path}: ${String(this.cause)}`
  }
}

export type WireError = WireTimeout | WireClosed | WireProtocolViolation

interface Received {
  readonly text: string
  readonly frame: BrokerFrame
  consumed: boolean
}

export interface WireClient {
  readonly label: string
  /** Sends a frame object as JSON. */
  readonly send: (frame: object) => Effect.Effect<void>
  /** Sends frame objects as JSON in one write (in memory: one batch), as a client with a burst queued writes them. */
  readonly sendAll: (frames: ReadonlyArray<object>) => Effect.Effect<void>
  /** Sends a payload text framed with a correct length prefix (for invalid JSON and the like). */
  readonly sendText: (text: string) => Effect.Effect<void>
  /** Writes raw bytes in one write, no framing added (in memory: the complete frames they hold, as one batch). */
  readonly sendRaw: (bytes: Uint8Array) => Effect.Effect<void>
  /**
   * Takes the first unconsumed frame of one of `types` that satisfies `predicate`,
   * waiting for it. Other frames stay available to later calls.
   */
  readonly next: <T extends FrameType>(
    types: T | ReadonlyArray<T>,
    predicate?: (frame: FrameOf<T>) => boolean,
    timeout?: Duration.Input
  ) => Effect.Effect<FrameOf<T>, WireError>
  /** Takes the first unconsumed frame, whatever it is. */
  readonly nextAny: (timeout?: Duration.Input) => Effect.Effect<BrokerFrame, WireError>
  /**
   * A `health` request and its answer. The broker's Router handles one
   * connection's frames in order, synchronously, and each outbox is FIFO: once
   * this returns, the broker has handled everything sent before it on this
   * connection, and this client has read everything queued for it before the
   * answer.
   */
  readonly roundTrip: Effect.Effect<void, WireError>
  /**
   * Fails if an unconsumed frame (of `types`, matching `predicate`, if given)
   * has arrived by now. Exact only after a barrier (see ./barrier.ts).
   */
  readonly expectNothing: <T extends FrameType>(
    types?: T | ReadonlyArray<T>,
    predicate?: (frame: FrameOf<T>) => boolean
  ) => Effect.Effect<void, UnexpectedFrame | WireProtocolViolation>
  /** Waits until the broker closes (or ends) the connection. */
  readonly waitClosed: (timeout?: Duration.Input) => Effect.Effect<void, StillOpen>
  /**
   * Waits until the connection is gone at both ends: over a socket, its
   * `close` event, which for a half-open client comes only once the broker
   * has closed its end too — after that the broker reads nothing more from it.
   * In memory, the same as `waitClosed` (each step runs the close through).
   */
  readonly waitGone: (timeout?: Duration.Input) => Effect.Effect<void, StillOpen>
  /** Closed (or ended) by the broker, or destroyed by us? */
  readonly isClosed: () => boolean
  /** Our side can still write (a half-open client after the broker's end). */
  readonly writable: () => boolean
  /** Every frame received so far, in order (consumed or not). */
  readonly received: () => ReadonlyArray<BrokerFrame>
  /** The text of every frame received so far, as the broker wrote it, in order (to size a frame exactly). */
  readonly receivedTexts: () => ReadonlyArray<string>
  /** Frames received so far of one type. */
  readonly count: (type: FrameType) => number
  /** Marks every frame received so far as consumed. */
  readonly drain: () => void
  /** Stops reading (the transport's buffers fill, then the broker's writes block). */
  readonly pause: Effect.Effect<void>
  readonly resume: Effect.Effect<void>
  /** Half-closes our side. */
  readonly end: Effect.Effect<void>
  readonly destroy: Effect.Effect<void>
}

const isOneOf = <T extends FrameType>(frame: BrokerFrame, types: ReadonlyArray<T>): frame is FrameOf<T> =>
  types.some((type) => type === frame.type)

const typesOf = <T extends FrameType>(types: T | ReadonlyArray<T>): ReadonlyArray<T> =>
  typeof types === "string" ? [types] : types

const allTypes: ReadonlyArray<FrameType> = [
  "registered",
  "error",
  "health_ok",
  "sessions",
  "session_joined",
  "session_left",
  "presence_update",
  "message",
  "delivered",
  "delivery_failed",
  "message_receipt",
  "message_control",
  "registration_failed",
  "supervisor_authorized",
  "supervisor_authorization_failed"
]

/**
 * How a wait that is not satisfied yet continues. Over a socket it waits for
 * the next event, bounded by `timeout` of real time. In the in-memory world
 * every action runs until the world is idle, so what has not arrived when a
 * wait starts will not arrive without a new action: the wait fails at once.
 */
type WaitMode = "events" | "idle-world"

/** The transport side of a wire client: how it writes, pauses and closes. */
interface WireIo {
  readonly write: (texts: ReadonlyArray<string>) => Effect.Effect<void>
  readonly writeRaw: (bytes: Uint8Array) => Effect.Effect<void>
  readonly pause: Effect.Effect<void>
  readonly resume: Effect.Effect<void>
  readonly end: Effect.Effect<void>
  readonly destroy: Effect.Effect<void>
  readonly writable: () => boolean
}

/** What the transport feeds in: frame texts as they arrive, a violation, the close. */
interface WireInbound {
  readonly texts: (texts: ReadonlyArray<string>) => void
  readonly violation: (detail: string) => void
  /** The peer ended or closed the connection. */
  readonly closed: () => void
  /** The connection is gone at both ends. */
  readonly gone: () => void
}

const TYPE_FIRST = `{"type":"`

/**
 * The `type` a frame's text starts with, as the broker writes its frames (`{"type":"session_joined",…`), or
 * undefined when it does not start so or the type holds an escape. Only to skip by (`ConnectOptions.keep`):
 * a frame that is not skipped is decoded whole.
 */
const leadingType = (text: string): string | undefined => {
  if (!text.startsWith(TYPE_FIRST)) return undefined
  const end = text.indexOf(`"`, TYPE_FIRST.length)
  const type = end === -1 ? undefined : text.slice(TYPE_FIRST.length, end)
  return type === undefined || type.includes("\\") ? undefined : type
}

/**
 * The transport-independent half of a wire client: the log of frames and the waits on it. With `keep`,
 * frames of other types are skipped unread (`ConnectOptions.keep`).
 */
const makeWire = (
  label: string,
  mode: WaitMode,
  keep: ReadonlyArray<FrameType> | undefined
): { readonly inbound: WireInbound; readonly attach: (transport: WireIo) => WireClient } => {
  const kept: ReadonlySet<string> | undefined = keep === undefined ? undefined : new Set(keep)
  const log: Array<Received> = []
  const waiters = new Set<() => boolean>()
  let violation: string | undefined
  let closed = false
  let gone = false

  const wake = () => {
    for (const waiter of [...waiters]) {
      if (waiter()) waiters.delete(waiter)
    }
  }
  const inbound: WireInbound = {
    texts: (texts) => {
      for (const text of texts) {
        if (kept !== undefined) {
          const type = leadingType(text)
          if (type !== undefined && !kept.has(type)) continue
        }
        const frame = decodeBrokerFrameText(text)
        if (isFrameDecodeError(frame)) violation ??= `${frame.message} in ${abbreviate(text)}`
        else log.push({ text, frame, consumed: false })
      }
      wake()
    },
    violation: (detail) => {
      violation ??= detail
      wake()
    },
    closed: () => {
      closed = true
      wake()
    },
    gone: () => {
      closed = true
      gone = true
      wake()
    }
  }
  const recent = () => describeFrames(log)

  /** Waits until `poll` answers; `poll` must not consume anything unless it answers. */
  const waitUntil = <A, E>(
    poll: () => Exit.Exit<A, E> | undefined,
    timeout: Duration.Input,
    onTimeout: () => E
  ): Effect.Effect<A, E> => {
    if (mode === "idle-world") {
      return Effect.suspend(() => poll() ?? Exit.fail(onTimeout()))
    }
    return Effect.callback<A, E>((resume) => {
      const attempt = (): boolean => {
        const exit = poll()
        if (exit === undefined) return false
        resume(exit)
        return true
      }
      if (attempt()) return
      waiters.add(attempt)
      return Effect.sync(() => void waiters.delete(attempt))
    }).pipe(Effect.timeoutOrElse({ duration: timeout, orElse: () => Effect.fail(onTimeout()) }))
  }

  const next: WireClient["next"] = <T extends FrameType>(
    types: T | ReadonlyArray<T>,
    predicate?: (frame: FrameOf<T>) => boolean,
    timeout: Duration.Input = DEFAULT_TIMEOUT
  ) => {
    const wanted = typesOf(types)
    const what = `${wanted.join("|")}${predicate === undefined ? "" : " (matching)"}`
    return waitUntil<FrameOf<T>, WireError>(
      () => {
        if (violation !== undefined) return Exit.fail(new WireProtocolViolation({ client: label, detail: violation }))
        for (const entry of log) {
          const frame = entry.frame
          if (!entry.consumed && isOneOf(frame, wanted) && (predicate === undefined || predicate(frame))) {
            entry.consumed = true
            return Exit.succeed(frame)
          }
        }
        if (closed) return Exit.fail(new WireClosed({ client: label, what, recent: recent() }))
        return undefined
      },
      timeout,
      () =>
        new WireTimeout({
          client: label,
          what: mode === "idle-world" ? `${what} (the world is idle: it will not come)` : `${what} within ${Duration.format(Duration.fromInputUnsafe(timeout))}`,
          recent: recent()
        })
    )
  }

  const attach = (transport: WireIo): WireClient => {
    const send = (frame: object) => transport.write([JSON.stringify(frame)])

    return {
      label,
      send,
      sendAll: (frames) => transport.write(frames.map((frame) => JSON.stringify(frame))),
      sendText: (text) => transport.write([text]),
      sendRaw: transport.writeRaw,
      next,
      nextAny: (timeout) => next(allTypes, undefined, timeout),
      roundTrip: Effect.suspend(() => {
        const requestId = `round-trip-${randomUUID()}`
        return Effect.andThen(
          send({ type: "health", requestId }),
          next("health_ok", (frame) => frame.requestId === requestId)
        )
      }),
      expectNothing: <T extends FrameType>(types?: T | ReadonlyArray<T>, predicate?: (frame: FrameOf<T>) => boolean) =>
        Effect.suspend((): Effect.Effect<void, UnexpectedFrame | WireProtocolViolation> => {
          if (violation !== undefined) {
            return Effect.fail(new WireProtocolViolation({ client: label, detail: violation }))
          }
          const wanted: ReadonlyArray<FrameType> = types === undefined ? allTypes : typesOf(types)
          const found = log.find((entry) => {
            if (entry.consumed) return false
            if (types === undefined) return true
            const frame = entry.frame
            return isOneOf(frame, typesOf(types)) && (predicate === undefined || predicate(frame))
          })
          return found === undefined
            ? Effect.void
            : Effect.fail(new UnexpectedFrame({ client: label, what: wanted.join("|"), frame: found.text }))
        }),
      waitClosed: (timeout = DEFAULT_TIMEOUT) =>
        waitUntil<void, StillOpen>(
          () => (closed ? Exit.void : undefined),
          timeout,
          () => new StillOpen({ client: label, recent: recent() })
        ),
      waitGone: (timeout = DEFAULT_TIMEOUT) =>
        waitUntil<void, StillOpen>(
          () => (gone ? Exit.void : undefined),
          timeout,
          () => new StillOpen({ client: label, recent: recent() })
        ),
      isClosed: () => closed,
      writable: transport.writable,
      received: () => log.map((entry) => entry.frame),
      receivedTexts: () => log.map((entry) => entry.text),
      count: (type) => log.filter((entry) => entry.frame.type === type).length,
      drain: () => {
        for (const entry of log) entry.consumed = true
      },
      pause: transport.pause,
      resume: transport.resume,
      end: transport.end,
      destroy: transport.destroy
    }
  }
  return { inbound, attach }
}

// ---------------------------------------------------------------------------
// Over a Unix socket
// ---------------------------------------------------------------------------

export interface ConnectOptions {
  /**
   * Keep our side writable after the broker ends its side, like a client
   * that has not noticed yet: frames written then still reach the broker.
   */
  readonly allowHalfOpen?: boolean
  /**
   * The frame types this client keeps. A frame whose text starts with
   * `{"type":"` and a type not among them (the broker writes `type` first:
   * src/broker/encode.ts) is dropped unread: no `next`, `received` or `count`
   * sees it, and nothing checks it. Every other frame is decoded strictly and
   * kept, as without `keep` (the default: every frame). For a test that looks
   * at a few frames among very many (the 500-connection burst's membership frames).
   */
  readonly keep?: ReadonlyArray<FrameType>
}

/**
 * Connects to `path`; the socket is destroyed when the Scope closes. "Closed"
 * means the broker ended or destroyed the connection.
 */
export const connect = (
  path: string,
  label = "client",
  options: ConnectOptions = {}
): Effect.Effect<WireClient, DialFailed, Scope.Scope> =>
  Effect.gen(function*() {
    const socket = yield* connectUnixSocket(path, { allowHalfOpen: options.allowHalfOpen ?? false }).pipe(
      Effect.mapError((error) => new DialFailed({ path, cause: error.cause }))
    )
    const { attach, inbound } = makeWire(label, "events", options.keep)
    const decoder = new FrameDecoder(MAX_FRAME_BYTES)
    socket.on("error", () => {
      // Resets are expected when the broker drops us; `close` follows.
    })
    socket.on("end", inbound.closed)
    socket.on("close", inbound.gone)
    socket.on("data", (chunk: Buffer) => {
      const texts: Array<string> = []
      const tooLarge = decoder.push(chunk, texts)
      inbound.texts(texts)
      if (tooLarge !== undefined) {
        inbound.violation(tooLarge.message)
        socket.destroy()
      }
    })
    const writeRaw = (bytes: Uint8Array) =>
      Effect.sync(() => {
        if (!socket.destroyed) socket.write(bytes)
      })
    return attach({
      write: (texts) => writeRaw(Buffer.concat(texts.map((text) => encodeFrame(text)))),
      writeRaw,
      pause: Effect.sync(() => void socket.pause()),
      resume: Effect.sync(() => void socket.resume()),
      end: Effect.sync(() => void socket.end()),
      destroy: Effect.sync(() => void socket.destroy()),
      writable: () => !socket.destroyed && socket.writable
    })
  })

// ---------------------------------------------------------------------------
// Over an in-memory connection
// ---------------------------------------------------------------------------

/** Runs an effect as one step of the in-memory world: when it returns, every fiber it woke is idle again. */
export type Step = (action: Effect.Effect<void>) => Effect.Effect<void>

/**
 * A wire client over one end of an in-memory connection. Writes go through an
 * unbounded send buffer (a socket's user-space buffer) drained by a writer
 * fiber, so a broker that stops reading never blocks the test; every write,
 * pause, resume and close runs as a `step`, so when it returns the world is
 * idle and `next` can answer at once.
 */
export const wireOverConnection = (
  connection: Connection,
  label: string,
  step: Step,
  options: ConnectOptions = {}
): Effect.Effect<WireClient, never, Scope.Scope> =>
  Effect.gen(function*() {
    const outgoing = yield* Queue.unbounded<ReadonlyArray<string>>()
    const reading = yield* Latch.make(true)
    let destroyed = false
    const { attach, inbound } = makeWire(label, "idle-world", options.keep)
    const decoder = new FrameDecoder(Number.MAX_SAFE_INTEGER)
    const enqueue = (texts: ReadonlyArray<string>) =>
      step(Effect.sync(() => {
        if (!destroyed && texts.length > 0) Queue.offerUnsafe(outgoing, texts)
      }))
    const client = attach({
      write: enqueue,
      writeRaw: (bytes) =>
        Effect.suspend(() => {
          const texts: Array<string> = []
          decoder.push(bytes, texts)
          return enqueue(texts)
        }),
      pause: step(reading.close),
      resume: step(reading.open),
      end: step(connection.end),
      destroy: step(Effect.andThen(
        Effect.sync(() => {
          destroyed = true
        }),
        connection.destroy
      )),
      writable: () => !destroyed
    })
    yield* Effect.forkScoped(
      Effect.forever(
        Effect.flatMap(Queue.takeAll(outgoing), (batches) => connection.writeAll(batches.flat())),
        { disableYield: true }
      ).pipe(Effect.ignore),
      { startImmediately: true }
    )
    const reader = yield* Effect.forkScoped(
      Effect.forever(
        reading.await.pipe(
          Effect.andThen(connection.read),
          Effect.map((texts) => inbound.texts(texts))
        ),
        { disableYield: true }
      ).pipe(
        Effect.catchTag("ConnectionClosed", (closed) =>
          // Without allowHalfOpen our side ends when the broker's does, as a socket's would.
          closed.clean && options.allowHalfOpen !== true ? connection.end : Effect.void),
        Effect.catchTag("FrameTooLarge", (error) => Effect.sync(() => inbound.violation(error.message))),
        Effect.ensuring(Effect.sync(inbound.gone))
      ),
      { startImmediately: true }
    )
    yield* Effect.addFinalizer(() => Effect.andThen(Fiber.interrupt(reader), connection.destroy))
    return client
  })
