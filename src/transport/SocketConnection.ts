/**
 * Size: about 450 lines, kept whole: the read side (pulled or pushed) and the
 * write side share the socket's listeners, its close and its one failure.
 *
 * One `net.Socket` as a `Connection`: the adapter the Unix-socket listener
 * and dialer share (UnixSocket.ts).
 *
 * Deliberately small. A broker holds thousands of idle connections, and per
 * connection the general-purpose `effect/socket` adapter keeps dozens of
 * closures, a latch and scope finalizers (measured at ~28 KiB a session in
 * total; see docs/performance.md). This one is a class — its methods are
 * shared, not closures per connection; its four socket listeners are one
 * function per event for every socket (the socket names its connection);
 * and its writes share one callback (Node calls back in order), not a
 * closure per write. It reads in flowing mode: each chunk
 * comes as a `data` event and is decoded there, resuming the one waiting
 * reader at once (the `readable` event of paused mode costs a tick and a
 * `read()` per chunk: docs/performance.md, "Ask tail, fourth stop"). A chunk
 * that arrives while no reader waits is held and the socket paused until a
 * `read` takes it, so a slow consumer still backpressures its peer through
 * the kernel. A broker connection is read without a fiber: `receive` hands
 * each chunk's frames to a receiver straight from the `data` event, and
 * `pauseReading` holds the chunks that still come (the socket paused) until
 * `resumeReading`.
 */
import { Effect, type Scope } from "effect"
import type * as net from "node:net"
import { MAX_FRAME_BYTES } from "../protocol/constants.ts"
import { encodeFrames, encodeFramesInto, FrameDecoder, frameBytes, type FrameScratch, type OutFrame } from "../protocol/framing.ts"
import {
  type Connection,
  ConnectionClosed,
  type ConnectionError,
  type FrameReceiver,
  type ReadProgress
} from "./Connection.ts"

type ReadResult = ReadonlyArray<string> | ConnectionError
type Resume = (effect: Effect.Effect<ReadonlyArray<string>, ConnectionError>) => void

/** How many leading frames of a batch lie wholly within its first `bytes` bytes on the wire. */
const framesWithin = (frames: ReadonlyArray<OutFrame>, bytes: number): number => {
  let end = 0
  for (let i = 0; i < frames.length; i++) {
    end += 4 + frameBytes(frames[i]!)
    if (end > bytes) return i
  }
  return frames.length
}

const isReadError = (result: ReadResult): result is ConnectionError => !Array.isArray(result)

const settle = (result: ReadResult): Effect.Effect<ReadonlyArray<string>, ConnectionError> =>
  isReadError(result) ? Effect.fail(result) : Effect.succeed(result)

/**
 * One socket as a `Connection`. A class, so that a broker's thousands of idle
 * connections share its methods: per connection it keeps its fields, its
 * decoder and, once it has written, one write callback; the socket's
 * listeners are shared (`onData`…, below). Its methods are the `Connection`'s
 * function fields: call them on the connection (`connection.writeAll(frames)`),
 * do not detach them.
 */
class SocketConnection implements Connection {
  readonly id: number
  readonly trustedLocal = true
  private readonly raw: net.Socket
  private readonly decoder: FrameDecoder
  private readonly scratch: FrameScratch | undefined
  /** Why reading ended, once it did (frames decoded before it are still handed over). */
  private failure: ConnectionError | undefined = undefined
  /** A `read` waiting for frames. */
  private waiting: Resume | undefined = undefined
  /** Where frames go once `receive` was called (then `read` is not used). */
  private receiver: FrameReceiver | undefined = undefined
  /** The receiver asked to stop reading (`pauseReading`). */
  private receivePaused = false
  /** The receiver was told reading ended. */
  private receiverEnded = false
  /** Chunks that came while no `read` waited, oldest first; the socket is paused while there are any. */
  private held: Array<Uint8Array> | undefined = undefined
  /** The socket was paused (chunks held, or reading stopped after a framing error). */
  private paused = false
  private framesRead = 0
  /** The batch whose write has not completed, if any (one at a time; see `writeAll`). */
  private pending: { readonly frames: ReadonlyArray<OutFrame>; readonly bytes: number } | undefined = undefined
  /**
   * Writes handed to the socket, and how many Node has called back for: it
   * calls back in order, so the n-th callback is the n-th write's. One
   * callback per connection (`onWritten`, made on first write), not a closure
   * and its context per write.
   */
  private writesStarted = 0
  private writesCalledBack = 0
  private onWritten: ((error: Error | null | undefined) => void) | undefined = undefined
  /** The number of the write that did not complete at once (`pending`'s), 0 when none. */
  private pendingNumber = 0
  /** That write was called back, with `pendingError`, before anyone waited for it. */
  private pendingSettled = false
  private pendingError: Error | null | undefined = undefined
  /** Who waits for that write's callback. */
  private pendingDone: ((error: Error | null | undefined) => void) | undefined = undefined

  constructor(raw: net.Socket, id: number, maxFrameBytes: number, scratch: FrameScratch | undefined) {
    this.raw = raw
    this.id = id
    this.decoder = new FrameDecoder(maxFrameBytes)
    this.scratch = scratch
    // One listener function per event for every socket (`this` is the socket, which names its
    // connection), not four closures and their context per connection; `on`, not `once`: each
    // fires once anyway, and `once` wraps every listener in two objects more.
    Reflect.set(raw, OWNER, this)
    raw.on("data", onData)
    raw.on("end", onEnd)
    raw.on("close", onClose)
    raw.on("error", onError)
    // A listener's sockets start paused (`pauseOnConnect`), which a `data` listener does not undo.
    raw.resume()
  }

  /** The connection a socket's listener was called for (`this` of the shared listeners below). */
  static of(socket: unknown): SocketConnection | undefined {
    const owner: unknown = typeof socket === "object" && socket !== null ? Reflect.get(socket, OWNER) : undefined
    return owner instanceof SocketConnection ? owner : undefined
  }

  /** The socket's `data` event. */
  static data(connection: SocketConnection, chunk: unknown): void {
    connection.received(chunk)
  }

  /** The socket's `end` (clean) or `close` event: reading ended. */
  static ended(connection: SocketConnection, clean: boolean): void {
    connection.failure ??= new ConnectionClosed({ clean })
    connection.wake()
  }

  /** The socket's `error` event: kept as the failure, unless reading had ended already. */
  static failed(connection: SocketConnection, cause: Error): void {
    connection.failure ??= new ConnectionClosed({ clean: false, cause })
  }

  /** Decodes `chunk` into `frames`; a frame over the limit ends reading (the frames before it still count). */
  private decode(chunk: Uint8Array, frames: Array<string>): void {
    const before = frames.length
    const tooLarge = this.decoder.push(chunk, frames)
    this.framesRead += frames.length - before
    if (tooLarge !== undefined) this.failure = tooLarge
  }

  /** Whether the bytes still coming can be frames: no framing error so far. */
  private readable(): boolean {
    const failure = this.failure
    return failure === undefined || failure._tag === "ConnectionClosed"
  }

  private pause(): void {
    if (this.paused) return
    this.paused = true
    this.raw.pause()
  }

  /** A `data` event: handed to the waiting reader at once, else held (and the socket paused). */
  private received(chunk: unknown): void {
    if (!(chunk instanceof Uint8Array)) return
    if (!this.readable()) return this.pause()
    const receiver = this.receiver
    if (receiver !== undefined) {
      // Behind held chunks, or paused by the receiver: held, in order.
      if (this.receivePaused || this.held !== undefined) {
        ;(this.held ??= []).push(chunk)
        return this.pause()
      }
      return this.deliver(chunk, receiver)
    }
    const resume = this.waiting
    if (resume === undefined) {
      ;(this.held ??= []).push(chunk)
      return this.pause()
    }
    const frames: Array<string> = []
    this.decode(chunk, frames)
    const result = frames.length > 0 ? frames : this.failure
    if (result === undefined) return // a frame begun: wait for the rest
    this.waiting = undefined
    resume(settle(result))
  }

  /** Frames available now, the terminal error once nothing is left, or undefined: wait (reading resumes). */
  private poll(): ReadResult | undefined {
    const frames: Array<string> = []
    const held = this.held
    if (held !== undefined) {
      while (frames.length === 0 && this.readable()) {
        const chunk = held.shift()
        if (chunk === undefined) break
        this.decode(chunk, frames)
      }
      if (held.length === 0) this.held = undefined
    }
    if (frames.length > 0) return frames
    if (this.failure !== undefined) return this.failure
    if (this.paused) {
      this.paused = false
      this.raw.resume()
    }
    return undefined
  }

  /** Hands `chunk`'s frames to the receiver; a framing error ends its reading (after the frames before it). */
  private deliver(chunk: Uint8Array, receiver: FrameReceiver): void {
    const frames: Array<string> = []
    this.decode(chunk, frames)
    if (frames.length > 0) receiver.frames(frames)
    if (!this.readable()) {
      this.pause()
      this.endReceiver(receiver)
    }
  }

  /** Tells the receiver that reading ended, once, when it has. */
  private endReceiver(receiver: FrameReceiver): void {
    const failure = this.failure
    if (failure === undefined || this.receiverEnded) return
    this.receiverEnded = true
    receiver.ended(failure)
  }

  /** The socket ended or closed: a waiting reader gets what is left, then the failure. */
  private wake(): void {
    const receiver = this.receiver
    if (receiver !== undefined) {
      // A paused receiver hears of it after the chunks still held (`resumeReading`).
      if (!this.receivePaused && this.held === undefined) this.endReceiver(receiver)
      return
    }
    const resume = this.waiting
    if (resume === undefined) return
    const result = this.poll()
    if (result === undefined) return
    this.waiting = undefined
    resume(settle(result))
  }

  /** Made on first use and kept: a reader takes it once per batch, and needs no new one each time. */
  private readEffect: Connection["read"] | undefined = undefined

  get read(): Connection["read"] {
    return this.readEffect ??= Effect.callback<ReadonlyArray<string>, ConnectionError>((resume) => {
      const result = this.poll()
      if (result !== undefined) return resume(settle(result))
      this.waiting = resume
      return Effect.sync(() => {
        if (this.waiting === resume) this.waiting = undefined
      })
    })
  }

  receive(receiver: FrameReceiver): void {
    if (this.receiver !== undefined) return
    this.receiver = receiver
    // Chunks that came before (while the owner was not reading) go first.
    this.resumeReading()
  }

  pauseReading(): void {
    if (this.receiver === undefined) return
    this.receivePaused = true
    this.pause()
  }

  resumeReading(): void {
    const receiver = this.receiver
    if (receiver === undefined) return
    this.receivePaused = false
    const held = this.held
    if (held !== undefined) {
      // The receiver may pause again while it handles one of them.
      while (!this.receivePaused && this.readable()) {
        const chunk = held.shift()
        if (chunk === undefined) break
        this.deliver(chunk, receiver)
      }
      if (held.length > 0 && this.readable()) return
      this.held = undefined
    }
    if (this.receivePaused) return
    if (this.failure !== undefined) return this.endReceiver(receiver)
    if (this.paused) {
      this.paused = false
      this.raw.resume()
    }
  }

  write(frames: ReadonlyArray<OutFrame>): Effect.Effect<void, ConnectionClosed> | undefined {
    if (frames.length === 0) return undefined
    const raw = this.raw
    if (raw.destroyed || raw.writableEnded) {
      // Refused: none of it was handed over, and `unfinishedWrite` must say so (0), or its
      // owner would count the batch as written and lose it.
      this.pending = { frames, bytes: 0 }
      return Effect.fail(new ConnectionClosed({ clean: false, cause: "socket is closed" }))
    }
    // One buffer per batch: one write, one syscall in the common case.
    const scratch = this.scratch
    const buffer = scratch === undefined ? encodeFrames(frames) : encodeFramesInto(frames, scratch)
    // This write's outcome is kept if it comes before anyone waits for it (the waiter may be a
    // fiber started later); the next write takes the slot over.
    const number = ++this.writesStarted
    this.pendingNumber = number
    this.pendingSettled = false
    this.pendingError = undefined
    raw.write(buffer, this.onWritten ??= (error) => this.calledBack(error))
    // The kernel took all of it at once (the common case): complete now, not a tick later. The
    // scratch buffer is free again; otherwise the socket keeps it until the write completes.
    if (raw.writableLength === 0) return undefined
    scratch?.lent()
    const batch = { frames, bytes: buffer.length }
    this.pending = batch
    return Effect.callback<void, ConnectionClosed>((resume) => {
      let settled = false
      const onClose = () => finish(new Error("socket closed while writing"))
      const finish = (error: Error | null | undefined) => {
        if (settled) return
        settled = true
        if (this.pendingDone === finish) this.pendingDone = undefined
        raw.off("close", onClose)
        // A failed write stays pending: `unfinishedWrite` still tells how far it got.
        if (error !== null && error !== undefined) {
          return resume(Effect.fail(new ConnectionClosed({ clean: false, cause: error })))
        }
        if (this.pending === batch) this.pending = undefined
        resume(Effect.void)
      }
      if (this.pendingNumber === number && this.pendingSettled) return finish(this.pendingError)
      if (raw.destroyed) return finish(new Error("socket closed while writing"))
      this.pendingDone = finish
      raw.on("close", onClose)
      return Effect.sync(() => {
        if (this.pendingDone === finish) this.pendingDone = undefined
        raw.off("close", onClose)
      })
    })
  }

  /** Node called back for the next write in order: the one not completed at once, if it is that one. */
  private calledBack(error: Error | null | undefined): void {
    const number = ++this.writesCalledBack
    if (number !== this.pendingNumber) return
    this.pendingSettled = true
    this.pendingError = error
    this.pendingDone?.(error)
  }

  writeAll(frames: ReadonlyArray<OutFrame>): Effect.Effect<void, ConnectionClosed> {
    return Effect.suspend(() => this.write(frames) ?? Effect.void)
  }

  unfinishedWrite(): number | undefined {
    const pending = this.pending
    if (pending === undefined) return undefined
    // What the kernel has not taken yet is libuv's write queue (`writeQueueSize`), the rest of
    // the batch reached the socket. Node does not document the field; without it, count
    // nothing as written: the owner then resends rather than loses.
    const handle: unknown = Reflect.get(this.raw, "_handle")
    const queued = typeof handle === "object" && handle !== null && "writeQueueSize" in handle &&
        typeof handle.writeQueueSize === "number"
      ? handle.writeQueueSize
      : pending.bytes
    return framesWithin(pending.frames, pending.bytes - queued)
  }

  readProgress(): ReadProgress {
    return {
      frames: this.framesRead,
      pending: this.decoder.buffered,
      reading: this.waiting !== undefined || (this.receiver !== undefined && !this.receivePaused)
    }
  }

  readPending(): number {
    return this.decoder.buffered
  }

  get end(): Effect.Effect<void> {
    return Effect.sync(() => {
      if (!this.raw.destroyed) this.raw.end()
    })
  }

  get destroy(): Effect.Effect<void> {
    return Effect.sync(() => {
      this.raw.destroy()
    })
  }
}

/** The socket's property naming its `SocketConnection`, for the shared listeners. */
const OWNER: unique symbol = Symbol("effect-intercom/transport/SocketConnection")

function onData(this: unknown, chunk: unknown): void {
  const connection = SocketConnection.of(this)
  if (connection !== undefined) SocketConnection.data(connection, chunk)
}

function onEnd(this: unknown): void {
  const connection = SocketConnection.of(this)
  if (connection !== undefined) SocketConnection.ended(connection, true)
}

function onClose(this: unknown, hadError: boolean): void {
  const connection = SocketConnection.of(this)
  if (connection !== undefined) SocketConnection.ended(connection, !hadError)
}

function onError(this: unknown, cause: Error): void {
  const connection = SocketConnection.of(this)
  if (connection !== undefined) SocketConnection.failed(connection, cause)
}

/** Options of `socketConnection` and `fromNetSocket`. */
export interface SocketConnectionOptions {
  /** Process-unique number, for logs. */
  readonly id?: number
  /** The largest frame read; a larger one ends reading with `FrameTooLarge`. */
  readonly maxFrameBytes?: number
  /** A framing buffer shared by a listener's connections. */
  readonly scratch?: FrameScratch
}

/**
 * Wraps an open `net.Socket` as a `Connection` owned by the caller, who
 * destroys it (`fromNetSocket` ties it to a Scope instead).
 */
export const socketConnection = (raw: net.Socket, options: SocketConnectionOptions = {}): Connection =>
  new SocketConnection(raw, options.id ?? 0, options.maxFrameBytes ?? MAX_FRAME_BYTES, options.scratch)

/**
 * Wraps an open `net.Socket` as a `Connection`. Closing the current Scope
 * destroys the socket. With a `scratch` (a listener shares one among its
 * connections), batches are framed into a reused buffer instead of a new one
 * per write.
 */
export const fromNetSocket = (
  raw: net.Socket,
  options: SocketConnectionOptions = {}
): Effect.Effect<Connection, never, Scope.Scope> =>
  Effect.map(
    Effect.addFinalizer(() => Effect.sync(() => raw.destroy())),
    () => socketConnection(raw, options)
  )
