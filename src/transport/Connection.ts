/**
 * A connection as the broker and client see it: frames in, frames out, close.
 * Frames are whole payload texts (UTF-8 JSON); how they are split and framed on
 * the wire is the transport's business. The Unix-socket transport and the
 * in-memory transport both implement this, so the same broker code runs on both.
 */
import { Data, type Effect } from "effect"
import type { FramingError, OutFrame } from "../protocol/framing.ts"

/** The peer went away, or the transport failed. `clean` is an orderly end of stream. */
export class ConnectionClosed extends Data.TaggedError("ConnectionClosed")<{
  readonly clean: boolean
  readonly cause?: unknown
}> {
  override get message(): string {
    return this.clean ? "Connection closed by peer" : `Connection failed: ${String(this.cause)}`
  }
}

/** Why `read` failed: the connection is gone, or its bytes are not frames (too large, not UTF-8). */
export type ConnectionError = ConnectionClosed | FramingError

/** See `Connection.readProgress`. */
export interface ReadProgress {
  /** Frames completed so far. */
  readonly frames: number
  /** Bytes of a frame begun but not complete. */
  readonly pending: number
  /**
   * Whether the owner is waiting in `read` for more bytes. A frame left
   * incomplete while its owner does not read (a held-back sender, whose
   * socket the broker stops reading) is not the writer's stall.
   */
  readonly reading: boolean
}

/**
 * Takes a connection's inbound frames as the transport gets them, in plain
 * synchronous code (`Connection.receive`, or a fiber reading for it:
 * `receiveFrames` in receive.ts).
 */
export interface FrameReceiver {
  /** A batch of frames (at least one), in arrival order. */
  readonly frames: (frames: ReadonlyArray<string>) => void
  /**
   * Reading ended, after the last batch: the connection closed, or its bytes
   * are not frames (too large, not UTF-8). Called at most once.
   */
  readonly ended: (error: ConnectionError) => void
}

/**
 * One connection, whatever the transport: whole frame texts in and out, and
 * two ways to close. `serveUnix`/`dialUnix` and the in-memory network hand
 * them out, each living in a Scope whose closing destroys it. Only one
 * fiber may wait in `read` at a time. The function fields may be methods of
 * the connection (the Unix socket's are, to keep no closures per
 * connection): call them on it, do not detach them.
 */
export interface Connection {
  /** Process-unique number, for logs. */
  readonly id: number
  /** True when the transport is a local Unix socket guarded by file modes (P80). */
  readonly trustedLocal: boolean
  /**
   * Waits for the next batch of inbound frames (at least one), in arrival order.
   * Reading is paused between calls, so a slow caller backpressures the peer.
   */
  readonly read: Effect.Effect<ReadonlyArray<string>, ConnectionError>
  /**
   * Writes frames in order, batched into as few transport writes as possible,
   * and completes once every frame is handed over (for a socket: accepted by
   * the kernel). One write at a time: the caller waits before the next (a
   * socket keeps one waiter, so an overtaken writer would wait for ever; the
   * in-memory transport makes a second write a defect). A
   * frame may come in parts (`FrameParts`): the socket copies them into its
   * write buffer; a transport that carries texts takes `text()`.
   */
  readonly writeAll: (frames: ReadonlyArray<OutFrame>) => Effect.Effect<void, ConnectionClosed>
  /**
   * Starts writing frames as `writeAll` does, without waiting: `undefined`
   * when every frame was handed over at once (for a socket: the kernel took
   * them all, the common case), otherwise an Effect that completes once the
   * rest is, or fails. The caller runs that Effect before writing again; a
   * write that was refused (the connection is closed) is an Effect that fails.
   * It lets a writer that is not a fiber write synchronously, and take a fiber
   * only while the transport is full.
   */
  readonly write: (frames: ReadonlyArray<OutFrame>) => Effect.Effect<void, ConnectionClosed> | undefined
  /**
   * How many leading frames of the last `writeAll` that did not complete
   * (interrupted, failed, or still waiting for room) were fully handed over;
   * `undefined` when every write completed. The frames after them never reach
   * the peer, so their owner can take them back. Ask before `destroy`.
   */
  readonly unfinishedWrite: () => number | undefined
  /**
   * How far reading has got: frames completed so far, bytes of a frame
   * begun but not complete, and whether a `read` waits for more. A frame that
   * stays incomplete while reads wait (the same count, bytes still pending)
   * is a stalled writer — or a slowloris.
   */
  readonly readProgress: () => ReadProgress
  /**
   * `readProgress().pending` without building the record: bytes of a frame
   * begun but not complete. The broker's stall check asks every connection
   * every few seconds, and builds a progress record only for one in the
   * middle of a frame (Registration.closeStalledFrames).
   */
  readonly readPending: () => number
  /**
   * Optional: hands every inbound batch to `receiver` from the transport's
   * own events (for a socket: its `data` event), with no fiber waiting in
   * `read`. Called at most once; `read` is not used after it. Frames that
   * came before it are handed over at once, before it returns.
   * `pauseReading` and `resumeReading` stop and restart reading (a
   * receiver that holds back a sender); a batch may still come while
   * paused, from bytes the transport had already taken.
   */
  readonly receive?: (receiver: FrameReceiver) => void
  /** With `receive`: stops reading until `resumeReading` (backpressure through the transport). */
  readonly pauseReading?: () => void
  /** With `receive`: reading goes on (after `pauseReading`). */
  readonly resumeReading?: () => void
  /** Flushes what was written, then ends the connection (half-close, then close). */
  readonly end: Effect.Effect<void>
  /** Drops the connection at once, discarding unwritten data. */
  readonly destroy: Effect.Effect<void>
}

/**
 * A handler that takes each accepted connection over in plain code, with no
 * fiber or Scope per connection: it owns the connection from then on and
 * destroys it when done (the broker: `BrokerService.adopt`). Closing the
 * listener's Scope still destroys every connection it accepted. Both
 * listeners take one: `serveUnix` and the in-memory network's `listen`.
 */
export interface Adopter {
  readonly adopt: (connection: Connection) => void
}
