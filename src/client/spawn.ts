/**
 * Auto-spawn (P93, C-BRK-16…20): make sure a broker answers on the socket,
 * starting one if needed. Only the holder of `broker.spawn.lock` spawns; the
 * others poll health (the lock's rules are in spawnLock.ts). Five clients
 * starting at once end with one broker — and should two brokers ever race,
 * the agent dir's lifetime lock (config/LifetimeLock.ts) lets only one run.
 *
 * A broker that holds the lifetime lock but does not answer (frozen by
 * SIGSTOP, swapping, in a debugger) is alive: no second broker is started
 * beside it. The client waits for it as it would for a spawn, then reports
 * it as not answering, naming its pid. One that is checking its database in
 * full at start (`broker.checking`, config/checkingMark.ts: after an unclean
 * shutdown, about 4 s per GB) is waited for longer ({@link CHECK_WAIT_MS}).
 */
import { Clock, Data, Deferred, Duration, Effect, Exit, Option, Schedule } from "effect"
import type { ChildProcess } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { checkingBroker } from "../config/checkingMark.ts"
import { isLifetimeLockHeld, lifetimeLockFile, pidFileHolder } from "../config/LifetimeLock.ts"
import { BROKER_NODE_FLAGS, brokerEntryPoint, brokerScriptPath } from "../config/install.ts"
import { fileInTheWay, intercomDirInTheWay } from "../config/dirInTheWay.ts"
import { foreignSocketProblem } from "../config/privateDir.ts"
import { openPrivateSync } from "../config/privateFile.ts"
import { currentUid, prepareFallbackDir } from "../config/runtimeDir.ts"
import { fallbackDirOf } from "../config/socketPath.ts"
import type { BrokerLaunch } from "../config/settings.ts"
import { probeHealth } from "../transport/healthProbe.ts"
import { SILENT_BROKER_CAUSES, silentBrokerName, silentBrokerRemedy } from "./errors.ts"
import { acquireSpawnLock, releaseSpawnLock } from "./spawnLock.ts"
import { causeText } from "../protocol/causeText.ts"

/** No broker answers, and none could be started: `detail` says why (with the broker's stderr when it ran). */
export class BrokerSpawnFailed extends Data.TaggedError("BrokerSpawnFailed")<{
  readonly detail: string
}> {
  override get message(): string {
    return `Broker failed to start: ${causeText(this.detail)}`
  }
}

/** How a library client's user passes another agent dir. */
const OTHER_AGENT_DIR = "(--dir, ATOMIC_CODING_AGENT_DIR or PI_CODING_AGENT_DIR)"

/**
 * Why the intercom dir could not be checked or created, and what to do: a
 * file in the way (ENOTDIR, EEXIST) is to be moved, said as the CLI says it;
 * a directory this user may not write to (EACCES, EPERM, EROFS) wants
 * another agent dir.
 */
const dirProblem = (verb: "check" | "create", intercomDir: string, cause: unknown): string => {
  const code = cause instanceof Error && "code" in cause ? cause.code : undefined
  // A file in the way: the CLI's words for it (config/dirInTheWay.ts), naming the file.
  const file = code === "ENOTDIR" || code === "EEXIST" ? fileInTheWay(intercomDir) : undefined
  if (file !== undefined) return intercomDirInTheWay({ intercomDir, file, otherDir: OTHER_AGENT_DIR })
  const what = cause instanceof Error ? cause.message : String(cause)
  return `cannot ${verb} ${intercomDir} (${what}): check that this user may write to ${
    path.dirname(intercomDir)
  }, or use an agent dir of your own ${OTHER_AGENT_DIR}`
}

/**
 * Another client holds `broker.spawn.lock` and is starting the broker (it
 * won the spawn race, C-BRK-17), but nothing answered health on the socket
 * within `waitedMs`. The message leads with C-BRK-17's words, once, and says
 * what to do: the winner reports why its broker did not start, and the
 * broker's stderr is in `logFile`.
 */
export class BrokerSpawnTimedOut extends Data.TaggedError("BrokerSpawnTimedOut")<{
  readonly socketPath: string
  readonly lockFile: string
  readonly logFile: string
  readonly waitedMs: number
}> {
  override get message(): string {
    return `Broker failed to start within timeout: another client holds ${this.lockFile} and is starting the broker, ` +
      `but nothing answered on ${this.socketPath} within ${this.waitedMs} ms. Try again; if it keeps failing, ` +
      `the broker's stderr is in ${this.logFile}.`
  }
}

/**
 * A broker of this agent dir is alive — it holds the lifetime lock — but did
 * not answer health within `waitedMs`; none is started beside it.
 */
export class BrokerNotAnswering extends Data.TaggedError("BrokerNotAnswering")<{
  readonly socketPath: string
  readonly lockFile: string
  /**
   * From `broker.pid`, when it names a live process that holds the lifetime
   * lock (`/proc/locks`; where the system does not list locks, any live one).
   */
  readonly pid: number | undefined
  readonly waitedMs: number
}> {
  override get message(): string {
    const who = this.pid === undefined ? "An intercom broker" : silentBrokerName(this.pid)
    return `${who} is running but does not answer on ${this.socketPath} (waited ${this.waitedMs} ms): ` +
      `${SILENT_BROKER_CAUSES}. No second broker is started while it holds ` +
      `${this.lockFile}. ${silentBrokerRemedy(this.pid)}`
  }
}

/**
 * A broker of this agent dir is checking its database in full
 * (`broker.checking`, after an unclean shutdown) and still had not answered
 * after `waitedMs`, the longest a client waits for that
 * ({@link CHECK_WAIT_MS}).
 */
export class BrokerStillChecking extends Data.TaggedError("BrokerStillChecking")<{
  readonly pid: number
  readonly intercomDir: string
  readonly waitedMs: number
}> {
  override get message(): string {
    return `${silentBrokerName(this.pid)} is still checking its database (${
      path.join(this.intercomDir, "intercom.db")
    }) after an unclean shutdown; waited ${Math.round(this.waitedMs / 1000)} s. The check (PRAGMA quick_check) ` +
      `reads every page, about 4 s per GB, and the broker answers once it ends. Try again shortly; ` +
      `"The full check only after an unclean close" in docs/store.md says more.`
  }
}

/**
 * How long, in all, a client waits for a broker that checks its database in
 * full (`broker.checking` names it): two minutes, some 30 GB of result
 * archive at the measured 4 s per GB.
 */
export const CHECK_WAIT_MS = 120_000

/**
 * How old a `broker.checking` may be and still count: half an hour, far
 * longer than any check runs (some 450 GB at 4 s per GB), so that a mark left
 * by a broker killed during its check, whose pid another process may have
 * by now, stretches no wait once it is that old.
 */
const MARK_MAX_AGE_MS = 30 * 60_000

/** How to start a broker: config's `brokerCommand`/`brokerArgs` (C-CFG-3/4), decided in one place. */
export type { BrokerLaunch } from "../config/settings.ts"

/** Where the broker should answer, and how to start one. */
export interface SpawnOptions {
  readonly agentDir: string
  readonly intercomDir: string
  readonly socketPath: string
  readonly launch: BrokerLaunch
  /** How long to wait for a spawned (or someone else's) broker to answer health. Default 5 s. */
  readonly waitMs?: number
  /**
   * How long to wait, in all, for a broker that checks its database in full
   * at start (`broker.checking`). Default {@link CHECK_WAIT_MS}.
   */
  readonly checkWaitMs?: number
}

// Short: a spawned broker is usually up in ~150 ms, and each probe of a missing socket is cheap.
const POLL = Duration.millis(20)

/**
 * The `intercom` executable to run as `<entry> broker --dir <dir>`: the bundle,
 * whose fast path answers health quickly (see config/install.ts). A configured
 * `brokerCommand` runs the broker script instead (`brokerScriptPath`).
 */
export { brokerEntryPoint, brokerScriptPath } from "../config/install.ts"

/** Polls health every POLL until it answers or `waitMs` passes. */
const awaitHealthy = (socketPath: string, waitMs: number) =>
  probeHealth(socketPath, Duration.millis(500)).pipe(
    Effect.repeat({ schedule: Schedule.spaced(POLL), until: (healthy) => healthy }),
    Effect.timeoutOption(Duration.millis(waitMs)),
    Effect.map((result) => result._tag === "Some" && result.value)
  )

const tail = (file: string): string => {
  try {
    const text = fs.readFileSync(file, "utf8").trim()
    return text.length > 4000 ? text.slice(-4000) : text
  } catch {
    return ""
  }
}

/** How {@link awaitCheck} ended: an answer, a check still running at the cap, or no check and no answer. */
type CheckWait = "healthy" | "checking" | "silent"

/**
 * After a wait for health ran out while a broker was checking its database
 * in full (`broker.checking` names a live process): polls health on, for at
 * most `capMs` in all while the check lasts, and once the check has ended,
 * `settleMs` more for the broker to migrate and listen.
 */
const awaitCheck = (options: SpawnOptions, settleMs: number, capMs: number): Effect.Effect<CheckWait> =>
  Effect.gen(function*() {
    const start = yield* Clock.currentTimeMillis
    let checkSeen = start
    while (true) {
      if (yield* probeHealth(options.socketPath, Duration.millis(500))) return "healthy"
      const now = yield* Clock.currentTimeMillis
      if ((yield* checkingBroker(options.intercomDir, MARK_MAX_AGE_MS)) !== undefined) {
        if (now - start >= capMs) return "checking"
        checkSeen = now
      } else if (now - checkSeen >= settleMs) {
        return "silent"
      }
      yield* Effect.sleep(POLL)
    }
  })

/**
 * `waited` ran out without an answer: when a broker is checking its database
 * in full, waits for it ({@link awaitCheck}); `true` once it answers, `false`
 * when no check runs or it ended without an answer. Fails with
 * `BrokerStillChecking` at the cap.
 */
const waitOutCheck = (options: SpawnOptions, waitMs: number): Effect.Effect<boolean, BrokerStillChecking> =>
  Effect.gen(function*() {
    const capMs = Math.max(options.checkWaitMs ?? CHECK_WAIT_MS, waitMs)
    const pid = yield* checkingBroker(options.intercomDir, MARK_MAX_AGE_MS)
    if (pid === undefined) return false
    const outcome = yield* awaitCheck(options, waitMs, capMs - waitMs)
    if (outcome === "checking") {
      return yield* new BrokerStillChecking({ pid, intercomDir: options.intercomDir, waitedMs: capMs })
    }
    return outcome === "healthy"
  })

type LockHolder = "healthy" | "released" | "silent"

/**
 * While a broker holds the lifetime lock: polls until it answers health
 * (`"healthy"`) or lets the lock go (`"released"`: it has exited), for at
 * most `waitMs` (`"silent"`).
 */
const awaitLockHolder = (options: SpawnOptions, waitMs: number): Effect.Effect<LockHolder> =>
  Effect.gen(function*() {
    if (yield* probeHealth(options.socketPath, Duration.millis(500))) return Option.some<LockHolder>("healthy")
    if (!(yield* isLifetimeLockHeld(options.intercomDir))) return Option.some<LockHolder>("released")
    return Option.none<LockHolder>()
  }).pipe(
    Effect.repeat({ schedule: Schedule.spaced(POLL), until: Option.isSome }),
    Effect.timeoutOption(Duration.millis(waitMs)),
    Effect.map((result) => Option.getOrElse(Option.flatten(result), (): LockHolder => "silent"))
  )

/**
 * For a broker run by config's `brokerCommand`: which setting and file ran
 * it, and what to do — the failure (`spawn … ENOENT`, an exit) is that
 * command's. Empty for the bundled broker.
 */
const commandHint = (launch: BrokerLaunch): string => {
  if (launch._tag === "Default") return ""
  const args = launch.args.length === 0 ? "" : ` with brokerArgs ${JSON.stringify(launch.args)}`
  return `\nIt was started by brokerCommand ${JSON.stringify(launch.command)}${args} in ${launch.configFile ?? "config.json"}: ` +
    `fix that command there, or remove brokerCommand and brokerArgs to start the bundled broker.`
}

const launchBroker = (options: SpawnOptions, logFile: string): ChildProcess => {
  const log = openPrivateSync(logFile) // 0600 even over a leftover log with a looser mode
  try {
    const [command, args] = options.launch._tag === "Default"
      ? [process.execPath, [...BROKER_NODE_FLAGS, brokerEntryPoint(), "broker", "--dir", options.agentDir]]
      : [options.launch.command, [...options.launch.args, brokerScriptPath()]]
    // Loaded here, not at module load: most commands find a broker running and never spawn one, and
    // node:child_process costs a process ~3 ms of CPU to load (docs/performance.md, "Startup").
    const { spawn } = process.getBuiltinModule("node:child_process")
    const child = spawn(command, args, {
      detached: true,
      stdio: ["ignore", "ignore", log],
      // Both agent-dir variables: a configured command's broker finds its agent dir there alone, and an
      // ATOMIC_CODING_AGENT_DIR inherited from this process would otherwise beat PI_CODING_AGENT_DIR.
      env: { ...process.env, ATOMIC_CODING_AGENT_DIR: options.agentDir, PI_CODING_AGENT_DIR: options.agentDir, NODE_NO_WARNINGS: "1" }
    })
    return child
  } finally {
    fs.closeSync(log)
  }
}

/**
 * Ensures a broker answers on `options.socketPath`, spawning one detached if
 * none does. Fails with `BrokerSpawnFailed` saying why (including the tail of
 * the broker's stderr, kept in `<intercomDir>/broker.log`), with
 * `BrokerSpawnTimedOut` when another client holds the spawn lock and no
 * broker answered in time, or with
 * `BrokerNotAnswering` when a live broker holds the agent dir but does not
 * answer.
 */
export const ensureBroker = (
  options: SpawnOptions
): Effect.Effect<void, BrokerSpawnFailed | BrokerSpawnTimedOut | BrokerNotAnswering | BrokerStillChecking> =>
  Effect.gen(function*() {
    const waitMs = options.waitMs ?? 5000
    // A short fallback socket lives in a shared runtime dir: dial it only through our own private dir.
    const fallbackDir = fallbackDirOf(options.socketPath, currentUid())
    if (fallbackDir !== undefined) {
      yield* prepareFallbackDir(fallbackDir, currentUid()).pipe(
        Effect.mapError((error) => new BrokerSpawnFailed({ detail: error.message }))
      )
    }
    // Another user's directory or socket: whoever answers there is not this user's broker.
    const foreign = yield* Effect.try({
      try: () => foreignSocketProblem(options.intercomDir, options.socketPath, currentUid()),
      catch: (cause) => new BrokerSpawnFailed({ detail: dirProblem("check", options.intercomDir, cause) })
    })
    if (foreign !== undefined) {
      return yield* new BrokerSpawnFailed({
        detail: `${foreign}: not dialling a socket another user controls. ` +
          `Use an agent dir of your own (--dir, ATOMIC_CODING_AGENT_DIR or PI_CODING_AGENT_DIR).`
      })
    }
    if (yield* probeHealth(options.socketPath)) return
    yield* Effect.try({
      try: () => fs.mkdirSync(options.intercomDir, { recursive: true, mode: 0o700 }),
      catch: (cause) => new BrokerSpawnFailed({ detail: dirProblem("create", options.intercomDir, cause) })
    })
    // A broker that holds the lifetime lock is alive — starting, stopping, or frozen: never start another.
    if (yield* isLifetimeLockHeld(options.intercomDir)) {
      const holder = yield* awaitLockHolder(options, waitMs)
      if (holder === "healthy") return
      if (holder === "silent" && (yield* waitOutCheck(options, waitMs))) return
      if (holder === "silent") {
        // Not a pid the kernel says is not the holder's: a holder stuck before it wrote broker.pid
        // leaves an older broker's there, and the message tells the user to signal it.
        const { holds, pid } = yield* pidFileHolder(options.intercomDir)
        return yield* new BrokerNotAnswering({
          socketPath: options.socketPath,
          lockFile: lifetimeLockFile(options.intercomDir),
          pid: holds === false ? undefined : pid,
          waitedMs: waitMs
        })
      }
    }
    const lockFile = path.join(options.intercomDir, "broker.spawn.lock")
    const lock = yield* acquireSpawnLock(lockFile).pipe(
      Effect.mapError((error) => new BrokerSpawnFailed({ detail: error.message }))
    )
    if (lock === "held") {
      if (yield* awaitHealthy(options.socketPath, waitMs)) return
      if (yield* waitOutCheck(options, waitMs)) return
      return yield* new BrokerSpawnTimedOut({
        socketPath: options.socketPath,
        lockFile,
        logFile: path.join(options.intercomDir, "broker.log"),
        waitedMs: waitMs
      })
    }
    yield* Effect.gen(function*() {
      if (yield* probeHealth(options.socketPath)) return // double-check under the lock (C-BRK-19)
      const logFile = path.join(options.intercomDir, "broker.log")
      const exited = yield* Deferred.make<string>()
      const child = yield* Effect.try({
        try: () => launchBroker(options, logFile),
        catch: (cause) =>
          new BrokerSpawnFailed({ detail: `cannot launch the broker: ${String(cause)}${commandHint(options.launch)}` })
      })
      child.once("error", (error) => Deferred.doneUnsafe(exited, Exit.succeed(`launch error: ${error.message}`)))
      child.once("exit", (code, signal) =>
        Deferred.doneUnsafe(exited, Exit.succeed(signal === null ? `exit code ${code}` : `signal ${signal}`)))
      // At once, not after the wait: a client interrupted while the broker starts must not live as long as it.
      child.unref()
      const outcome = yield* Effect.raceFirst(
        awaitHealthy(options.socketPath, waitMs).pipe(
          // The broker checks its database in full (after an unclean shutdown): not a failed start yet.
          Effect.flatMap((healthy) => healthy ? Effect.succeed(true) : waitOutCheck(options, waitMs)),
          Effect.map((healthy) => healthy ? "healthy" : "timeout")
        ),
        Deferred.await(exited).pipe(Effect.map((how) => `exited (${how})`))
      )
      if (outcome === "healthy") return
      // Someone else's broker may have won the race: that is success too.
      if (yield* probeHealth(options.socketPath)) return
      const stderr = tail(logFile)
      return yield* new BrokerSpawnFailed({
        detail: outcome === "timeout"
          ? `no health answer within ${waitMs} ms${stderr === "" ? "" : `; broker stderr:\n${stderr}`}`
          : `the broker ${outcome}${stderr === "" ? "" : `; broker stderr:\n${stderr}`}${commandHint(options.launch)}`
      })
    }).pipe(Effect.ensuring(releaseSpawnLock(lockFile)))
  })
