/**
 * `runBroker`: the broker as a scoped Effect program. Startup follows P91
 * (with our pid rule); closing the Scope is shutdown (P95): connections are
 * destroyed, then the socket and pid files removed.
 */
import { Effect, type Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { readPidFile } from "../config/pidFile.ts"
import { probeHealth } from "../transport/healthProbe.ts"
import { listenReplacingStale } from "../transport/staleSocket.ts"
import { serveUnix } from "../transport/UnixSocket.ts"
import { Broker, type BrokerStats } from "./Broker.ts"
import { BrokerStartupError } from "./errors.ts"
import type { BrokerOptions } from "./options.ts"

/** A running Unix-socket broker, as `runBroker` returns it. */
export interface BrokerHandle {
  readonly socketPath: string
  readonly pid: number
  /** Completes when the broker has been idle long enough to exit (P92); the owner then closes the Scope. */
  readonly idleExit: Effect.Effect<void>
  /** Live registered sessions right now. */
  readonly sessionCount: Effect.Effect<number>
  /** Sizes of the routing tables and the admission queue, for diagnostics and tests. */
  readonly stats: Effect.Effect<BrokerStats>
}

const describe = (cause: unknown): string =>
  cause instanceof Error ? cause.message : String(cause)

/** The first of `dir` and its ancestors that exists but is not a directory, if any. */
const blockingFile = (dir: string): string | undefined => {
  for (let current = dir; ; current = path.dirname(current)) {
    try {
      return fs.statSync(current).isDirectory() ? undefined : current
    } catch {
      if (path.dirname(current) === current) return undefined
    }
  }
}

const prepareDirectory = (dir: string) =>
  Effect.try({
    try: () => {
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
      fs.chmodSync(dir, 0o700) // re-asserted on every start (P81)
    },
    catch: (cause) => {
      // mkdir reports a file in the way as EEXIST or ENOTDIR; say what is wrong instead.
      const file = blockingFile(dir)
      const detail = file === undefined
        ? describe(cause)
        : file === dir
        ? "it is not a directory"
        : `${file} is not a directory`
      return new BrokerStartupError({ kind: "DirectoryUnusable", path: dir, detail })
    }
  })

const pidFileOf = (intercomDir: string) => path.join(intercomDir, "broker.pid")

/** Writes `broker.pid` (decimal pid, no newline, 0600) and removes it at shutdown if it is still ours. */
const ownPidFile = (file: string) =>
  Effect.acquireRelease(
    Effect.try({
      try: () => fs.writeFileSync(file, String(process.pid), { mode: 0o600 }),
      catch: (cause) =>
        new BrokerStartupError({ kind: "DirectoryUnusable", path: file, detail: describe(cause) })
    }),
    () =>
      Effect.flatMap(readPidFile(file), (pid) =>
        pid === process.pid ? Effect.sync(() => fs.rmSync(file, { force: true })) : Effect.void)
  )

/**
 * Runs a broker on a Unix socket for as long as the current Scope is open:
 * prepares the intercom directory (0700), listens (socket 0600, stale-file
 * recovery), writes `broker.pid`; closing the Scope is shutdown.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { runBroker } from "effect-intercom/broker"
 *
 * const program = Effect.scoped(Effect.gen(function*() {
 *   const broker = yield* runBroker({ intercomDir: "/tmp/agent/intercom", socketPath: "/tmp/agent/intercom/broker.sock" })
 *   yield* broker.idleExit // until the last session has been gone for 5 s
 * }))
 * ```
 */
export const runBroker = (
  options: BrokerOptions
): Effect.Effect<BrokerHandle, BrokerStartupError, Scope.Scope> =>
  Effect.gen(function*() {
    const socketPath = options.socketPath
    const intercomDir = options.intercomDir
    yield* prepareDirectory(intercomDir)
    const core = yield* Broker.make(options)

    const listen = serveUnix(socketPath, core.accept)
    // Something holds the path: a live broker answers health; a stale file does not.
    yield* listenReplacingStale(socketPath, listen, probeHealth(socketPath)).pipe(
      Effect.catchTags({
        ListenError: (error) =>
          Effect.fail(new BrokerStartupError({ kind: "ListenFailed", path: socketPath, detail: error.message })),
        SocketInUse: () =>
          Effect.flatMap(readPidFile(pidFileOf(intercomDir)), (pid) =>
            Effect.fail(
              new BrokerStartupError({
                kind: "AlreadyRunning",
                path: socketPath,
                detail: pid === undefined ? "it answers health" : `pid ${pid}`
              })
            ))
      })
    )
    if (options.writePidFile !== false) yield* ownPidFile(pidFileOf(intercomDir))

    return {
      socketPath,
      pid: process.pid,
      idleExit: core.idleExit,
      sessionCount: core.sessionCount,
      stats: core.stats
    } satisfies BrokerHandle
  })
