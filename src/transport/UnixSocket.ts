/**
 * The Unix-domain-socket transport: a listener that hands each accepted socket
 * to a handler as a `Connection`, and a dialer for clients, over a `net.Server`
 * we own (the broker controls the socket file: stale-file recovery, mode 0600).
 *
 * Each socket, accepted or dialled, becomes a `Connection` through the one
 * adapter both share (SocketConnection.ts); the frame codec is framing.ts's.
 */
import { Data, Effect, FiberSet, Queue, type Scope } from "effect"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as net from "node:net"
import { errorCode } from "../config/errno.ts"
import { FrameScratch } from "../protocol/framing.ts"
import type { Adopter, Connection } from "./Connection.ts"
import { fromNetSocket, socketConnection } from "./SocketConnection.ts"

export { fromNetSocket, socketConnection } from "./SocketConnection.ts"

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
 * `handle` for every accepted connection, each in its own Scope and fiber
 * (or hands it to an `Adopter`, with neither).
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
 *     connection.read.pipe(Effect.flatMap((frames) => connection.writeAll(frames)), Effect.forever, Effect.ignore))
 *   const connection = yield* dialUnix("/tmp/echo.sock")
 *   yield* connection.writeAll([JSON.stringify({ type: "health", requestId: "r1" })])
 *   const frames = yield* connection.read // ['{"type":"health","requestId":"r1"}']
 * }))
 * ```
 */
export const serveUnix = <R>(
  path: string,
  handle: ((connection: Connection) => Effect.Effect<void, never, R | Scope.Scope>) | Adopter,
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
        // One listener for every socket (`this` is the socket), not a closure each.
        const forget = function(this: net.Socket) {
          open.delete(this)
        }
        const server = net.createServer({ pauseOnConnect: true }, (socket) => {
          open.add(socket)
          socket.pause()
          socket.on("close", forget)
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
    const run = (raw: net.Socket): Effect.Effect<unknown, never, R> => {
      if (typeof handle !== "function") {
        return Effect.sync(() => handle.adopt(socketConnection(raw, { ...options, id: ++connections, scratch })))
      }
      return FiberSet.run(
        handlers,
        Effect.scoped(Effect.flatMap(fromNetSocket(raw, { ...options, id: ++connections, scratch }), handle))
      )
    }
    yield* Effect.forkScoped(Effect.forever(Effect.flatMap(Queue.take(accepted), run), { disableYield: true }))
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
