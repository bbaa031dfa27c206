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
import { socketPathLimit } from "../config/socketPath.ts"
import { FrameScratch } from "../protocol/framing.ts"
import type { Adopter, Connection } from "./Connection.ts"
import { privateSocketPath } from "./privateName.ts"
import { fromNetSocket, socketConnection } from "./SocketConnection.ts"

export { fromNetSocket, socketConnection } from "./SocketConnection.ts"

/** `serveUnix` could not listen on `path`; `code` is the errno code, e.g. `EADDRINUSE` or `EACCES`. */
export class ListenError extends Data.TaggedError("ListenError")<{
  readonly path: string
  readonly code: string
  readonly cause: unknown
}> {
  /** Why, without the path: `EACCES, its directory does not exist …`, for a caller that names the path itself. */
  get reason(): string {
    // The system's own text names the private name bound first (privateName.ts), a file the user never sees.
    const why = LISTEN_FAILURES[this.code]
    return why === undefined ? `${this.code} (${String(this.cause)})` : `${this.code}, ${why}`
  }

  override get message(): string {
    return `Cannot listen on ${this.path}: ${this.reason}`
  }
}

/** What the usual `listen` failures mean for the socket path. */
const LISTEN_FAILURES: Readonly<Record<string, string>> = {
  // libuv reports a missing directory as EACCES too.
  EACCES: "its directory does not exist or is not writable by this user",
  EPERM: "not permitted: its directory is not writable by this user",
  EADDRINUSE: "a file is already there",
  ENOENT: "its directory does not exist",
  ENOTDIR: "a part of its directory path is not a directory",
  EROFS: "its directory is on a read-only file system",
  // Ours (listenReplacingStale, staleSocket.ts), not the system's.
  NOT_A_SOCKET: "something that is not a socket is there, and was left alone: move it away"
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

/**
 * The identity of the file at `file`, `undefined` when there is none: the
 * file a symlink there points to, or with `entry` the directory entry itself.
 */
const identityOf = (file: string, entry = false): FileIdentity | undefined => {
  try {
    const { dev, ino } = entry ? fs.lstatSync(file) : fs.statSync(file)
    return { dev, ino }
  } catch {
    return undefined
  }
}

/**
 * Gives the socket just bound at `bound` (its private name, privateName.ts)
 * the real name `file` — a hard link, which fails with EEXIST (reported as
 * `EADDRINUSE`, as a bind there would) rather than replace what is there —
 * and removes the private name, all in the caller's synchronous step.
 * Returns the socket file's identity, or why it failed.
 */
const linkRealName = (
  bound: string,
  file: string
): FileIdentity | { readonly code: string; readonly cause: unknown } => {
  try {
    fs.linkSync(bound, file)
    return identityOf(bound) ??
      { code: "ENOENT", cause: new Error("the socket file vanished as it was created") }
  } catch (cause) {
    const code = errorCode(cause)
    return { code: code === "EEXIST" ? "EADDRINUSE" : code ?? "UNKNOWN", cause }
  } finally {
    fs.rmSync(bound, { force: true })
  }
}

/**
 * Removes `file` if it is our socket file (`ours`), and never a file another
 * process put there: a file is only ever taken away whole, by an atomic
 * rename to a random name beside it, and looked at there. Ours is removed; a
 * foreign one (put at `file` between the first look and the rename) is
 * linked back, which fails rather than replace a still newer file at `file`
 * (the one taken aside is then dropped, as that newer file superseded it).
 * Only in that double race can another process find `file` missing, for
 * the microseconds between the rename and the link.
 */
const removeIfOurs = (file: string, ours: FileIdentity): void => {
  if (!sameFile(identityOf(file, true), ours)) return // deleted, or someone else's: not ours to remove
  const aside = `${file}.${randomBytes(6).toString("hex")}`
  try {
    fs.renameSync(file, aside)
  } catch {
    return // gone meanwhile
  }
  if (!sameFile(identityOf(aside, true), ours)) {
    try {
      fs.linkSync(aside, file)
    } catch {
      // a newer file is at `file` now
    }
  }
  fs.rmSync(aside, { force: true })
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
 * it removed at close: a socket another process put there meanwhile stays,
 * however close to the close it came. For that the server binds a private
 * name beside `path` (privateName.ts: the one libuv unlinks at close), links
 * `path` to it and removes the private name, in one synchronous step; the
 * kernel reports the private name as the socket's address. `stillOurs` says
 * whether the file at `path` is ours now.
 *
 * A file at `path` makes it fail with `EADDRINUSE`, and leaves that file as
 * it was (`runBroker` in `effect-intercom/broker` removes a stale one and
 * listens again). It fails with `ENAMETOOLONG` when the private name, at
 * most 11 bytes of file name, does not fit in a socket address where `path`
 * does (a short file name close to the limit).
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
        const bound = privateSocketPath(path, process.pid)
        const limit = socketPathLimit(process.platform)
        if (Buffer.byteLength(bound, "utf8") > limit) {
          const why = `it binds ${bound} first, longer than a Unix socket address (${limit} bytes): ` +
            "give the socket a longer file name"
          return resume(Effect.fail(listenError(new Error(why), "ENAMETOOLONG")))
        }
        // A file there is a leftover of a process that had our pid and died within the step that names it.
        try {
          fs.rmSync(bound, { force: true })
        } catch {
          // not a file (a directory): the bind below fails and says why
        }
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
          // `exclusive`: bound here, in this synchronous step (never through a cluster primary), so the
          // private name exists only until linkRealName removes it below, before anything else runs.
          server.listen({ path: bound, backlog: options.backlog ?? 4096, exclusive: true })
        } finally {
          process.umask(previous)
        }
        const listening = () => {
          server.off("error", onError)
          const ours = linkRealName(bound, path)
          if ("ino" in ours) return resume(Effect.succeed({ server, ours }))
          server.close()
          resume(Effect.fail(listenError(ours.cause, ours.code)))
        }
        // Not listening yet: the error event follows, or (were a Node to bind later) the listening one.
        if (server.listening) listening()
        else server.once("listening", listening)
      }),
      ({ server, ours }) =>
        Effect.callback<void>((resume) => {
          // A crash leaves the file, which the next start removes after a failed health probe.
          removeIfOurs(path, ours)
          // libuv unlinks the name it bound: the private one, long gone, never a file another process put at `path`.
          server.close(() => resume(Effect.void))
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
