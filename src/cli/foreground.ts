/**
 * `intercom broker`: the foreground broker, given its parsed options. Both
 * ways in run exactly this — the effect/cli command (commands.ts) and the
 * fast path for a well-formed `broker` argv (brokerEntry.ts) — so the
 * broker behaves the same whichever parsed the command line.
 *
 * Nothing here may import effect/cli or NodeServices: the fast path loads
 * this module, and its budget is spawn → health in 150 ms.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import { isBuiltin } from "node:module"
import { runBroker } from "../broker/runBroker.ts"
import { type BrokerOptions, DEFAULT_MAX_SESSIONS } from "../broker/options.ts"
import type { IntercomPaths } from "../config/agentDir.ts"
import { IntercomEnvError } from "../config/errors.ts"
import { logIntercomSettingsProblems, readIntercomSettings } from "../config/load.ts"
import { openFileLimit, sessionCapNote, sessionCapWarning } from "../config/openFiles.ts"
import { INTERCOM_ENV } from "../config/settings.ts"
import { currentUid, prepareFallbackDir } from "../config/runtimeDir.ts"
import { checkAgentDirOrExit } from "./agentDirReport.ts"
import type { BrokerFlags } from "./argv.ts"
import { EXIT_FAILURE, ExitCode } from "./exit.ts"
import { sqliteMissingMessage } from "../config/nodeSqlite.ts"
import { ignoreStdioErrors } from "./logging.ts"
import { resolveProcessPaths } from "./paths.ts"
import { scopedWithGrace } from "./shutdown.ts"

/** How long the broker's shutdown may take before the process gives up on it. */
export const SHUTDOWN_GRACE = Duration.seconds(3)

/**
 * How long after its ready line the broker writes its bundle's code cache
 * (brokerBundle.ts) when it found none it could use: long enough for the
 * spawner's health probe and its first session, whose code the cache then
 * holds too. A broker that stops sooner writes it as it stops.
 */
export const CODE_CACHE_DELAY = Duration.seconds(1)

/** What the process running `runForeground` adds to it. */
export interface ForegroundOptions {
  /**
   * Writes the code cache of the bundle this broker runs from; called once,
   * `CODE_CACHE_DELAY` after the ready line or at shutdown, whichever comes
   * first. Absent when the broker runs from anything else.
   */
  readonly persistCodeCache?: (() => void) | undefined
}

/** Prints `message` on stderr and ends the command with exit code 1. */
export const failWith = (message: string): Effect.Effect<never, ExitCode> =>
  Console.error(message).pipe(Effect.andThen(Effect.fail(new ExitCode({ code: EXIT_FAILURE }))))

/** A typed error whose `message` is already user-facing → stderr, exit 1. */
export const reportError = (error: { readonly message: string }): Effect.Effect<never, ExitCode> =>
  failWith(error.message)

/**
 * Why this Node.js cannot run a broker, if it cannot: the agent dir's
 * lifetime lock and the durable store are SQLite files opened through
 * `node:sqlite` (Node ≥ 22.5), so even a memory-mode broker needs it.
 * Asked of `module.isBuiltin`, which does not load the module.
 */
export const sqliteMissing = (isBuiltin: (id: string) => boolean, nodeVersion: string): string | undefined =>
  isBuiltin("node:sqlite") ? undefined : sqliteMissingMessage("The intercom broker", nodeVersion)

/** The socket path, and why it is not `<intercomDir>/broker.sock` when it is not. */
export const describeSocket = (paths: IntercomPaths): string =>
  paths.socketFallbackDir === undefined
    ? paths.socketPath
    : `${paths.socketPath} (short fallback: ${paths.defaultSocketPath} is too long for a Unix socket)`

/**
 * Runs the broker in the foreground until a signal (runMain interrupts this
 * fiber), idle exit, or the loss of its socket file (deleted or replaced);
 * either way the scope closes, which ends every session socket, removes the
 * socket file (if still its own) and pid file, and lets the lifetime lock go. Prints
 * `Intercom broker started (pid: N)` on stdout once it listens; a startup
 * error goes to stderr and ends the command with exit code 1 (2 for a
 * `--dir` that is a file, as for the client commands). With
 * `foreground.persistCodeCache` the bundle's code cache is written once the
 * broker has run `CODE_CACHE_DELAY`, or as it stops if sooner.
 */
export const runForeground = (flags: BrokerFlags, foreground: ForegroundOptions = {}): Effect.Effect<void, ExitCode> =>
  Effect.gen(function*() {
    yield* ignoreStdioErrors
    const missing = sqliteMissing(isBuiltin, process.version)
    if (missing !== undefined) return yield* failWith(missing)
    const paths = yield* resolveProcessPaths(flags.dir)
    // A file in the way, or an agent dir this user may not enter: said as the client commands say it.
    // A --dir that does not exist yet is created (`broker --dir a/new/deep`), unlike theirs.
    yield* checkAgentDirOrExit(paths, flags.dir)
    if (paths.socketFallbackDir !== undefined) yield* prepareFallbackDir(paths.socketFallbackDir, currentUid())
    // The broker keeps asks open as long as clients of this agent dir wait for them (askTimeoutMs).
    // Its problems are logged once the broker runs: a directory that stops the broker is reported alone.
    const resolution = yield* readIntercomSettings({ dir: flags.dir }).pipe(Effect.provide(NodeFileSystem.layer))
    // Only a variable the broker uses stops it: a bad group variable is its clients' to refuse.
    const envError = resolution.errors.find((error): error is IntercomEnvError =>
      error instanceof IntercomEnvError && INTERCOM_ENV.askTimeoutMs.some((variable) => variable === error.variable)
    )
    if (envError !== undefined) return yield* envError
    const options: BrokerOptions = {
      intercomDir: paths.intercomDir,
      socketPath: paths.socketPath,
      askTimeout: resolution.settings.askTimeoutMs,
      ...(flags.maxSessions === undefined ? {} : { maxSessions: flags.maxSessions }),
      ...(flags.idleExitMs === undefined ? {} : { idleExit: flags.idleExitMs }),
      ...(flags.mailboxRetentionMs === undefined ? {} : { mailboxRetention: flags.mailboxRetentionMs }),
      ...(flags.replaceWindowMs === undefined ? {} : { replaceWindow: flags.replaceWindowMs }),
      ...(flags.topicEntriesPerGroup === undefined ? {} : { topicEntriesPerGroup: flags.topicEntriesPerGroup }),
      ...(flags.topicRecords === undefined ? {} : { topicRecords: flags.topicRecords }),
      ...(flags.topicBytes === undefined ? {} : { topicBytes: flags.topicBytes }),
      durability: flags.durability ?? resolution.settings.durability,
      warmUp: flags.warmUp ?? false
    }
    // Registered before the broker so that it runs after the broker's own cleanup.
    const started = yield* Ref.make(false)
    yield* Effect.addFinalizer(() =>
      Effect.flatMap(Ref.get(started), (wasStarted) => wasStarted ? Effect.logInfo("Intercom broker stopped") : Effect.void)
    )
    const handle = yield* runBroker(options)
    yield* Ref.set(started, true)
    yield* logIntercomSettingsProblems(resolution)
    yield* Console.log(`Intercom broker started (pid: ${handle.pid})`)
    yield* Console.log(`Listening on ${describeSocket(paths)} for agent dir ${paths.agentDir}`)
    // A cap asked for that the open-file limit cannot hold is a warning; the default one, what it implies (info).
    const limit = yield* openFileLimit
    if (flags.maxSessions !== undefined) {
      const capWarning = sessionCapWarning(flags.maxSessions, limit)
      if (capWarning !== undefined) yield* Effect.logWarning(capWarning)
    } else {
      const capNote = sessionCapNote(DEFAULT_MAX_SESSIONS, limit)
      if (capNote !== undefined) yield* Effect.logInfo(capNote)
    }
    if (foreground.persistCodeCache !== undefined) {
      const persist = Effect.sync(foreground.persistCodeCache) // writes at most once (cachedBundle.ts)
      yield* Effect.addFinalizer(() => persist)
      yield* Effect.forkScoped(Effect.andThen(Effect.sleep(CODE_CACHE_DELAY), persist))
    }
    const idle = yield* Effect.raceFirst(Effect.as(handle.idleExit, true), Effect.as(handle.socketLost, false))
    yield* idle
      ? Effect.logInfo("Idle: no sessions left, shutting down")
      : Effect.logWarning(
        `The socket file ${paths.socketPath} was deleted or replaced: no client can reach this broker, shutting down`
      )
  }).pipe(
    scopedWithGrace(SHUTDOWN_GRACE),
    Effect.catchTags({
      BrokerStartupError: reportError,
      BrokerOptionError: reportError,
      SocketPathError: reportError,
      IntercomEnvError: reportError
    })
  )
