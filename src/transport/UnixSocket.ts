/**
 * The Unix-domain-socket transport: a listener that hands each accepted socket
 * to a handler as a `Connection`, and a dialer for clients, over a `net.Server`
 * we own (the broker controls the socket file: stale-file recovery, mode 0600).
 *
 * The socket adapter is deliberately small. A broker holds thousands of idle
 * connections, and per connection the general-purpose `effect/socket` adapter
 * keeps dozens of closures, a latch and scope finalizers (measured at ~28 KiB a
 * session in total; see docs/performance.md). This one keeps the socket in
 * paused mode — nothing is read until `read` asks, so a slow consumer
 * backpressures its peer through the kernel — and resumes one waiting reader
 * from the `readable` event.
 *
 * Size: about 400 lines for one concept, the socket's two directions (the
 * listener with its socket-file recovery, the dialer, and the one adapter
 * both share); the frame codec is framing.ts's.
 */
import { Data, Effect, FiberSet, Queue, type Scope } from "effect"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as net from "node:net"
import { errorCode } from "../config/errno.ts"
import { MAX_FRAME_BYTES } from "../protocol/constants.ts"
import { encodeFrames, encodeFramesInto, FrameDecoder, FrameScratch } from "../protocol/framing.ts"
import { type Connection, ConnectionClosed, type ConnectionError } from "./Connection.ts"

type ReadResult = ReadonlyArray<string> | ConnectionError
type Resume = (effect: Effect.Effect<ReadonlyArray<string>, ConnectionError>) => void

/** How many leading frames of a batch lie wholly within its first `bytes` bytes on the wire. */
const framesWithin = (frames: ReadonlyArray<string>, bytes: number): number => {
  let end = 0
  for (let i = 0; i < frames.length; i++) {
    end += 4 + Buffer.byteLength(frames[i]!)
    if (end > bytes) return i
  }
  return frames.length
}

const isReadError = (result: ReadResult): result is ConnectionError => !Array.isArray(result)

const settle = (result: ReadResult): Effect.Effect<ReadonlyArray<string>, ConnectionError> =>
  isReadError(result) ? Effect.fail(result) : Effect.succeed(result)

/**
 * Wraps an open `net.Socket` as a `Connection`. Closing the current Scope
 * destroys the socket. With a `scratch` (a listener shares one among its
 * connections), batches are framed into a reused buffer instead of a new one
 * per write.
 */
export const fromNetSocket = (
  raw: net.Socket,
  options: { readonly id?: number; readonly maxFrameBytes?: number; readonly scratch?: FrameScratch } = {}
): Effect.Effect<Connection, never, Scope.Scope> =>
  Effect.gen(function*() {
    yield* Effect.addFinalizer(() => Effect.sync(() => raw.destroy()))
    const decoder = new FrameDecoder(options.maxFrameBytes ?? MAX_FRAME_BYTES)
    let failure: ConnectionError | undefined
    let waiting: Resume | undefined

    /** Frames available now, the terminal error once nothing is left, or undefined: wait. */
    let framesRead = 0
    const poll = (): ReadResult | undefined => {
      const frames: Array<string> = []
      if (failure === undefined || failure._tag === "ConnectionClosed") {
        let chunk: unknown
        while (frames.length === 0 && (chunk = raw.read()) !== null) {
          if (!(chunk instanceof Uint8Array)) continue
          const before = frames.length
          const tooLarge = decoder.push(chunk, frames)
          framesRead += frames.length - before
          if (tooLarge !== undefined) failure = tooLarge // frames decoded before it are still delivered
        }
      }
      if (frames.length > 0) return frames
      return failure
    }
    const wake = () => {
      const resume = waiting
      if (resume === undefined) return
      const result = poll()
      if (result === undefined) return
      waiting = undefined
      resume(settle(result))
    }
    raw.on("readable", wake)
    raw.once("end", () => {
      failure ??= new ConnectionClosed({ clean: true })
      wake()
    })
    raw.once("close", (hadError) => {
      failure ??= new ConnectionClosed({ clean: !hadError })
      wake()
    })
    raw.on("error", (cause) => {
      failure ??= new ConnectionClosed({ clean: false, cause })
    })

    const read: Connection["read"] = Effect.callback<ReadonlyArray<string>, ConnectionError>((resume) => {
      const result = poll()
      if (result !== undefined) return resume(settle(result))
      waiting = resume
      return Effect.sync(() => {
        if (waiting === resume) waiting = undefined
      })
    })

    /** The batch whose write has not completed, if any (one at a time; see `writeAll`). */
    let pending: { readonly frames: ReadonlyArray<string>; readonly bytes: number } | undefined

    const write: Connection["write"] = (frames) => {
      if (frames.length === 0) return undefined
      if (raw.destroyed || raw.writableEnded) {
        // Refused: none of it was handed over, and `unfinishedWrite` must say so (0), or its
        // owner would count the batch as written and lose it.
        pending = { frames, bytes: 0 }
        return Effect.fail(new ConnectionClosed({ clean: false, cause: "socket is closed" }))
      }
      // One buffer per batch: one write, one syscall in the common case.
      const scratch = options.scratch
      const buffer = scratch === undefined ? encodeFrames(frames) : encodeFramesInto(frames, scratch)
      const batch = { frames, bytes: buffer.length }
      // The write's outcome, kept if it comes before anyone waits for it (the waiter may be a
      // fiber started later).
      let settled = false
      let outcome: Error | null | undefined
      let done: ((error: Error | null | undefined) => void) | undefined
      raw.write(buffer, (error) => {
        if (settled) return
        settled = true
        outcome = error
        done?.(error)
      })
      // The kernel took all of it at once (the common case): complete now, not a tick later. The
      // scratch buffer is free again; otherwise the socket keeps it until the write completes.
      if (raw.writableLength === 0) return undefined
      scratch?.lent()
      pending = batch
      return Effect.callback<void, ConnectionClosed>((resume) => {
        const onClose = () => finish(new Error("socket closed while writing"))
        const finish = (error: Error | null | undefined) => {
          settled = true
          done = undefined
          raw.off("close", onClose)
          // A failed write stays pending: `unfinishedWrite` still tells how far it got.
          if (error !== null && error !== undefined) {
            return resume(Effect.fail(new ConnectionClosed({ clean: false, cause: error })))
          }
          if (pending === batch) pending = undefined
          resume(Effect.void)
        }
        if (settled) return finish(outcome)
        if (raw.destroyed) return finish(new Error("socket closed while writing"))
        done = finish
        raw.on("close", onClose)
        return Effect.sync(() => {
          done = undefined
          raw.off("close", onClose)
        })
      })
    }

    const writeAll: Connection["writeAll"] = (frames) => Effect.suspend(() => write(frames) ?? Effect.void)

    const unfinishedWrite: Connection["unfinishedWrite"] = () => {
      if (pending === undefined) return undefined
      // What the kernel has not taken yet is libuv's write queue (`writeQueueSize`), the rest of
      // the batch reached the socket. Node does not document the field; without it, count
      // nothing as written: the owner then resends rather than loses.
      const handle: unknown = Reflect.get(raw, "_handle")
      const queued = typeof handle === "object" && handle !== null && "writeQueueSize" in handle &&
          typeof handle.writeQueueSize === "number"
        ? handle.writeQueueSize
        : pending.bytes
      return framesWithin(pending.frames, pending.bytes - queued)
    }

    return {
      id: options.id ?? 0,
      trustedLocal: true,
      read,
      writeAll,
      write,
      unfinishedWrite,
      readProgress: () => ({ frames: framesRead, pending: decoder.buffered, reading: waiting !== undefined }),
      end: Effect.sync(() => {
        if (!raw.destroyed) raw.end()
      }),
      destroy: Effect.sync(() => raw.destroy())
    } satisfies Connection
  })

/** `serveUnix` could not listen on `path`; `code` is the errno code, e.g. `EADDRINUSE` or `EACCES`. */
export class ListenError extends Data.TaggedError("ListenError")<{
  readonly path: string
  readonly code: string
  readonly cause: unknown
}> {
  override get message(): string {
    return `Cannot listen on ${this.path}: ${this.code} (${String(this.cause)})`
  }
}

/** `dialUnix` could not connect to `path`; `ENOENT` or `ECONNREFUSED` mean no broker listens there. */
export class DialError extends Data.TaggedError("DialError")<{
  readonly path: string
  readonly code: string
  readonly cause: unknown
}> {
  override get message(): string {
    return this.code === "ENOENT" || this.code === "ECONNREFUSED"
      ? `No broker is listening on ${this.path} (${this.code})`
      : `Cannot connect to ${this.path}: ${this.code}`
  }
}

/** A file's identity: the same device and inode is the same file, whatever its name now. */
interface FileIdentity {
  readonly dev: number
  readonly ino: number
}

const sameFile = (a: FileIdentity | undefined, b: FileIdentity): boolean =>
  a !== undefined && a.dev === b.dev && a.ino === b.ino

const identityOf = (file: string): FileIdentity | undefined => {
  try {
    const { dev, ino } = fs.statSync(file)
    return { dev, ino }
  } catch {
    return undefined
  }
}

/**
 * Closes `server`, which makes libuv unlink the path it bound (`file`) —
 * whatever is there by then. Only our own socket file may go: a file
 * another process put at `file` meanwhile is given a second, private name
 * first and put back right after, in the same synchronous step (other
 * processes may find the path missing for those microseconds).
 *
 * (Binding a private name and linking the real one to it would spare this,
 * but the kernel would then report the private name as the socket's address
 * — in /proc/net/unix, ss, lsof — where `intercom broker stop` looks for the
 * broker's socket by its path.)
 */
const closeKeepingForeignFile = (server: net.Server, file: string, ours: FileIdentity, closed: () => void): void => {
  const current = identityOf(file)
  if (current === undefined || sameFile(current, ours)) {
    server.close(closed)
    return
  }
  const aside = `${file}.${randomBytes(6).toString("hex")}`
  try {
    fs.linkSync(file, aside)
  } catch {
    server.close(closed) // cannot keep it; a link beside it in our own 0700 dir does not fail
    return
  }
  try {
    server.close(closed)
  } finally {
    try {
      fs.renameSync(aside, file)
    } catch {
      fs.rmSync(aside, { force: true })
    }
  }
}

/** A listening server and the identity of the socket file it made. */
interface Bound {
  readonly server: net.Server
  readonly ours: FileIdentity
}

/** What `serveUnix` gives its caller while it listens. */
export interface UnixListener {
  /** Whether the file at the path is still the socket this listener made: not deleted, not replaced. */
  readonly stillOurs: Effect.Effect<boolean>
}

/**
 * Listens on `path` for as long as the current Scope is open and runs
 * `handle` for every accepted connection, each in its own Scope and fiber.
 * Closing the Scope stops accepting, interrupts the handlers (destroying their
 * sockets) and closes the server. The socket file is created with mode 0600.
 *
 * The file at `path` is this listener's only while it is the socket it made
 * (the device and inode recorded right after listening), and only then is
 * it removed at close: a socket another process put there meanwhile stays
 * (see `closeKeepingForeignFile`). `stillOurs` says whether it is ours now.
 *
 * A leftover socket file makes it fail with `EADDRINUSE` (`runBroker` in
 * `effect-intercom/broker` removes a stale one and listens again).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { dialUnix, serveUnix } from "effect-intercom/transport"
 *
 * const echo = Effect.scoped(Effect.gen(function*() {
 *   // Writes back every batch it reads, for as long as this Scope is open.
 *   yield* serveUnix("/tmp/echo.sock", (connection) =>
 *     connection.read.pipe(Effect.flatMap(connection.writeAll), Effect.forever, Effect.ignore))
 *   const connection = yield* dialUnix("/tmp/echo.sock")
 *   yield* connection.writeAll([JSON.stringify({ type: "health", requestId: "r1" })])
 *   const frames = yield* connection.read // ['{"type":"health","requestId":"r1"}']
 * }))
 * ```
 */
export const serveUnix = <R>(
  path: string,
  handle: (connection: Connection) => Effect.Effect<void, never, R | Scope.Scope>,
  options: { readonly maxFrameBytes?: number; readonly backlog?: number } = {}
): Effect.Effect<UnixListener, ListenError, R | Scope.Scope> =>
  Effect.gen(function*() {
    const accepted = yield* Queue.unbounded<net.Socket>()
    // Every accepted socket until it closes: shutdown destroys them all, including
    // ones still queued or whose handler never started (a paused socket's close
    // would otherwise never be noticed, and server.close would wait forever).
    const open = new Set<net.Socket>()
    const listenError = (cause: unknown, code = errorCode(cause) ?? "UNKNOWN") => new ListenError({ path, code, cause })
    const { server, ours } = yield* Effect.acquireRelease(
      Effect.callback<Bound, ListenError>((resume) => {
        const server = net.createServer({ pauseOnConnect: true }, (socket) => {
          open.add(socket)
          socket.pause()
          socket.once("close", () => open.delete(socket))
          Queue.offerUnsafe(accepted, socket)
        })
        const onError = (cause: Error) => {
          server.close()
          resume(Effect.fail(listenError(cause)))
        }
        server.once("error", onError)
        // Files are created 0600 from the start; chmod below makes it explicit.
        const previous = process.umask(0o177)
        try {
          server.listen({ path, backlog: options.backlog ?? 4096 }, () => {
            server.off("error", onError)
            const ours = identityOf(path)
            if (ours !== undefined) return resume(Effect.succeed({ server, ours }))
            server.close()
            resume(Effect.fail(listenError(new Error("the socket file vanished as it was created"), "ENOENT")))
          })
        } finally {
          process.umask(previous)
        }
      }),
      ({ server, ours }) =>
        Effect.callback<void>((resume) => {
          // A crash leaves the file, which the next start removes after a failed health probe.
          closeKeepingForeignFile(server, path, ours, () => resume(Effect.void))
          for (const socket of open) socket.destroy()
        })
    )
    server.on("error", (cause) => {
      // After listening, server errors (EMFILE on accept) are transient: log and keep serving.
      console.error(`intercom: accept failed on ${path}: ${String(cause)}`)
    })
    yield* Effect.sync(() => fs.chmodSync(path, 0o600))
    const handlers = yield* FiberSet.make()
    let connections = 0
    // One framing buffer for every connection's writes (they run one at a time, on one thread).
    const scratch = new FrameScratch()
    yield* Effect.forkScoped(Effect.forever(
      Effect.flatMap(Queue.take(accepted), (raw) =>
        FiberSet.run(
          handlers,
          Effect.scoped(Effect.flatMap(fromNetSocket(raw, { ...options, id: ++connections, scratch }), handle))
        )),
      { disableYield: true }
    ))
    return { stillOurs: Effect.sync(() => sameFile(identityOf(path), ours)) } satisfies UnixListener
  })

/**
 * Connects a raw `net.Socket` to `path`, living in the current Scope (closing
 * it destroys the socket). `dialUnix` wraps it as a `Connection`; tests that
 * speak the wire protocol byte by byte use it directly.
 */
export const connectUnixSocket = (
  path: string,
  options: { readonly allowHalfOpen?: boolean } = {}
): Effect.Effect<net.Socket, DialError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.callback<net.Socket, DialError>((resume) => {
      const socket = net.createConnection({ path, allowHalfOpen: options.allowHalfOpen ?? false })
      const onError = (cause: Error) => {
        socket.destroy()
        resume(Effect.fail(new DialError({ path, code: errorCode(cause) ?? "UNKNOWN", cause })))
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

/**
 * Dials the socket at `path` and returns an open `Connection` living in the
 * current Scope. For an example, see `serveUnix`; a client normally dials
 * through `IntercomClient`, which also registers.
 */
export const dialUnix = (
  path: string,
  options: { readonly maxFrameBytes?: number } = {}
): Effect.Effect<Connection, DialError, Scope.Scope> =>
  Effect.flatMap(connectUnixSocket(path), (raw) => fromNetSocket(raw, options))
