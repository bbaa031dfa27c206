/**
 * `runBroker`: the broker as a scoped Effect program. Startup follows P91
 * (with our pid rule); closing the Scope is shutdown (P95): connections are
 * destroyed, then the socket and pid files removed.
 */
import { Clock, Deferred, Effect, Queue, type Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { probeHealth } from "../transport/healthProbe.ts"
import { type ListenError, serveUnix } from "../transport/UnixSocket.ts"
import { runConnection } from "./ConnectionActor.ts"
import { BrokerStartupError } from "./errors.ts"
import { type BrokerOptions, type ResolvedBrokerOptions, resolveOptions } from "./options.ts"
import { type BrokerEvent, Router } from "./Router.ts"

export interface BrokerHandle {
  readonly socketPath: string
  readonly pid: number
  /** Completes when the broker has been idle long enough to exit (P92); the owner then closes the Scope. */
  readonly idleExit: Effect.Effect<void>
  /** Live registered sessions right now. */
  readonly sessionCount: Effect.Effect<number>
}

const describe = (cause: unknown): string =>
  cause instanceof Error ? cause.message : String(cause)

const prepareDirectory = (dir: string) =>
  Effect.try({
    try: () => {
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
      fs.chmodSync(dir, 0o700) // re-asserted on every start (P81)
    },
    catch: (cause) => new BrokerStartupError({ reason: "DirectoryUnusable", path: dir, detail: describe(cause) })
  })

const pidFileOf = (options: ResolvedBrokerOptions) => path.join(options.intercomDir, "broker.pid")

const readPid = (file: string): number | undefined => {
  try {
    const pid = Number.parseInt(fs.readFileSync(file, "utf8").split("\n", 1)[0] ?? "", 10)
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined
  } catch {
    return undefined
  }
}

/** Writes `broker.pid` (decimal pid, no newline, 0600) and removes it at shutdown if it is still ours. */
const ownPidFile = (file: string) =>
  Effect.acquireRelease(
    Effect.try({
      try: () => fs.writeFileSync(file, String(process.pid), { mode: 0o600 }),
      catch: (cause) =>
        new BrokerStartupError({ reason: "DirectoryUnusable", path: file, detail: describe(cause) })
    }),
    () =>
      Effect.sync(() => {
        if (readPid(file) === process.pid) fs.rmSync(file, { force: true })
      })
  )

const logEvent = (event: BrokerEvent) =>
  event.level === "info" ? Effect.logInfo(event.message) : Effect.logWarning(event.message)

export const runBroker = (
  options: BrokerOptions
): Effect.Effect<BrokerHandle, BrokerStartupError, Scope.Scope> =>
  Effect.gen(function*() {
    const resolved = resolveOptions(options)
    const socketPath = resolved.socketPath
    yield* prepareDirectory(resolved.intercomDir)

    const clock = yield* Clock.Clock
    const signals = {
      feed: yield* Queue.sliding<void>(1),
      idle: yield* Queue.sliding<void>(1),
      registration: yield* Queue.sliding<void>(1),
      events: yield* Queue.unbounded<BrokerEvent>()
    }
    const router = new Router(resolved, () => clock.currentTimeMillisUnsafe(), signals)
    const idleExit = yield* Deferred.make<void>()

    yield* Effect.forkScoped(Effect.forever(
      Effect.flatMap(Queue.takeAll(signals.events), (events) => Effect.forEach(events, logEvent, { discard: true })),
      { disableYield: true }
    ))

    // Membership changes are announced once per batch of changes, not once per change.
    yield* Effect.forkScoped(Effect.forever(
      Queue.take(signals.feed).pipe(
        Effect.andThen(Effect.yieldNow),
        Effect.andThen(Effect.sync(() => router.notifyMembershipChanges()))
      ),
      { disableYield: true }
    ))

    // Registration timeout (P15): sleep until the oldest unregistered connection's deadline.
    yield* Effect.forkScoped(Effect.forever(
      Effect.suspend(() => {
        const oldest = router.oldestUnregistered()
        if (oldest === undefined) return Queue.take(signals.registration)
        const wait = oldest.unregisteredSince + resolved.registrationTimeoutMs - clock.currentTimeMillisUnsafe()
        return wait > 0 ? Effect.sleep(wait) : Effect.sync(() => router.registrationTimedOut(oldest))
      }),
      { disableYield: true }
    ))

    // Idle exit (P92): measured from the last leave, re-checked after every wait.
    const idleExitMs = resolved.idleExitMs
    if (idleExitMs !== null) {
      yield* Effect.forkScoped(Effect.forever(
        Effect.suspend(() => {
          const lastLeftAt = router.lastLeftAt
          // Busy, or never had a session (a broker that never sees one does not exit).
          if (router.sessionCount > 0 || lastLeftAt === undefined) return Queue.take(signals.idle)
          const wait = lastLeftAt + idleExitMs - clock.currentTimeMillisUnsafe()
          return wait > 0 ? Effect.sleep(wait) : Deferred.succeed(idleExit, undefined).pipe(Effect.andThen(Effect.never))
        }),
        { disableYield: true }
      ))
    }

    const listen = serveUnix(socketPath, (connection) => runConnection(router, connection, resolved))
    const listenFailed = (error: ListenError) =>
      new BrokerStartupError({ reason: "ListenFailed", path: socketPath, detail: error.message })
    yield* listen.pipe(
      Effect.catchTag("ListenError", (error) => {
        if (error.code !== "EADDRINUSE") return Effect.fail(listenFailed(error))
        // Something holds the path: a live broker answers health; a stale file does not.
        return probeHealth(socketPath).pipe(
          Effect.flatMap((healthy) => {
            if (healthy) {
              const pid = readPid(pidFileOf(resolved))
              return Effect.fail(
                new BrokerStartupError({
                  reason: "AlreadyRunning",
                  path: socketPath,
                  detail: pid === undefined ? "it answers health" : `pid ${pid}`
                })
              )
            }
            return Effect.sync(() => fs.rmSync(socketPath, { force: true })).pipe(
              Effect.andThen(listen),
              Effect.mapError(listenFailed)
            )
          })
        )
      })
    )
    if (resolved.writePidFile) yield* ownPidFile(pidFileOf(resolved))

    return {
      socketPath,
      pid: process.pid,
      idleExit: Deferred.await(idleExit),
      sessionCount: Effect.sync(() => router.sessionCount)
    } satisfies BrokerHandle
  })
