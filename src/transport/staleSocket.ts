/**
 * Stale-socket recovery: how a listener takes a Unix socket path that may
 * hold the file of a process that died. `serveUnix` removes its file only on a
 * clean close, so after a crash `listen` fails with EADDRINUSE. Whether the path is
 * really in use is decided by asking: if something answers there, it is (and
 * is left alone); if not, the file is stale, and it is removed before
 * listening once more.
 *
 * The broker (its health probe) and the CLI's watch control socket (a dial)
 * both take their paths this way. Between our own brokers the probe is no
 * longer what keeps two apart: a broker takes its agent dir's lifetime lock
 * (config/LifetimeLock.ts) before it gets here, so no broker of ours can be
 * listening, frozen or not, on the file it finds. The probe still keeps a
 * broker from replacing one that takes no such lock (pi-intercom's own), and
 * decides for the control socket.
 */
import { Data, Effect } from "effect"
import * as fs from "node:fs"
import { errorCode } from "../config/errno.ts"
import { ListenError } from "./UnixSocket.ts"

/** Something answers on the socket path: another live listener holds it. */
export class SocketInUse extends Data.TaggedError("SocketInUse")<{ readonly path: string }> {
  override get message(): string {
    return `Something already answers on ${this.path}`
  }
}

/**
 * Runs `listen` on `path` and returns what it returns. If it fails with EADDRINUSE and `answers` says
 * nothing answers there, removes the stale file and runs `listen` again;
 * if something answers, fails with `SocketInUse`. Only a socket file (or a
 * symlink) is removed: a regular file or a directory there fails with
 * `ListenError` code `NOT_A_SOCKET`, left as it was. Any other listen
 * failure, and a file that cannot be removed, fail with `ListenError`.
 *
 * @example
 * ```ts
 * // Inside the package (this module is not exported), as runBroker does:
 * import { Effect } from "effect"
 * import { probeHealth } from "./healthProbe.ts"
 * import { listenReplacingStale } from "./staleSocket.ts"
 * import { serveUnix } from "./UnixSocket.ts"
 *
 * const socketPath = "/tmp/agent/intercom/broker.sock"
 * const listen = serveUnix(socketPath, (connection) => connection.end)
 * const serve = listenReplacingStale(socketPath, listen, probeHealth(socketPath)).pipe(
 *   Effect.catchTag("SocketInUse", (error) => Effect.logError(error.message)) // a live broker answers there
 * )
 * ```
 */
export const listenReplacingStale = <A, R, R2>(
  path: string,
  listen: Effect.Effect<A, ListenError, R>,
  answers: Effect.Effect<boolean, never, R2>
): Effect.Effect<A, ListenError | SocketInUse, R | R2> =>
  listen.pipe(
    Effect.catchTag("ListenError", (error) =>
      error.code !== "EADDRINUSE"
        ? Effect.fail(error)
        : Effect.gen(function*() {
          if (yield* answers) return yield* new SocketInUse({ path })
          yield* Effect.try({
            try: () => {
              // Only a socket (or a symlink, itself removed) is stale: a file or a directory someone put there is theirs.
              const stat = fs.lstatSync(path, { throwIfNoEntry: false })
              if (stat !== undefined && !stat.isSocket() && !stat.isSymbolicLink()) return false
              fs.rmSync(path, { force: true })
              return true
            },
            catch: (cause) => new ListenError({ path, code: errorCode(cause) ?? "UNKNOWN", cause })
          }).pipe(
            Effect.flatMap((removed) =>
              removed ? Effect.void : Effect.fail(new ListenError({ path, code: "NOT_A_SOCKET", cause: error.cause }))
            )
          )
          return yield* listen
        }))
  )
