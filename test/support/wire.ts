/**
 * A wire-level test client over a real Unix socket (raw `node:net`, so it can
 * also send garbage). Every frame the broker sends is decoded strictly with the
 * broker-frame Schema: a frame a real pi-intercom client would reject (P04) is
 * recorded as a protocol violation and makes every later `next` fail.
 */
import { Data, Duration, Effect, type Scope } from "effect"
import * as net from "node:net"
import {
  type BrokerFrame,
  decodeBrokerFrameText,
  encodeFrame,
  FrameDecoder,
  isFrameDecodeError,
  MAX_FRAME_BYTES
} from "../../src/protocol/index.ts"

export type FrameType = BrokerFrame["type"]
export type FrameOf<T extends FrameType> = Extract<BrokerFrame, { readonly type: T }>

/** Default wait for an expected frame. Generous: the suite shares 2 cores with others. */
export const DEFAULT_TIMEOUT: Duration.Input = "3 seconds"

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
    return `[${this.client}] timed out waiting for ${this.what}; recent frames:${this.recent}`
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
  readonly at: number
  consumed: boolean
}

export interface WireClient {
  readonly label: string
  /** Sends a frame object as JSON. */
  readonly send: (frame: object) => Effect.Effect<void>
  /** Sends a payload text framed with a correct length prefix (for invalid JSON and the like). */
  readonly sendText: (text: string) => Effect.Effect<void>
  /** Writes raw bytes, no framing. */
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
   * Waits `ms`, then fails if any unconsumed frame (of `types`, matching
   * `predicate`, if given) has arrived — including ones that arrived before.
   */
  readonly expectNothing: <T extends FrameType>(
    ms: number,
    types?: T | ReadonlyArray<T>,
    predicate?: (frame: FrameOf<T>) => boolean
  ) => Effect.Effect<void, UnexpectedFrame | WireProtocolViolation>
  /** Waits until the broker closes the connection. */
  readonly waitClosed: (timeout?: Duration.Input) => Effect.Effect<void, StillOpen>
  /** Closed (or ended) by the broker, or destroyed by us? */
  readonly isClosed: () => boolean
  /** Our socket can still write (a half-open client after the broker's end). */
  readonly writable: () => boolean
  /** Every frame received so far, in order (consumed or not). */
  readonly received: () => ReadonlyArray<BrokerFrame>
  /** Frames received so far of one type. */
  readonly count: (type: FrameType) => number
  /** Marks every frame received so far as consumed. */
  readonly drain: () => void
  /** Stops reading the socket (the kernel buffers fill, then the broker's writes block). */
  readonly pause: () => void
  readonly resume: () => void
  /** Half-closes our side. */
  readonly end: Effect.Effect<void>
  readonly destroy: Effect.Effect<void>
}

const isOneOf = <T extends FrameType>(frame: BrokerFrame, types: ReadonlyArray<T>): frame is FrameOf<T> =>
  types.some((type) => type === frame.type)

const typesOf = <T extends FrameType>(types: T | ReadonlyArray<T>): ReadonlyArray<T> =>
  typeof types === "string" ? [types] : types

export interface ConnectOptions {
  /**
   * Keep our side writable after the broker ends its side, like a client
   * that has not noticed yet: frames written then still reach the broker.
   */
  readonly allowHalfOpen?: boolean
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
    const socket = yield* Effect.acquireRelease(
      Effect.callback<net.Socket, DialFailed>((resume) => {
        const socket = net.createConnection({ path, allowHalfOpen: options.allowHalfOpen ?? false })
        const onError = (cause: Error) => {
          socket.destroy()
          resume(Effect.fail(new DialFailed({ path, cause })))
        }
        socket.once("error", onError)
        socket.once("connect", () => {
          socket.off("error", onError)
          resume(Effect.succeed(socket))
        })
        return Effect.sync(() => socket.destroy())
      }),
      (socket) => Effect.sync(() => socket.destroy())
    )
    return makeClient(socket, label)
  })

const makeClient = (socket: net.Socket, label: string): WireClient => {
  const log: Array<Received> = []
  const waiters = new Set<() => boolean>()
  const decoder = new FrameDecoder(MAX_FRAME_BYTES)
  let violation: string | undefined
  let closed = false

  const wake = () => {
    for (const waiter of [...waiters]) {
      if (waiter()) waiters.delete(waiter)
    }
  }

  socket.on("error", () => {
    // Resets are expected when the broker drops us; `close` follows.
  })
  const onClosed = () => {
    closed = true
    wake()
  }
  socket.on("end", onClosed)
  socket.on("close", onClosed)
  socket.on("data", (chunk: Buffer) => {
    const texts: Array<string> = []
    const tooLarge = decoder.push(chunk, texts)
    for (const text of texts) {
      const frame = decodeBrokerFrameText(text)
      if (isFrameDecodeError(frame)) {
        violation ??= `${frame.message} in ${abbreviate(text)}`
      } else {
        log.push({ text, frame, at: Date.now(), consumed: false })
      }
    }
    if (tooLarge !== undefined) {
      violation ??= tooLarge.message
      socket.destroy()
    }
    wake()
  })

  const recent = () => describeFrames(log)
  const write = (bytes: Uint8Array) =>
    Effect.sync(() => {
      if (!socket.destroyed) socket.write(bytes)
    })

  const matches = <T extends FrameType>(
    entry: Received,
    types: ReadonlyArray<T>,
    predicate: ((frame: FrameOf<T>) => boolean) | undefined
  ): boolean => {
    const frame = entry.frame
    return isOneOf(frame, types) && (predicate === undefined || predicate(frame))
  }

  const next: WireClient["next"] = <T extends FrameType>(
    types: T | ReadonlyArray<T>,
    predicate?: (frame: FrameOf<T>) => boolean,
    timeout: Duration.Input = DEFAULT_TIMEOUT
  ) => {
    const wanted = typesOf(types)
    const what = `${wanted.join("|")}${predicate === undefined ? "" : " (matching)"}`
    return Effect.callback<FrameOf<T>, WireError>((resume) => {
      const attempt = (): boolean => {
        if (violation !== undefined) {
          resume(Effect.fail(new WireProtocolViolation({ client: label, detail: violation })))
          return true
        }
        for (const entry of log) {
          const frame = entry.frame
          if (!entry.consumed && isOneOf(frame, wanted) && (predicate === undefined || predicate(frame))) {
            entry.consumed = true
            resume(Effect.succeed(frame))
            return true
          }
        }
        if (closed) {
          resume(Effect.fail(new WireClosed({ client: label, what, recent: recent() })))
          return true
        }
        return false
      }
      if (attempt()) return
      waiters.add(attempt)
      return Effect.sync(() => {
        waiters.delete(attempt)
      })
    }).pipe(
      Effect.timeoutOrElse({
        duration: timeout,
        orElse: () => Effect.fail(new WireTimeout({ client: label, what, recent: recent() }))
      })
    )
  }

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
    "message_control"
  ]

  return {
    label,
    send: (frame) => write(encodeFrame(JSON.stringify(frame))),
    sendText: (text) => write(encodeFrame(text)),
    sendRaw: write,
    next,
    nextAny: (timeout) => next(allTypes, undefined, timeout),
    expectNothing: <T extends FrameType>(
      ms: number,
      types?: T | ReadonlyArray<T>,
      predicate?: (frame: FrameOf<T>) => boolean
    ) =>
      Effect.sleep(Duration.millis(ms)).pipe(
        Effect.andThen(Effect.suspend((): Effect.Effect<void, UnexpectedFrame | WireProtocolViolation> => {
          if (violation !== undefined) {
            return Effect.fail(new WireProtocolViolation({ client: label, detail: violation }))
          }
          const wanted: ReadonlyArray<FrameType> = types === undefined ? allTypes : typesOf(types)
          const found = log.find((entry) =>
            !entry.consumed &&
            (types === undefined ? true : matches(entry, typesOf(types), predicate))
          )
          return found === undefined
            ? Effect.void
            : Effect.fail(new UnexpectedFrame({ client: label, what: wanted.join("|"), frame: found.text }))
        }))
      ),
    waitClosed: (timeout = DEFAULT_TIMEOUT) =>
      Effect.callback<void>((resume) => {
        const attempt = (): boolean => {
          if (!closed) return false
          resume(Effect.void)
          return true
        }
        if (attempt()) return
        waiters.add(attempt)
        return Effect.sync(() => {
          waiters.delete(attempt)
        })
      }).pipe(
        Effect.timeoutOrElse({
          duration: timeout,
          orElse: () => Effect.fail(new StillOpen({ client: label, recent: recent() }))
        })
      ),
    isClosed: () => closed,
    writable: () => !socket.destroyed && socket.writable,
    received: () => log.map((entry) => entry.frame),
    count: (type) => log.filter((entry) => entry.frame.type === type).length,
    drain: () => {
      for (const entry of log) entry.consumed = true
    },
    pause: () => {
      socket.pause()
    },
    resume: () => {
      socket.resume()
    },
    end: Effect.sync(() => {
      socket.end()
    }),
    destroy: Effect.sync(() => {
      socket.destroy()
    })
  }
}
