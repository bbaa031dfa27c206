/**
 * A raw Unix-socket connection for the fuzzer: it writes any bytes (garbage,
 * bad lengths, partial frames, one byte at a time) and measures every frame
 * the broker writes back with a `FrameMeter`, so an oversized frame is
 * recorded rather than refused. Frames up to 1 MiB are handed to waiters
 * (`next`) or kept in a short backlog; `closed` completes when the broker
 * ends or destroys the connection. The socket lives in the current Scope.
 */
import { Data, Deferred, Duration, Effect, Exit, type Scope } from "effect"
import { encodeFrames } from "../protocol/framing.ts"
import { connectUnixSocket } from "../transport/UnixSocket.ts"
import { FrameMeter, type MeteredFrame } from "./FrameMeter.ts"

/** Frames kept for a later `next` when no waiter took them. */
const BACKLOG = 256

/** The broker did not send a frame the fuzzer waited for in time. */
export class FrameTimeout extends Data.TaggedError("FrameTimeout")<{ readonly label: string; readonly what: string }> {
  override get message(): string {
    return `[${this.label}] no ${this.what} in time`
  }
}

/** The connection closed while the fuzzer waited for a frame. */
export class ConnectionGone extends Data.TaggedError("ConnectionGone")<{ readonly label: string; readonly what: string }> {
  override get message(): string {
    return `[${this.label}] connection closed while waiting for ${this.what}`
  }
}

/** A dial failure's cause as text; a cause without `toString` (a null-prototype object) is shown as JSON. */
const describeCause = (cause: unknown): string => {
  const message: unknown = typeof cause === "object" && cause !== null ? Reflect.get(cause, "message") : undefined
  if (typeof message === "string") return message
  if (typeof cause === "object" && cause !== null) {
    try {
      return JSON.stringify(cause)
    } catch {
      return "unprintable cause"
    }
  }
  return String(cause)
}

/** The socket could not be opened. */
export class DialFailed extends Data.TaggedError("DialFailed")<{ readonly path: string; readonly cause: unknown }> {
  override get message(): string {
    return `cannot connect to ${this.path}: ${describeCause(this.cause)}`
  }
}

/** What a frame waiter decides about a frame: take it (with a value), or leave it. */
export type Claim<A> = { readonly take: true; readonly value: A } | undefined

/** One raw connection to the broker; see the module header. */
export interface RawConnection {
  readonly label: string
  /** Writes bytes as they are; waits while the kernel buffer is full (the broker stopped reading). */
  readonly write: (bytes: Uint8Array) => Effect.Effect<void>
  /** Frames each text with a correct length prefix and writes them in one write. */
  readonly writeFrames: (texts: ReadonlyArray<string>) => Effect.Effect<void>
  /**
   * Frames and writes now, synchronously, without waiting for room (Node
   * buffers what the kernel does not take): for small frames whose order
   * against other writers matters (the caller numbers them in the same step).
   */
  readonly writeNow: (texts: ReadonlyArray<string>) => void
  /**
   * Waits for the first frame (from the backlog, then as they arrive) that
   * `claim` takes; fails when the connection closes first or after `timeout`.
   */
  readonly next: <A>(
    what: string,
    claim: (frame: MeteredFrame) => Claim<A>,
    timeout: Duration.Input
  ) => Effect.Effect<A, FrameTimeout | ConnectionGone>
  /** Completes once the broker has closed (or ended) the connection, or it failed. */
  readonly closed: Effect.Effect<void>
  readonly isClosed: () => boolean
  /** Every frame the broker wrote here, measured. */
  readonly meter: FrameMeter
  /** Stops reading (the kernel buffer fills, then the broker's writes to us block). */
  readonly pause: Effect.Effect<void>
  readonly resume: Effect.Effect<void>
  /** Closes our side at once. */
  readonly destroy: Effect.Effect<void>
}

/**
 * Opens a raw connection to `path` in the current Scope (closing the Scope
 * destroys it). `onFrame` sees every frame first, in order, before waiters
 * and the backlog.
 */
export const openRaw = (
  path: string,
  label: string,
  onFrame: (frame: MeteredFrame) => void = () => {}
): Effect.Effect<RawConnection, DialFailed, Scope.Scope> =>
  Effect.gen(function*() {
    const socket = yield* connectUnixSocket(path).pipe(
      Effect.mapError((error) => new DialFailed({ path, cause: error.cause }))
    )
    const closed = yield* Deferred.make<void>()
    const meter = new FrameMeter()
    const backlog: Array<MeteredFrame> = []
    const waiters = new Set<(frame: MeteredFrame | undefined) => boolean>()
    let isClosed = false

    const offer = (frame: MeteredFrame) => {
      onFrame(frame)
      for (const waiter of waiters) {
        if (waiter(frame)) {
          waiters.delete(waiter)
          return
        }
      }
      if (frame.text === undefined) return
      backlog.push(frame)
      if (backlog.length > BACKLOG) backlog.shift()
    }
    const markClosed = () => {
      if (isClosed) return
      isClosed = true
      Deferred.doneUnsafe(closed, Exit.void)
      for (const waiter of [...waiters]) if (waiter(undefined)) waiters.delete(waiter)
    }
    socket.on("error", () => {
      // A reset when the broker drops us; `close` follows.
    })
    socket.on("data", (chunk: Buffer) => {
      const frames: Array<MeteredFrame> = []
      meter.push(chunk, frames)
      for (const frame of frames) offer(frame)
    })
    socket.on("end", markClosed)
    socket.on("close", markClosed)

    const write = (bytes: Uint8Array): Effect.Effect<void> =>
      Effect.callback<void>((resume) => {
        if (socket.destroyed || !socket.writable) return resume(Effect.void)
        if (socket.write(bytes)) return resume(Effect.void)
        // The kernel buffer is full: the broker is not reading us. Wait for room or the end.
        const done = () => {
          socket.off("drain", done)
          socket.off("close", done)
          resume(Effect.void)
        }
        socket.once("drain", done)
        socket.once("close", done)
        return Effect.sync(() => {
          socket.off("drain", done)
          socket.off("close", done)
        })
      })

    const next = <A>(what: string, claim: (frame: MeteredFrame) => Claim<A>, timeout: Duration.Input) =>
      Effect.callback<A, FrameTimeout | ConnectionGone>((resume) => {
        for (let i = 0; i < backlog.length; i++) {
          const claimed = claim(backlog[i]!)
          if (claimed !== undefined) {
            backlog.splice(i, 1)
            return resume(Effect.succeed(claimed.value))
          }
        }
        if (isClosed) return resume(Effect.fail(new ConnectionGone({ label, what })))
        const waiter = (frame: MeteredFrame | undefined): boolean => {
          if (frame === undefined) {
            resume(Effect.fail(new ConnectionGone({ label, what })))
            return true
          }
          const claimed = claim(frame)
          if (claimed === undefined) return false
          resume(Effect.succeed(claimed.value))
          return true
        }
        waiters.add(waiter)
        return Effect.sync(() => void waiters.delete(waiter))
      }).pipe(
        Effect.timeoutOrElse({ duration: timeout, orElse: () => Effect.fail(new FrameTimeout({ label, what })) })
      )

    return {
      label,
      write,
      writeFrames: (texts) => write(encodeFrames(texts)),
      writeNow: (texts) => {
        if (!socket.destroyed && socket.writable) socket.write(encodeFrames(texts))
      },
      next,
      closed: Deferred.await(closed),
      isClosed: () => isClosed,
      meter,
      pause: Effect.sync(() => void socket.pause()),
      resume: Effect.sync(() => void socket.resume()),
      destroy: Effect.sync(() => {
        socket.destroy()
        markClosed()
      })
    } satisfies RawConnection
  })

/** Parses a kept frame's text as a JSON object with a string `type`, or undefined. */
export const frameObject = (frame: MeteredFrame): { readonly type: string; readonly [key: string]: unknown } | undefined => {
  if (frame.text === undefined) return undefined
  let value: unknown
  try {
    value = JSON.parse(frame.text)
  } catch {
    return undefined
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined
  const type: unknown = Reflect.get(value, "type")
  if (typeof type !== "string") return undefined
  return { ...value, type }
}

/** A claim for the first frame of `type` whose fields satisfy `test`. */
export const frameOfType = (
  type: string,
  test: (frame: { readonly [key: string]: unknown }) => boolean = () => true
) =>
(frame: MeteredFrame): Claim<{ readonly type: string; readonly [key: string]: unknown }> => {
  const object = frameObject(frame)
  return object !== undefined && object.type === type && test(object) ? { take: true, value: object } : undefined
}

/** How long the fuzzer waits for an answer it needs before it gives the attack up. */
export const ANSWER_WAIT = Duration.seconds(5)
