/**
 * The Unix-domain-socket transport: a listener that hands each accepted socket
 * to a handler as a `Connection`, and a dialer for clients. Built on
 * `effect/socket` (paused-mode reads, so a slow consumer backpressures its peer;
 * corked batched writes) over a `net.Server` we own, because the broker must
 * control the socket file (stale-file recovery, mode 0600).
 */
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import { Data, Effect, FiberSet, Queue, Scope } from "effect"
import { Socket } from "effect/socket"
import * as fs from "node:fs"
import * as net from "node:net"
import { MAX_FRAME_BYTES } from "../protocol/constants.ts"
import { encodeFrames, FrameDecoder, type FrameTooLarge } from "../protocol/framing.ts"
import { type Connection, ConnectionClosed } from "./Connection.ts"

let nextConnectionId = 0

const toClosed = (error: Socket.SocketError): ConnectionClosed => {
  const reason = error.reason
  const clean = reason._tag === "SocketCloseError" && reason.code === 1000
  return new ConnectionClosed({ clean, cause: clean ? undefined : reason })
}

/**
 * Wraps an open `net.Socket` as a `Connection`. The reader and writer live in
 * the current Scope; closing it destroys the socket.
 */
export const fromNetSocket = (
  raw: net.Socket,
  options: { readonly maxFrameBytes?: number } = {}
): Effect.Effect<Connection, never, Scope.Scope> =>
  Effect.gen(function*() {
    const socket = yield* NodeSocket.fromDuplex(Effect.succeed(raw))
    const pull = yield* Socket.readerBytes(socket).pipe(Effect.orDie)
    const writer = yield* socket.writer
    yield* Effect.addFinalizer(() => Effect.sync(() => raw.destroy()))
    const decoder = new FrameDecoder(options.maxFrameBytes ?? MAX_FRAME_BYTES)

    const read: Connection["read"] = Effect.suspend(function loop(): Effect.Effect<
      ReadonlyArray<string>,
      ConnectionClosed | FrameTooLarge
    > {
      return Effect.flatMap(Effect.mapError(pull, toClosed), (chunks) => {
        const frames: Array<string> = []
        for (const chunk of chunks) {
          const error = decoder.push(chunk, frames)
          if (error !== undefined) return Effect.fail(error)
        }
        return frames.length > 0 ? Effect.succeed(frames) : loop()
      })
    })

    return {
      id: ++nextConnectionId,
      trustedLocal: true,
      read,
      writeAll: (frames) =>
        frames.length === 0 ? Effect.void : Effect.mapError(writer.write(encodeFrames(frames)), toClosed),
      end: Effect.sync(() => {
        if (!raw.destroyed) raw.end()
      }),
      destroy: Effect.sync(() => raw.destroy())
    } satisfies Connection
  })

export class ListenError extends Data.TaggedError("ListenError")<{
  readonly path: string
  readonly code: string
  readonly cause: unknown
}> {
  override get message(): string {
    return `Cannot listen on ${this.path}: ${this.code} (${String(this.cause)})`
  }
}

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

const errorCode = (cause: unknown): string =>
  typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string"
    ? cause.code
    : "UNKNOWN"

/**
 * Listens on `path` for as long as the current Scope is open and runs
 * `handle` for every accepted connection, each in its own Scope and fiber.
 * Closing the Scope stops accepting, interrupts the handlers (destroying their
 * sockets) and closes the server. The socket file is created with mode 0600.
 */
export const serveUnix = <R>(
  path: string,
  handle: (connection: Connection) => Effect.Effect<void, never, R | Scope.Scope>,
  options: { readonly maxFrameBytes?: number; readonly backlog?: number } = {}
): Effect.Effect<void, ListenError, R | Scope.Scope> =>
  Effect.gen(function*() {
    const accepted = yield* Queue.unbounded<net.Socket>()
    // Every accepted socket until it closes: shutdown destroys them all, including
    // ones still queued or whose handler never started (a paused socket's close
    // would otherwise never be noticed, and server.close would wait forever).
    const open = new Set<net.Socket>()
    const server: net.Server = yield* Effect.acquireRelease(
      Effect.callback<net.Server, ListenError>((resume) => {
        const server = net.createServer({ pauseOnConnect: true }, (socket) => {
          open.add(socket)
          socket.once("close", () => open.delete(socket))
          Queue.offerUnsafe(accepted, socket)
        })
        const onError = (cause: Error) => {
          server.close()
          resume(Effect.fail(new ListenError({ path, code: errorCode(cause), cause })))
        }
        server.once("error", onError)
        // Files are created 0600 from the start; chmod below makes it explicit.
        const previous = process.umask(0o177)
        try {
          server.listen({ path, backlog: options.backlog ?? 4096 }, () => {
            server.off("error", onError)
            resume(Effect.succeed(server))
          })
        } finally {
          process.umask(previous)
        }
      }),
      (server) =>
        Effect.callback<void>((resume) => {
          server.close(() => resume(Effect.void))
          for (const socket of open) socket.destroy()
          // Unlinking here is what a clean close does; a crash leaves the file,
          // which the next start removes after a failed health probe.
          fs.rmSync(path, { force: true })
        })
    )
    server.on("error", (cause) => {
      // After listening, server errors (EMFILE on accept) are transient: log and keep serving.
      console.error(`intercom: accept failed on ${path}: ${String(cause)}`)
    })
    yield* Effect.sync(() => fs.chmodSync(path, 0o600))
    const handlers = yield* FiberSet.make()
    yield* Effect.forkScoped(Effect.forever(
      Effect.flatMap(Queue.take(accepted), (raw) =>
        FiberSet.run(
          handlers,
          Effect.scoped(Effect.flatMap(fromNetSocket(raw, options), handle))
        )),
      { disableYield: true }
    ))
  })

/** Dials the socket at `path` and returns an open `Connection` living in the current Scope. */
export const dialUnix = (
  path: string,
  options: { readonly maxFrameBytes?: number } = {}
): Effect.Effect<Connection, DialError, Scope.Scope> =>
  Effect.gen(function*() {
    const raw = yield* Effect.acquireRelease(
      Effect.callback<net.Socket, DialError>((resume) => {
        const socket = net.createConnection({ path })
        const onError = (cause: Error) => {
          socket.destroy()
          resume(Effect.fail(new DialError({ path, code: errorCode(cause), cause })))
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
    return yield* fromNetSocket(raw, options)
  })
