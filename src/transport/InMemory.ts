/**
 * The in-memory transport: a `Connection` pair joined by two bounded queues,
 * so the real broker and client run unchanged inside one process, driven by
 * TestClock. The queues' capacity plays the kernel socket buffer: a peer that
 * stops reading eventually blocks its writer, as over a Unix socket. Like a
 * socket it takes one write at a time: a write started while an earlier one
 * still waits is a defect of its caller, and dies (a socket would leave the
 * earlier waiter hanging).
 */
import { Cause, Effect, Queue, type Scope } from "effect"
import { MAX_FRAME_BYTES } from "../protocol/constants.ts"
import { FrameTooLarge, frameBytes, frameText } from "../protocol/framing.ts"
import { type Connection, ConnectionClosed } from "./Connection.ts"

/** Options of `makeInMemoryPair` (and of `makeInMemoryNetwork`'s connections). */
export interface InMemoryPairOptions {
  /** Frames each direction buffers before a writer waits. Default 256. */
  readonly capacity?: number
  /** The largest frame a reader accepts; a larger one fails its `read` with `FrameTooLarge`. Default 1 MiB. */
  readonly maxFrameBytes?: number
  /** Connection ids for logs; defaults count from 1 per pair. */
  readonly ids?: readonly [number, number]
}

/** What travels in one direction: frames, or the end of the stream. */
type Wire = Queue.Queue<string, Cause.Done | ConnectionClosed>

const endpoint = (
  id: number,
  inbound: Wire,
  outbound: Wire,
  maxFrameBytes: number
): Connection => {
  const read: Connection["read"] = Queue.takeAll(inbound).pipe(
    Effect.catchIf(Cause.isDone, () => Effect.fail(new ConnectionClosed({ clean: true }))),
    Effect.flatMap((frames) => {
      // An oversize frame is refused by its reader, as the Unix splitter does.
      for (const frame of frames) {
        const size = frameBytes(frame)
        if (size > maxFrameBytes) return Effect.fail(new FrameTooLarge({ size, limit: maxFrameBytes }))
      }
      return Effect.succeed(frames)
    })
  )
  /** The write that has not completed, and how many of its frames are in the peer's buffer. */
  let pending: { written: number } | undefined
  const peerGone = () => new ConnectionClosed({ clean: false, cause: "peer gone" })
  // Frame by frame, as a socket takes bytes: a write that meets a full buffer is partly
  // flushed, and `unfinishedWrite` tells how far it got (what a dying writer must take back).
  /** A write's rest is being waited for: a socket keeps one such waiter, so a second write now is a caller's bug. */
  let waiting = false
  const write: Connection["write"] = (frames) => {
    if (waiting) return Effect.die(new Error("Connection.write while an earlier write still waits: one write at a time (Connection.ts)"))
    const progress = { written: 0 }
    // A frame in parts travels as its text.
    while (progress.written < frames.length && Queue.offerUnsafe(outbound, frameText(frames[progress.written]!))) {
      progress.written++
    }
    if (progress.written === frames.length) return undefined
    pending = progress
    return Effect.gen(function*() {
      waiting = true
      while (progress.written < frames.length) {
        if (!(yield* Queue.offer(outbound, frameText(frames[progress.written]!)))) return yield* Effect.fail(peerGone())
        progress.written++
      }
      if (pending === progress) pending = undefined
    }).pipe(Effect.ensuring(Effect.sync(() => {
      waiting = false
    })))
  }
  const writeAll: Connection["writeAll"] = (frames) => Effect.suspend(() => write(frames) ?? Effect.void)
  return {
    id,
    trustedLocal: true,
    read,
    writeAll,
    write,
    unfinishedWrite: () => pending?.written,
    // Frames travel whole in memory: nothing is ever half read.
    readProgress: () => ({ frames: 0, pending: 0, reading: false }),
    readPending: () => 0,
    end: Effect.asVoid(Queue.end(outbound)),
    // As a socket: what this side wrote stays readable by the peer, then the peer
    // sees the end; what this side had not read is dropped, and a peer write still
    // waiting for room fails (EPIPE) instead of waiting forever.
    destroy: Effect.sync(() => {
      const closed = new ConnectionClosed({ clean: false, cause: "connection destroyed" })
      Queue.failCauseUnsafe(outbound, Cause.fail(closed))
      Queue.failCauseUnsafe(inbound, Cause.fail(closed))
      Queue.shutdownUnsafe(inbound)
    })
  }
}

/**
 * Two connected endpoints, each owned by whoever holds it: nothing destroys
 * either but its holder. A dialler's end goes with the dialler's Scope and
 * the accepted end with its acceptor (InMemoryNetwork.ts), as the two
 * sockets of a connection do: one side closing leaves what it wrote
 * readable by the other, then the end.
 */
export const makeInMemoryEndpoints = (
  options: InMemoryPairOptions = {}
): Effect.Effect<readonly [Connection, Connection]> =>
  Effect.gen(function*() {
    const capacity = options.capacity ?? 256
    const maxFrameBytes = options.maxFrameBytes ?? MAX_FRAME_BYTES
    const aToB: Wire = yield* Queue.bounded<string, Cause.Done | ConnectionClosed>(capacity)
    const bToA: Wire = yield* Queue.bounded<string, Cause.Done | ConnectionClosed>(capacity)
    const [idA, idB] = options.ids ?? [1, 2]
    return [endpoint(idA, bToA, aToB, maxFrameBytes), endpoint(idB, aToB, bToA, maxFrameBytes)] as const
  })

/**
 * Two connected endpoints: what one writes, the other reads. Closing the
 * Scope destroys both.
 */
export const makeInMemoryPair = (
  options: InMemoryPairOptions = {}
): Effect.Effect<readonly [Connection, Connection], never, Scope.Scope> =>
  Effect.gen(function*() {
    const [a, b] = yield* makeInMemoryEndpoints(options)
    yield* Effect.addFinalizer(() => Effect.andThen(a.destroy, b.destroy))
    return [a, b] as const
  })

