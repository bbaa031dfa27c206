/**
 * The `intercom` command tree:
 *
 *   intercom broker [--dir <dir>] [--max-sessions <n>] [<ignored-path>]   foreground broker
 *   intercom broker status [--dir <dir>]                                  is one running?
 *   intercom broker stop [--dir <dir>]                                    SIGTERM it and wait
 *
 * See docs/cli.md for output, exit codes and the socket-path fallback.
 */
import * as Argument from "effect/cli/Argument"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Clock from "effect/Clock"
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import { runBroker } from "../broker/Broker.ts"
import { type BrokerOptions, DEFAULT_MAX_SESSIONS } from "../broker/options.ts"
import { probeHealth } from "../transport/healthProbe.ts"
import { clientCommands } from "./client/commands.ts"
import { EXIT_FAILURE, ExitCode } from "./exit.ts"
import { ignoreStdioErrors } from "./logging.ts"
import { currentUid, type IntercomPaths, prepareFallbackDir, resolveProcessPaths } from "./paths.ts"
import { isProcessAlive, processOwnsSocket, readPidFile, signalProcess } from "./processes.ts"
import { scopedWithGrace } from "./shutdown.ts"

/** How long `broker stop` waits for the broker to go away, and how often it looks. */
export const STOP_TIMEOUT = Duration.seconds(5)
export const STOP_POLL_INTERVAL = Duration.millis(100)
/** How long the broker's shutdown may take before the process gives up on it. */
export const SHUTDOWN_GRACE = Duration.seconds(3)

/** Prints `message` on stderr and ends the command with exit code 1. */
const failWith = (message: string): Effect.Effect<never, ExitCode> =>
  Console.error(message).pipe(Effect.andThen(Effect.fail(new ExitCode({ code: EXIT_FAILURE }))))

/** A typed error whose `message` is already user-facing → stderr, exit 1. */
const reportError = (error: { readonly message: string }): Effect.Effect<never, ExitCode> => failWith(error.message)

const dirFlag = Flag.String("dir").pipe(
  Flag.withDescription(
    "Agent directory (default: $ATOMIC_CODING_AGENT_DIR, else $PI_CODING_AGENT_DIR, else ~/.pi/agent). Runtime files live in <dir>/intercom."
  ),
  Flag.filter((dir) => dir.trim().length > 0, () => "--dir must not be empty"),
  Flag.optional
)

const maxSessionsFlag = Flag.Int("max-sessions").pipe(
  Flag.withDescription(`Live sessions allowed at once (default ${DEFAULT_MAX_SESSIONS}).`),
  Flag.filter((n) => n > 0, (n) => `--max-sessions must be a positive integer, got ${n}`),
  Flag.optional
)

const ignoredPathArgument = Argument.String("broker-script").pipe(
  Argument.withDescription(
    "Ignored. pi-intercom's auto-spawner appends the path of its broker.ts; it is accepted so `intercom broker` can be its brokerCommand."
  ),
  Argument.optional
)

const describeSocket = (paths: IntercomPaths): string =>
  paths.fallbackDir === undefined
    ? paths.socketPath
    : `${paths.socketPath} (short fallback: ${paths.defaultSocketPath} is too long for a Unix socket)`

// ---------------------------------------------------------------------------
// intercom broker
// ---------------------------------------------------------------------------

interface BrokerInput {
  readonly dir: Option.Option<string>
  readonly maxSessions: Option.Option<number>
  readonly brokerScript: Option.Option<string>
}

/**
 * Runs the broker in the foreground until a signal (runMain interrupts this
 * fiber) or idle exit; either way the scope closes, which ends every session
 * socket and removes the socket and pid file.
 */
const runForeground = (input: BrokerInput): Effect.Effect<void, ExitCode> =>
  Effect.gen(function*() {
    yield* ignoreStdioErrors
    const paths = yield* resolveProcessPaths(Option.getOrUndefined(input.dir))
    if (paths.fallbackDir !== undefined) yield* prepareFallbackDir(paths.fallbackDir, currentUid())
    const options: BrokerOptions = Option.match(input.maxSessions, {
      onNone: () => ({ intercomDir: paths.intercomDir, socketPath: paths.socketPath }),
      onSome: (maxSessions) => ({ intercomDir: paths.intercomDir, socketPath: paths.socketPath, maxSessions })
    })
    // Registered before the broker so that it runs after the broker's own cleanup.
    const started = yield* Ref.make(false)
    yield* Effect.addFinalizer(() =>
      Effect.flatMap(Ref.get(started), (wasStarted) => wasStarted ? Effect.logInfo("Intercom broker stopped") : Effect.void)
    )
    const handle = yield* runBroker(options)
    yield* Ref.set(started, true)
    yield* Console.log(`Intercom broker started (pid: ${handle.pid})`)
    yield* Console.log(`Listening on ${describeSocket(paths)} for agent dir ${paths.agentDir}`)
    yield* handle.idleExit
    yield* Effect.logInfo("Idle: no sessions left, shutting down")
  }).pipe(
    scopedWithGrace(SHUTDOWN_GRACE),
    Effect.catchTags({ BrokerStartupError: reportError, SocketPathError: reportError })
  )

const brokerBase = Command.make("broker", {
  maxSessions: maxSessionsFlag,
  brokerScript: ignoredPathArgument
}).pipe(
  Command.withSharedFlags({ dir: dirFlag }),
  Command.withHandler(runForeground),
  Command.withShortDescription("Run the broker in the foreground (subcommands: status, stop)"),
  Command.withDescription(
    "Run the intercom broker in the foreground. Prints `Intercom broker started (pid: <pid>)` once it listens; exits 0 on SIGINT/SIGTERM or when idle."
  )
)

// ---------------------------------------------------------------------------
// intercom broker status
// ---------------------------------------------------------------------------

const status = Command.make(
  "status",
  {},
  Effect.fnUntraced(function*() {
    const { dir } = yield* brokerBase
    const paths = yield* resolveProcessPaths(Option.getOrUndefined(dir)).pipe(
      Effect.catchTag("SocketPathError", reportError)
    )
    const running = yield* probeHealth(paths.socketPath)
    const pid = yield* readPidFile(paths.pidFile)
    const lines = [
      `Intercom broker: ${running ? "running" : "not running"}`,
      ...(running ? [`  pid:       ${pid ?? `unknown (no readable ${paths.pidFile})`}`] : []),
      `  socket:    ${describeSocket(paths)}`,
      `  agent dir: ${paths.agentDir}`
    ]
    if (!running && pid !== undefined) {
      lines.push(`  pid file:  ${paths.pidFile} names ${pid}, which does not answer as a broker (stale)`)
    }
    yield* Console.log(lines.join("\n"))
    if (!running) return yield* new ExitCode({ code: EXIT_FAILURE })
  })
).pipe(
  Command.withShortDescription("Is a broker running? (exit 0 yes, 1 no)"),
  Command.withDescription("Report whether a broker answers on the socket. Exits 0 if one is running, 1 if not.")
)

// ---------------------------------------------------------------------------
// intercom broker stop
// ---------------------------------------------------------------------------

/** Polls until nothing answers on the socket and `pid` is gone; `false` on timeout. */
const waitUntilStopped = (pid: number, socketPath: string): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    const deadline = (yield* Clock.currentTimeMillis) + Duration.toMillis(STOP_TIMEOUT)
    while (true) {
      const alive = yield* isProcessAlive(pid)
      const answers = alive ? true : yield* probeHealth(socketPath, Duration.millis(500))
      if (!alive && !answers) return true
      if ((yield* Clock.currentTimeMillis) >= deadline) return false
      yield* Effect.sleep(STOP_POLL_INTERVAL)
    }
  })

const stop = Command.make(
  "stop",
  {},
  Effect.fnUntraced(function*() {
    const { dir } = yield* brokerBase
    const paths = yield* resolveProcessPaths(Option.getOrUndefined(dir)).pipe(
      Effect.catchTag("SocketPathError", reportError)
    )
    if (!(yield* probeHealth(paths.socketPath))) {
      yield* Console.log(`No intercom broker is running (socket ${paths.socketPath}).`)
      return
    }
    const pid = yield* readPidFile(paths.pidFile)
    const refuse = (why: string) =>
      failWith(`An intercom broker answers on ${paths.socketPath}, but ${why}. Not sending any signal.`)
    if (pid === undefined) {
      return yield* refuse(`${paths.pidFile} is missing or unreadable, so its process is unknown`)
    }
    if (!(yield* isProcessAlive(pid))) {
      return yield* refuse(`${paths.pidFile} names ${pid}, which is not running`)
    }
    if ((yield* processOwnsSocket(pid, paths.socketPath)) === false) {
      return yield* refuse(`${paths.pidFile} names ${pid}, which does not hold the broker socket (stale pid file?)`)
    }
    const sent = yield* signalProcess(pid, "SIGTERM")
    if (sent === "denied") {
      return yield* failWith(`Not permitted to signal the intercom broker (pid ${pid}).`)
    }
    if (!(yield* waitUntilStopped(pid, paths.socketPath))) {
      return yield* failWith(
        `Sent SIGTERM to the intercom broker (pid ${pid}), but it did not stop within ${
          Duration.format(STOP_TIMEOUT)
        }.`
      )
    }
    yield* Console.log(`Intercom broker stopped (pid: ${pid}).`)
  })
).pipe(
  Command.withShortDescription("Stop the running broker (SIGTERM, wait up to 5 s)"),
  Command.withDescription(
    "Stop the running broker: SIGTERM the pid in broker.pid (only if a broker answers on the socket) and wait up to 5 s for it to exit. Exits 0 when stopped or when none was running."
  )
)

// ---------------------------------------------------------------------------

export const broker = brokerBase.pipe(Command.withSubcommands([status, stop]))

export const intercom = Command.make("intercom").pipe(
  Command.withDescription("Local message broker for coding-agent sessions (wire-compatible with pi-intercom)."),
  Command.withSubcommands([broker, ...clientCommands])
)
