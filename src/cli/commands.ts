/**
 * Size: about 425 lines, one concept — the broker's command line: its flags
 * (each a few lines tied to `BROKER_OPTION_RULES`) and the three small
 * subcommands that only read or signal it (status, stop with its warning
 * about connected sessions, stats).
 *
 * The `intercom` command tree:
 *
 *   intercom broker [--dir <dir>] [--max-sessions <n>] [...] [<ignored-path>]   foreground broker
 *     (<ignored-path> must look like a path, argv.ts `looksLikeBrokerScript`: any other word is a
 *     mistyped subcommand, a usage error, not a broker start)
 *   intercom broker status [--dir <dir>]                                  is one running?
 *   intercom broker stop [--dir <dir>]                                    SIGTERM it and wait
 *   intercom broker stats [--dir <dir>] [--json]                          its metrics (stats-v1)
 *   intercom top [--dir <dir>] [--interval <d>] [--once [--json]]          live view (top/command.ts)
 *
 * See docs/cli.md for output, exit codes and the socket-path fallback.
 */
import * as Argument from "effect/cli/Argument"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import {
  BROKER_OPTION_RULES,
  brokerOptionProblem,
  type CheckedOption,
  DEFAULT_MAX_SESSIONS,
  DEFAULT_REPLACE_WINDOW_MS,
  DEFAULT_TOPIC_BYTES,
  DEFAULT_TOPIC_ENTRIES_PER_GROUP,
  DEFAULT_TOPIC_RECORDS
} from "../broker/options.ts"
import { parseTimeout } from "./client/duration.ts"
import { looksLikeBrokerScript } from "./argv.ts"
import { closestWords } from "./suggest.ts"
import { isLifetimeLockHeld, pidFileHolder } from "../config/LifetimeLock.ts"
import { isProcessAlive, readPidFile } from "../config/pidFile.ts"
import { probeHealth } from "../transport/healthProbe.ts"
import { fetchBrokerStats } from "../client/BrokerStats.ts"
import { ObserveClient } from "../observe/ObserveClient.ts"
import { statsText } from "./brokerStats.ts"
import { clientCommands } from "./client/commands.ts"
import { top } from "./top/command.ts"
import { uiCommand } from "./ui/command.ts"
import { EXIT_FAILURE, ExitCode } from "./exit.ts"
import { describeSocket, failWith, reportError, runForeground } from "./foreground.ts"
import { checkBrokerFiles, resolveProcessPaths } from "./paths.ts"
import { printOrExit } from "./stdout.ts"
import { brokerTelemetry, cliTelemetry } from "./telemetry.ts"
import { processOwnsSocket, signalProcess } from "./processes.ts"

/** How long `broker stop` waits for the broker to go away. */
export const STOP_TIMEOUT = Duration.seconds(5)
/** How often `broker stop` looks whether the broker has gone. */
export const STOP_POLL_INTERVAL = Duration.millis(100)

const dirFlag = Flag.String("dir").pipe(
  Flag.withDescription(
    "Agent directory (default: $ATOMIC_CODING_AGENT_DIR, else $PI_CODING_AGENT_DIR, else ~/.pi/agent). Runtime files live in <dir>/intercom."
  ),
  Flag.filter((dir) => dir.trim().length > 0, () => "--dir must not be empty"),
  Flag.optional
)

/**
 * An integer flag for broker option `option`, held to the rule the broker
 * holds that option to when a program sets it (`BROKER_OPTION_RULES`), so that
 * the two cannot drift.
 */
const brokerIntFlag = (name: string, option: CheckedOption, description: string) =>
  Flag.Int(name).pipe(
    Flag.withDescription(description),
    Flag.filter(
      (n) => brokerOptionProblem(option, n) === undefined,
      (n) => `--${name} must be ${BROKER_OPTION_RULES[option].allowed}, got ${n}`
    ),
    Flag.optional
  )

/** `text` as milliseconds when it is a duration that broker option `option` allows (`BROKER_OPTION_RULES`). */
const brokerDuration = (option: CheckedOption, text: string): Option.Option<number> => {
  const ms = parseTimeout(text)
  return ms === undefined || brokerOptionProblem(option, ms) !== undefined ? Option.none() : Option.some(ms)
}

const maxSessionsFlag = brokerIntFlag(
  "max-sessions",
  "maxSessions",
  `Live sessions allowed at once (default ${DEFAULT_MAX_SESSIONS}).`
)

const topicEntriesFlag = brokerIntFlag(
  "topic-entries",
  "topicEntriesPerGroup",
  `Topic records and subscriptions (topics-v1) the broker keeps per group of a scope (default ${DEFAULT_TOPIC_ENTRIES_PER_GROUP}); past it a publish or subscribe is refused.`
)

const topicRecordsFlag = brokerIntFlag(
  "topic-records",
  "topicRecords",
  `Topic records (topics-v1) the broker keeps over all groups and scopes (default ${DEFAULT_TOPIC_RECORDS}); past it the records of publishers that left are forgotten first, then those published longest ago.`
)

const topicBytesFlag = brokerIntFlag(
  "topic-bytes",
  "topicBytes",
  `About how many bytes of topic records (topics-v1) the broker keeps over all groups and scopes (default ${DEFAULT_TOPIC_BYTES}, 64 MiB); past it records are forgotten as past --topic-records.`
)

const durabilityFlag = Flag.Literals("durability", ["sqlite", "memory"]).pipe(
  Flag.withDescription(
    "Where the broker keeps its state: sqlite (the default: <dir>/intercom/intercom.db; no acknowledged message is lost if the broker dies) or memory (lost with the process). Overrides `durability` in config.json."
  ),
  Flag.optional
)

const warmUpFlag = Flag.Literals("warm-up", ["on", "off"]).pipe(
  Flag.withDescription(
    "Whether the broker, once it listens, runs its own message path on private synthetic traffic until it is compiled (about half a second of CPU and some 25 MB more memory at rest, invisible to clients), so that the first real messages are not slowed by the JIT. Worth it for a long-lived broker whose first clients come after it has finished; a broker a client spawns for its own first message pays it during that message. Default off."
  ),
  Flag.optional
)

const idleExitFlag = Flag.String("idle-exit").pipe(
  Flag.withDescription(
    "How long the broker stays up with no session before it exits: a duration (5s, 2m, 90000) or `never`. Default 5s."
  ),
  Flag.filterMap(
    (text) => text.trim() === "never" ? Option.some(null) : brokerDuration("idleExit", text),
    (text) => `--idle-exit must be a duration such as 5s or 2m (at most 30 days), or never; got "${text}"`
  ),
  Flag.optional
)

const mailboxRetentionFlag = Flag.String("mailbox-retention").pipe(
  Flag.withDescription(
    "How long mail for a session that is away waits in the broker before it expires and its sender is told: a duration (90s, 12h, 3d) from 1s to 30d. Default 24h."
  ),
  Flag.filterMap(
    (text) => brokerDuration("mailboxRetention", text),
    (text) => `--mailbox-retention must be a duration from 1s to 30d such as 90s, 12h or 3d; got ${JSON.stringify(text)}`
  ),
  Flag.optional
)

const replaceWindowFlag = Flag.String("replace-window").pipe(
  Flag.withDescription(
    `How long replace-mode messages (delivery-v1) are coalesced before the latest is delivered: a duration (1500, 2s). Default ${DEFAULT_REPLACE_WINDOW_MS} ms.`
  ),
  Flag.filterMap(
    (text) => brokerDuration("replaceWindow", text),
    (text) => `--replace-window must be a positive duration such as 1500 or 2s (at most 30 days); got "${text}"`
  ),
  Flag.optional
)

/** The subcommands of `intercom broker`, as a mistyped one is told. */
const BROKER_SUBCOMMANDS = ["status", "stop", "stats"] as const

/**
 * The usage error for a word after `intercom broker` that is neither a
 * subcommand nor path-like (`looksLikeBrokerScript`): most likely a mistyped
 * subcommand, which must not start a broker.
 */
export const unknownBrokerSubcommand = (word: string): string => {
  const [nearest] = closestWords(word, BROKER_SUBCOMMANDS)
  return `unknown subcommand '${word}'${nearest === undefined ? "" : `; did you mean '${nearest}'?`} The subcommands of \`intercom broker\` are ${
    BROKER_SUBCOMMANDS.join(", ")
  }. (A <broker-script>, which is ignored, must contain / or end in .js, .mjs, .cjs or .ts.)`
}

const ignoredPathArgument = Argument.String("broker-script").pipe(
  Argument.withDescription(
    "Ignored. pi-intercom's auto-spawner appends the path of its broker.ts; it is accepted so `intercom broker` can be its brokerCommand. It must contain / or end in .js, .mjs, .cjs or .ts: any other word is an unknown subcommand."
  ),
  Argument.filter(looksLikeBrokerScript, unknownBrokerSubcommand),
  Argument.optional
)

// ---------------------------------------------------------------------------
// intercom broker (the broker itself is foreground.ts: the fast path runs it too)
// ---------------------------------------------------------------------------

const brokerBase = Command.make("broker", {
  maxSessions: maxSessionsFlag,
  idleExit: idleExitFlag,
  mailboxRetention: mailboxRetentionFlag,
  replaceWindow: replaceWindowFlag,
  topicEntries: topicEntriesFlag,
  topicRecords: topicRecordsFlag,
  topicBytes: topicBytesFlag,
  durability: durabilityFlag,
  warmUp: warmUpFlag,
  brokerScript: ignoredPathArgument
}).pipe(
  Command.withSharedFlags({ dir: dirFlag }),
  Command.withHandler((input) =>
    runForeground({
      dir: Option.getOrUndefined(input.dir),
      maxSessions: Option.getOrUndefined(input.maxSessions),
      idleExitMs: Option.getOrUndefined(input.idleExit),
      mailboxRetentionMs: Option.getOrUndefined(input.mailboxRetention),
      replaceWindowMs: Option.getOrUndefined(input.replaceWindow),
      topicEntriesPerGroup: Option.getOrUndefined(input.topicEntries),
      topicRecords: Option.getOrUndefined(input.topicRecords),
      topicBytes: Option.getOrUndefined(input.topicBytes),
      durability: Option.getOrUndefined(input.durability),
      warmUp: Option.getOrUndefined(Option.map(input.warmUp, (value) => value === "on"))
    })
  ),
  // The broker exports as intercom-broker however it is started: here as on the fast path (brokerEntry.ts).
  Command.provide(brokerTelemetry),
  Command.withShortDescription("Run the broker in the foreground (subcommands: status, stop, stats)"),
  Command.withDescription(
    "Run the intercom broker in the foreground. Prints `Intercom broker started (pid: <pid>)` once it listens; exits 0 on SIGINT/SIGTERM or when idle."
  )
)

/** The files of the agent dir that `broker`'s `--dir` names (or the default); an unusable socket path ends the command. */
const brokerPaths = Effect.flatMap(
  brokerBase,
  ({ dir }) => resolveProcessPaths(Option.getOrUndefined(dir)).pipe(Effect.catchTag("SocketPathError", reportError))
)

// ---------------------------------------------------------------------------
// intercom broker status
// ---------------------------------------------------------------------------

const status = Command.make(
  "status",
  {},
  Effect.fnUntraced(function*() {
    const paths = yield* brokerPaths
    const running = yield* probeHealth(paths.socketPath)
    // A file where the intercom dir must be, or denied the dir or the socket, this user cannot tell: not "not running".
    if (!running) yield* checkBrokerFiles(paths).pipe(Effect.catchTags({ BrokerFilesInaccessible: reportError, IntercomDirNotADirectory: reportError }))
    // A broker that does not answer but holds its lifetime lock is alive: frozen or stuck, not gone.
    const frozen = !running && (yield* isLifetimeLockHeld(paths.intercomDir))
    // Not answering, the lock's holder may not have written its own pid yet: broker.pid may still name an older
    // broker, whose pid another process may have by now. Named only when the kernel lists it as the holder.
    const { holds, pid } = frozen
      ? yield* pidFileHolder(paths.intercomDir)
      : { holds: true, pid: yield* readPidFile(paths.pidFile) }
    const holderPid = holds === false ? undefined : pid
    const pidLine = pid === undefined
      ? `unknown (no readable ${paths.pidFile})`
      : holds === false
      ? `unknown (${paths.pidFile} names ${pid}, which does not hold broker.lock)`
      : holds === undefined
      ? `${pid} (from ${paths.pidFile}; not verified to hold broker.lock)`
      : String(pid)
    const lines = [
      `Intercom broker: ${running ? "running" : frozen ? "not answering (it is alive: it holds broker.lock)" : "not running"}`,
      ...(running || frozen ? [`  pid:       ${pidLine}`] : []),
      `  socket:    ${describeSocket(paths)}`,
      `  agent dir: ${paths.agentDir}`
    ]
    if (frozen) {
      lines.push(
        `  A stopped process resumes with \`kill -CONT ${holderPid ?? "<pid>"}\`; \`intercom broker stop\` ends it. No new broker starts while it lives.`
      )
    } else if (!running && pid !== undefined) {
      lines.push(`  pid file:  ${paths.pidFile} names ${pid}, which does not answer as a broker (stale)`)
    }
    yield* printOrExit(lines.join("\n"))
    if (!running) return yield* new ExitCode({ code: EXIT_FAILURE })
  })
).pipe(
  Command.withShortDescription("Is a broker running? (exit 0 yes, 1 no)"),
  Command.withDescription("Report whether a broker answers on the socket. Exits 0 if one is running, 1 if not.")
)

// ---------------------------------------------------------------------------
// intercom broker stop
// ---------------------------------------------------------------------------

/**
 * Runs `stopped` now and then every `STOP_POLL_INTERVAL` until it answers
 * `true`; `false` once `STOP_TIMEOUT` has passed without that (the look in
 * progress then still finishes: a probe is never cut short).
 */
export const pollUntilStopped = <R>(stopped: Effect.Effect<boolean, never, R>): Effect.Effect<boolean, never, R> =>
  stopped.pipe(
    Effect.repeat({
      schedule: Schedule.spaced(STOP_POLL_INTERVAL).pipe(Schedule.upTo({ duration: STOP_TIMEOUT })),
      until: (done) => done
    })
  )

/** Whether `pid` is gone and nothing answers on the socket any more. */
const brokerGone = (pid: number, socketPath: string): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    if (yield* isProcessAlive(pid)) return false
    return !(yield* probeHealth(socketPath, Duration.millis(500)))
  })

/** How long `broker stop` waits for the broker's live view to count its sessions. */
const SESSION_COUNT_TIMEOUT = Duration.seconds(1)

/**
 * How many sessions the broker on `socketPath` has, from its live view
 * (`observe-v1`: the observer is no session, so no one sees it come and
 * go); `undefined` when it does not say in time (an older broker).
 */
const connectedSessions = (socketPath: string): Effect.Effect<number | undefined> =>
  ObserveClient.snapshot({ socketPath }).pipe(
    Effect.map((snapshot) => snapshot.sessionCount),
    Effect.timeoutOption(SESSION_COUNT_TIMEOUT),
    Effect.map(Option.getOrUndefined),
    Effect.catch(() => Effect.succeed(undefined))
  )

/** What `broker stop` says on stderr after stopping a broker that had `count` sessions connected. */
export const stopWarning = (count: number): string =>
  `Warning: ${count} ${
    count === 1 ? "session was" : "sessions were"
  } connected to it. Their clients reconnect, and may start a broker again within seconds (a client that finds none starts one). To keep it stopped, end those sessions first (Ctrl-C each \`intercom watch\`, quit the pi sessions), then run \`intercom broker stop\` again.`

const stop = Command.make(
  "stop",
  {},
  Effect.fnUntraced(function*() {
    const paths = yield* brokerPaths
    const answering = yield* probeHealth(paths.socketPath)
    // Denied the dir or the socket, this user cannot tell whether one runs: not "No intercom broker is running".
    if (!answering) yield* checkBrokerFiles(paths).pipe(Effect.catchTags({ BrokerFilesInaccessible: reportError, IntercomDirNotADirectory: reportError }))
    if (!answering && !(yield* isLifetimeLockHeld(paths.intercomDir))) {
      yield* printOrExit(`No intercom broker is running (socket ${paths.socketPath}).`)
      return
    }
    const pid = yield* readPidFile(paths.pidFile)
    const refuse = (why: string) =>
      failWith(
        `An intercom broker ${answering ? "answers" : "holds the lock but does not answer"} on ${paths.socketPath}, but ${why}. Not sending any signal.`
      )
    if (pid === undefined) {
      return yield* refuse(`${paths.pidFile} is missing or unreadable, so its process is unknown`)
    }
    if (!(yield* isProcessAlive(pid))) {
      return yield* refuse(`${paths.pidFile} names ${pid}, which is not running`)
    }
    if ((yield* processOwnsSocket(pid, paths.socketPath)) === false) {
      return yield* refuse(`${paths.pidFile} names ${pid}, which does not hold the broker socket (stale pid file?)`)
    }
    // Sessions still connected: their clients reconnect, and one may start a broker again at once (warned below).
    const connected = answering ? yield* connectedSessions(paths.socketPath) : undefined
    const sent = yield* signalProcess(pid, "SIGTERM")
    if (sent === "denied") {
      return yield* failWith(`Not permitted to signal the intercom broker (pid ${pid}).`)
    }
    // A stopped (SIGSTOP) broker takes the SIGTERM only once it runs again.
    if (!answering) yield* signalProcess(pid, "SIGCONT")
    if (!(yield* pollUntilStopped(brokerGone(pid, paths.socketPath)))) {
      return yield* failWith(
        `Sent SIGTERM to the intercom broker (pid ${pid}), but it did not stop within ${
          Duration.format(STOP_TIMEOUT)
        }.`
      )
    }
    yield* printOrExit(`Intercom broker stopped (pid: ${pid}).`)
    if (connected !== undefined && connected > 0) yield* Console.error(stopWarning(connected))
  })
).pipe(
  Command.withShortDescription("Stop the running broker (SIGTERM, wait up to 5 s)"),
  Command.withDescription(
    "Stop the running broker: SIGTERM the pid in broker.pid (only if a broker answers on the socket, or holds broker.lock without answering: then it is also sent SIGCONT) and wait up to 5 s for it to exit. Exits 0 when stopped or when none was running."
  )
)

// ---------------------------------------------------------------------------
// intercom broker stats
// ---------------------------------------------------------------------------

const stats = Command.make(
  "stats",
  {
    json: Flag.Boolean("json").pipe(
      Flag.withDescription("Print the snapshot as one JSON object (the stats-v1 `stats` field)."),
      Flag.withDefault(false)
    )
  },
  Effect.fnUntraced(function*({ json }) {
    const paths = yield* brokerPaths
    const snapshot = yield* fetchBrokerStats({ socketPath: paths.socketPath }).pipe(
      Effect.catchTag("BrokerStatsFailed", (error) => failWith(error.message))
    )
    yield* printOrExit(json ? JSON.stringify(snapshot) : statsText(snapshot))
  })
).pipe(
  Command.withShortDescription("Print the running broker's metrics (exit 1 if none answers)"),
  Command.withDescription(
    "Print the running broker's metrics: sessions by group and status, messages routed by outcome, queue depths, open asks and their age, store commit latency (docs/observability.md). Never starts a broker."
  )
)

// ---------------------------------------------------------------------------

/** `intercom broker`, with its `status`, `stop` and `stats` subcommands. */
export const broker = brokerBase.pipe(
  Command.withSubcommands([
    status.pipe(Command.provide(cliTelemetry)),
    stop.pipe(Command.provide(cliTelemetry)),
    stats.pipe(Command.provide(cliTelemetry))
  ])
)

/** The whole `intercom` command tree, as program.ts runs it. */
export const intercom = Command.make("intercom").pipe(
  Command.withDescription("Local message broker for coding-agent sessions (wire-compatible with pi-intercom)."),
  // Each command gets its own telemetry (OTLP export when OTEL_EXPORTER_OTLP_* say so; nothing is loaded otherwise):
  // the foreground broker as intercom-broker (above), every other command as intercom-cli (the client
  // commands in client/commands.ts).
  Command.withSubcommands([
    broker,
    ...clientCommands,
    top.pipe(Command.provide(cliTelemetry)),
    uiCommand.pipe(Command.provide(cliTelemetry))
  ])
)
