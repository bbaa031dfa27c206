/**
 * `runBroker`: the broker as a scoped Effect program. Startup follows P91
 * (with our pid rule) behind the agent dir's lifetime lock, so that at most
 * one broker runs per agent dir; closing the Scope is shutdown (P95):
 * connections are destroyed, then the socket file (if it is still ours) and
 * the pid file (if it still names us) removed, and the lock let go.
 */
import { Deferred, Duration, Effect, identity, Schedule, type Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { isProcessAlive, readPidFile, writePidFile } from "../config/pidFile.ts"
import { fileInTheWay } from "../config/dirInTheWay.ts"
import { probeHealth } from "../transport/healthProbe.ts"
import { listenReplacingStale } from "../transport/staleSocket.ts"
import { serveUnix } from "../transport/UnixSocket.ts"
import { Broker, type BrokerStats } from "./Broker.ts"
import { BrokerOptionError, BrokerStartupError } from "./errors.ts"
import { holdLifetimeLock, lifetimeLockFile, pidFileHolder } from "../config/LifetimeLock.ts"
import { type BrokerOptions, checkCoreOptions } from "./options.ts"
import * as Database from "../store/Database.ts"
import { checkingMarkOf } from "../config/checkingMark.ts"
import { makeSqlite } from "../store/MailStore.ts"
import { ResultArchive } from "../store/ResultArchive.ts"
import { DEFAULT_WARM_UP, runWarmUp, type WarmUpReport } from "./WarmUp.ts"
import { makeSql as makeQuestionSql, QuestionStore } from "../store/QuestionStore.ts"

/** A running Unix-socket broker, as `runBroker` returns it. */
export interface BrokerHandle {
  readonly socketPath: string
  readonly pid: number
  /** Completes when the broker has been idle long enough to exit (P92); the owner then closes the Scope. */
  readonly idleExit: Effect.Effect<void>
  /**
   * Completes once the file at `socketPath` is no longer this broker's
   * socket — deleted, or replaced by another process's — checked every
   * `SOCKET_CHECK_INTERVAL` while it runs. No client can reach the broker
   * then; the owner closes the Scope.
   */
  readonly socketLost: Effect.Effect<void>
  /** Live registered sessions right now. */
  readonly sessionCount: Effect.Effect<number>
  /** Sizes of the routing tables and the admission queue, for diagnostics and tests. */
  readonly stats: Effect.Effect<BrokerStats>
  /**
   * The self warm-up (`BrokerOptions.warmUp`, WarmUp.ts): `started` completes
   * once its synthetic traffic begins, or once it is over without any (off,
   * failed, interrupted); `done` with its report once it has ended
   * (`undefined` when it is off or failed), never if shutdown interrupts it.
   */
  readonly warmUp: { readonly started: Effect.Effect<void>; readonly done: Effect.Effect<WarmUpReport | undefined> }
}

const describe = (cause: unknown): string =>
  cause instanceof Error ? cause.message : String(cause)

const prepareDirectory = (dir: string) =>
  Effect.try({
    try: () => {
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
      fs.chmodSync(dir, 0o700) // re-asserted on every start (P81)
    },
    catch: (cause) => {
      // mkdir reports a file in the way as EEXIST or ENOTDIR; say what is wrong instead.
      const file = fileInTheWay(dir)
      const detail = file === undefined
        ? describe(cause)
        : file === dir
        ? "it is not a directory"
        : `${file} is not a directory`
      return new BrokerStartupError({ kind: file === undefined ? "DirectoryUnusable" : "NotADirectory", path: dir, detail })
    }
  })

const pidFileOf = (intercomDir: string) => path.join(intercomDir, "broker.pid")

/** The broker's database file in its intercom directory (docs/store.md). */
export const DATABASE_FILE = "intercom.db"

/** Opens the database (closed with the Scope, after the broker's last commit) and the stores over it. */
const openStores = (file: string, intercomDir: string) =>
  Effect.flatMap(Database.make({ file, checkingMark: checkingMarkOf(intercomDir) }), (context) =>
    Effect.provide(Effect.all({ mail: makeSqlite, archive: ResultArchive.makeSql(), questions: makeQuestionSql }), context))

/** Writes `broker.pid` (decimal pid, no newline, 0600) and removes it at shutdown if it is still ours. */
const ownPidFile = (file: string) =>
  Effect.acquireRelease(
    writePidFile(file, process.pid).pipe(
      // The message names the directory ("Cannot use the intercom directory …"): the detail names the file.
      Effect.mapError((cause) =>
        new BrokerStartupError({
          kind: "DirectoryUnusable",
          path: path.dirname(file),
          detail: `${path.basename(file)} cannot be written (${cause.message})`
        })
      )
    ),
    () =>
      Effect.flatMap(readPidFile(file), (pid) =>
        pid === process.pid ? Effect.sync(() => fs.rmSync(file, { force: true })) : Effect.void)
  )

/** How often a running broker checks that its socket file is still its own. */
export const SOCKET_CHECK_INTERVAL = Duration.seconds(2)

/**
 * Completes once `stillOurs` answers `false`: asked at once, then every
 * `interval` on the Clock (so a TestClock decides when).
 *
 * @example
 * yield* whenNoLongerOurs(listener.stillOurs, SOCKET_CHECK_INTERVAL) // the socket file was deleted or replaced
 */
export const whenNoLongerOurs = (stillOurs: Effect.Effect<boolean>, interval: Duration.Input): Effect.Effect<void> =>
  stillOurs.pipe(Effect.repeat({ schedule: Schedule.spaced(interval), while: (ours) => ours }), Effect.asVoid)

/**
 * `AlreadyRunning` when something answers health on the socket (a broker
 * that takes no lock): naming the pid in `broker.pid` when that process is
 * alive.
 */
const answersHealth = (intercomDir: string, socketPath: string) =>
  Effect.gen(function*() {
    const pid = yield* readPidFile(pidFileOf(intercomDir))
    const alive = pid !== undefined && (yield* isProcessAlive(pid))
    return yield* new BrokerStartupError({
      kind: "AlreadyRunning",
      path: socketPath,
      detail: alive ? `pid ${pid}` : "it answers health"
    })
  })

/**
 * `AlreadyRunning` when another broker holds the lifetime lock: naming the
 * pid in `broker.pid` only when the kernel says that process holds the lock
 * (`pidFileHolder`). The holder writes `broker.pid` only once it
 * listens, so until then the file may still name an older broker, whose pid
 * another process may have by now; where the system cannot say (no
 * `/proc/locks`), the pid is given as what the file says, not as the holder's.
 */
const lockHeld = (intercomDir: string, socketPath: string) =>
  Effect.gen(function*() {
    const lock = `it holds ${lifetimeLockFile(intercomDir)}`
    const { holds, pid } = yield* pidFileHolder(intercomDir)
    return yield* new BrokerStartupError({
      kind: "AlreadyRunning",
      path: socketPath,
      detail: holds === true
        ? `pid ${pid}`
        : holds === undefined
        ? `${lock}; broker.pid names pid ${pid}, not verified to be its`
        : `${lock}; its pid is not known yet`
    })
  })

/**
 * Runs a broker on a Unix socket for as long as the current Scope is open:
 * prepares the intercom directory (0700), takes the agent dir's lifetime
 * lock (`broker.lock`: a broker that holds it, even a frozen one, makes this
 * one fail with `AlreadyRunning`), listens (socket 0600, stale-file
 * recovery), writes `broker.pid`, and with `warmUp` forks the self warm-up
 * (WarmUp.ts); closing the Scope is shutdown. An option it cannot hold
 * (`BROKER_OPTION_RULES`) fails it with `BrokerOptionError` before any of that.
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
): Effect.Effect<BrokerHandle, BrokerStartupError | BrokerOptionError, Scope.Scope> =>
  Effect.gen(function*() {
    yield* checkCoreOptions(options)
    const socketPath = options.socketPath
    const intercomDir = options.intercomDir
    yield* prepareDirectory(intercomDir)
    // Held until the Scope has closed everything below: the last finalizer to run.
    yield* holdLifetimeLock(intercomDir).pipe(
      Effect.catchTags({
        LifetimeLockHeld: () => lockHeld(intercomDir, socketPath),
        LifetimeLockFailed: (error) =>
          Effect.fail(
            new BrokerStartupError({
              kind: "DirectoryUnusable",
              path: intercomDir,
              detail: `${path.basename(error.path)} cannot be locked (${error.detail}); if no broker runs for it, remove that file`
            })
          )
      })
    )
    const databaseFile = path.join(intercomDir, DATABASE_FILE)
    // A database that cannot be opened: the store's error names the file and what to do.
    const unusable = (error: { readonly message: string }) =>
      new BrokerStartupError({ kind: "StoreUnusable", path: databaseFile, detail: error.message })
    // Durable (the default): the database holds the routing state, the result archive and the questions.
    const durable = options.store === undefined && (options.durability ?? "sqlite") === "sqlite"
      ? yield* openStores(databaseFile, intercomDir).pipe(Effect.mapError(unusable))
      : undefined
    // An archive or question store the caller provides is used as it is.
    const archive = yield* Effect.serviceOption(ResultArchive)
    const questions = yield* Effect.serviceOption(QuestionStore)
    // What the store holds is read here: an error names the row, this one the file.
    const core = yield* Broker.make({ ...options, store: options.store ?? durable?.mail }).pipe(
      durable === undefined || archive._tag === "Some" ? identity : Effect.provideService(ResultArchive, durable.archive),
      durable === undefined || questions._tag === "Some" ? identity : Effect.provideService(QuestionStore, durable.questions),
      Effect.mapError((error) =>
        error instanceof BrokerOptionError
          ? error // checked above already
          : durable === undefined
          ? unusable(error) // a store the caller provided, not the database file
          : new BrokerStartupError({ kind: "StoreUnreadable", path: databaseFile, detail: error.detail })
      )
    )

    // Each connection adopted, with no fiber of its own (Adopted.ts); closed before the listener
    // destroys their sockets (finalizers run last first), so each can tell what it wrote.
    const listen = serveUnix<never>(socketPath, core)
    // Under the lock no broker of ours listens there. Something that answers health is
    // another kind of broker (pi-intercom's); a file nothing answers on is stale.
    const listener = yield* listenReplacingStale(socketPath, listen, probeHealth(socketPath)).pipe(
      Effect.catchTags({
        ListenError: (error) =>
          Effect.fail(new BrokerStartupError({ kind: "ListenFailed", path: socketPath, detail: error.reason })),
        SocketInUse: () => answersHealth(intercomDir, socketPath)
      })
    )
    yield* Effect.addFinalizer(() => core.closeConnections)
    if (options.writePidFile !== false) yield* ownPidFile(pidFileOf(intercomDir))
    // Forked last, so that shutdown interrupts it first (finalizers run last first); it waits
    // `delayMs` on the Clock before it begins, so the caller's ready line and the spawner's probe go first.
    const warmUpStarted = yield* Deferred.make<void>()
    const warmUpDone = yield* Deferred.make<WarmUpReport | undefined>()
    const plan = options.warmUp === true ? DEFAULT_WARM_UP : options.warmUp === false ? undefined : options.warmUp
    if (plan === undefined) {
      yield* Deferred.succeed(warmUpStarted, undefined)
      yield* Deferred.succeed(warmUpDone, undefined)
    } else {
      const warm = runWarmUp(options, {
        durable: options.store !== undefined || durable !== undefined,
        dir: intercomDir,
        plan,
        started: Deferred.succeed(warmUpStarted, undefined)
      })
      yield* Effect.forkScoped(
        Effect.sleep(plan.delayMs).pipe(
          Effect.andThen(warm),
          Effect.matchEffect({
            onFailure: (cause) =>
              Effect.logDebug(`warm-up: stopped early: ${describe(cause)}`).pipe(Effect.as(undefined)),
            onSuccess: (report) =>
              Effect.logDebug(
                `warm-up: ${report.rounds} rounds, ${report.messages} messages (${report.asks} asks), ${
                  Math.round(report.cpuMs)
                } ms of main-thread CPU, ${Math.round(report.processCpuMs)} ms in all${report.capped ? " (budget reached)" : ""}`
              ).pipe(Effect.as(report))
          }),
          Effect.flatMap((report) => Deferred.succeed(warmUpDone, report)),
          Effect.ensuring(Deferred.succeed(warmUpStarted, undefined))
        )
      )
    }

    return {
      socketPath,
      pid: process.pid,
      idleExit: core.idleExit,
      socketLost: whenNoLongerOurs(listener.stillOurs, SOCKET_CHECK_INTERVAL),
      sessionCount: core.sessionCount,
      stats: core.stats,
      warmUp: { started: Deferred.await(warmUpStarted), done: Deferred.await(warmUpDone) }
    } satisfies BrokerHandle
  })
