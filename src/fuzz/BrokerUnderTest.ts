/**
 * The broker a fuzz campaign attacks, in one of two forms:
 *
 * - `process` (the default): the built CLI, `node --expose-gc --import
 *   dist/fuzz/gcHook.js dist/bin/intercom.mjs broker --dir <tmp>`, in its own
 *   process group. Its memory is measured from outside: RSS and peak RSS from
 *   /proc/<pid>/status, and "what it still holds" by sending SIGUSR2, on which
 *   the preloaded hook forces two full GCs and prints a `@@fuzz-memory` line.
 *   Its log is its stderr.
 * - `in-process`: `runBroker` in a temp dir inside the fuzzer's own process,
 *   its log captured by a Logger formatting lines as the CLI does. Memory is
 *   not measured (the fuzzer's own allocations would be counted with it).
 *
 * Both need `npm run build` only for the process form. Closing the Scope
 * stops the broker and removes the temp dir.
 */
import { Data, Deferred, Duration, Effect, Exit, Logger, Option, Schedule, Schema, type Scope } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { runBroker } from "../broker/runBroker.ts"
import { formatLine } from "../cli/logging.ts"
import { FUZZ_DIR_ENV, MEMORY_LINE } from "./memoryLine.ts"

/** Where the broker under test runs. */
export type BrokerMode = "process" | "in-process"

/** The broker's memory after two forced GCs, in bytes. */
export interface MemorySample {
  readonly rss: number
  /** V8 heap in use plus memory outside it held by JS objects (`heapUsed + external`). */
  readonly heap: number
  /** Whether the GCs really ran (`--expose-gc`). */
  readonly collected: boolean
}

/** The broker could not be started, or went away while it was being measured. */
export class BrokerTrouble extends Data.TaggedError("BrokerTrouble")<{ readonly detail: string; readonly log: string }> {
  override get message(): string {
    return `broker under test: ${this.detail}${this.log === "" ? "" : `\n--- its log:\n${this.log}`}`
  }
}

/** A running broker under test; see the module header. */
export interface BrokerUnderTest {
  readonly mode: BrokerMode
  readonly socketPath: string
  /** The broker's pid (the fuzzer's own in-process). */
  readonly pid: number
  /** Memory after two forced GCs; undefined in-process. */
  readonly memory: Effect.Effect<MemorySample | undefined, BrokerTrouble>
  /** The highest RSS the process has had so far (VmHWM); undefined in-process. */
  readonly peakRss: Effect.Effect<number | undefined>
  /**
   * How many connections the broker holds: its open sockets (process), or
   * its sessions, unregistered and waiting connections (in-process).
   */
  readonly connections: Effect.Effect<number>
  /** The log so far, line by line (the memory hook's lines left out). */
  readonly logLines: () => ReadonlyArray<string>
  /** Why the broker is gone when it went before the fuzzer stopped it (a crash), else undefined. */
  readonly died: () => string | undefined
}

/** The package root: two levels above this module, in src/fuzz and in dist/fuzz alike. */
const packageRoot = (): string => path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..")

/** A short temp dir (socket paths must stay under ~107 bytes), removed with the Scope. */
const tempRoot = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "eifz-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

const MemoryJson = Schema.fromJsonString(Schema.Struct({
  rss: Schema.Number,
  heapUsed: Schema.Number,
  external: Schema.Number,
  gc: Schema.Boolean
}))
const decodeMemory = Schema.decodeUnknownOption(MemoryJson)

/** A field of /proc/<pid>/status in bytes (its value is in kB), or undefined. */
const procStatus = (pid: number, field: "VmRSS" | "VmHWM"): number | undefined => {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))
    return match?.[1] === undefined ? undefined : Number(match[1]) * 1024
  } catch {
    return undefined
  }
}

/** Open sockets of process `pid` (Linux), or -1 when /proc cannot tell. */
const openSockets = (pid: number): number => {
  try {
    let count = 0
    for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
      try {
        if (fs.readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith("socket:")) count++
      } catch {
        // closed meanwhile
      }
    }
    return count
  } catch {
    return -1
  }
}

/** The environment of the broker process: ours, without what would point it at a real agent dir. */
const brokerEnv = (): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !/^(ATOMIC|PI)_(CODING_AGENT_DIR|INTERCOM_)/.test(key)) env[key] = value
  }
  return { ...env, NODE_NO_WARNINGS: "1" }
}

const STARTED = /^Listening on (\S+)/m

/** Lines of the broker's log a `BrokerTrouble` quotes (its last ones). */
const TROUBLE_LOG_LINES = 40

/**
 * Starts the built broker as a process with the GC hook; stopped (SIGTERM, then SIGKILL) with the Scope,
 * or by the hook when this process dies first (its stdin pipe ends).
 * It never exits on idleness: an attack whose registrations are all refused leaves it without
 * sessions, and on a loaded machine the default 5 s idle delay ran out mid-attack.
 */
const startProcess = (memoryReport: Duration.Input, imports: ReadonlyArray<string>) => Effect.gen(function*() {
  const root = yield* tempRoot
  const pkg = packageRoot()
  const main = path.join(pkg, "dist", "bin", "intercom.mjs")
  const hook = path.join(pkg, "dist", "fuzz", "gcHook.js")
  for (const file of [main, hook]) {
    if (!fs.existsSync(file)) {
      return yield* new BrokerTrouble({ detail: `${file} is missing: run \`npm run build\` first`, log: "" })
    }
  }
  const output = { stdout: "", lastMemoryLine: "", memoryLines: 0 }
  const lines: Array<string> = []
  const waiters = new Set<() => boolean>()
  const wake = () => {
    for (const waiter of [...waiters]) if (waiter()) waiters.delete(waiter)
  }
  const closed = yield* Deferred.make<string>()
  let stopping = false
  let death: string | undefined
  let partial = ""
  const child = yield* Effect.acquireRelease(
    Effect.sync(() => {
      const child = spawn(
        process.execPath,
        ["--expose-gc", "--import", hook, ...imports.flatMap((module) => ["--import", module]), main, "broker", "--dir", root, "--idle-exit", "never"],
        // stdin: a pipe never written, whose end tells the GC hook the fuzzer is gone (gcHook.ts).
        { env: { ...brokerEnv(), [FUZZ_DIR_ENV]: root }, stdio: ["pipe", "pipe", "pipe"], detached: true }
      )
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
        output.stdout += chunk
        wake()
      })
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
        partial += chunk
        const complete = partial.split("\n")
        partial = complete.pop() ?? ""
        for (const line of complete) {
          if (line.startsWith(MEMORY_LINE)) {
            output.memoryLines++
            output.lastMemoryLine = line
          } else {
            lines.push(line)
          }
        }
        wake()
      })
      child.once("close", (code, signal) => {
        const how = `exited with ${signal === null ? `code ${code}` : signal}`
        if (!stopping) death = how
        Deferred.doneUnsafe(closed, Exit.succeed(how))
        wake()
      })
      return child
    }),
    (child) =>
      Effect.gen(function*() {
        stopping = true
        const pid = child.pid
        if (pid === undefined) return
        yield* Effect.sync(() => {
          try {
            process.kill(-pid, "SIGTERM")
            // A stopped broker (SIGSTOP, a hung-broker test) handles the SIGTERM only once it runs again.
            process.kill(-pid, "SIGCONT")
          } catch {
            // gone already
          }
        })
        const gone = yield* Effect.timeoutOption(Deferred.await(closed), "5 seconds")
        if (Option.isNone(gone)) {
          yield* Effect.sync(() => {
            try {
              process.kill(-pid, "SIGKILL")
            } catch {
              // gone meanwhile
            }
          })
          yield* Effect.timeoutOption(Deferred.await(closed), "5 seconds")
        }
      })
  )
  // The end of the log, for a trouble's message: a long campaign's whole log would bury it.
  const log = () => lines.slice(-TROUBLE_LOG_LINES).join("\n")
  /** Waits until `ready` answers (re-checked on every output chunk and at exit). */
  const waitFor = <A>(what: string, ready: () => A | undefined, timeout: Duration.Input) =>
    Effect.callback<A, BrokerTrouble>((resume) => {
      const attempt = (): boolean => {
        const value = ready()
        if (value !== undefined) {
          resume(Effect.succeed(value))
          return true
        }
        if (Deferred.isDoneUnsafe(closed)) {
          resume(Effect.fail(new BrokerTrouble({ detail: `it ${death ?? "exited"} before ${what}`, log: log() })))
          return true
        }
        return false
      }
      if (attempt()) return
      waiters.add(attempt)
      return Effect.sync(() => void waiters.delete(attempt))
    }).pipe(
      Effect.timeoutOrElse({
        duration: timeout,
        orElse: () => Effect.fail(new BrokerTrouble({ detail: `no ${what} within ${Duration.format(Duration.fromInputUnsafe(timeout))}`, log: log() }))
      })
    )
  const socketPath = yield* waitFor("startup line", () => STARTED.exec(output.stdout)?.[1], "20 seconds")
  const pid = child.pid ?? -1
  const memory = Effect.gen(function*() {
    const seen = output.memoryLines
    yield* Effect.sync(() => child.kill("SIGUSR2"))
    const line = yield* waitFor("memory report", () => output.memoryLines > seen ? output.lastMemoryLine : undefined, memoryReport)
    const report = decodeMemory(line.slice(MEMORY_LINE.length + 1))
    if (Option.isNone(report)) return yield* new BrokerTrouble({ detail: `unreadable memory line ${line}`, log: "" })
    const value = report.value
    return { rss: value.rss, heap: value.heapUsed + value.external, collected: value.gc } satisfies MemorySample
  })
  return {
    mode: "process",
    socketPath,
    pid,
    memory,
    peakRss: Effect.sync(() => procStatus(pid, "VmHWM")),
    // The listening socket is not a connection.
    connections: Effect.sync(() => Math.max(0, openSockets(pid) - 1)),
    logLines: () => lines,
    died: () => death
  } satisfies BrokerUnderTest
})

/** Runs `runBroker` in this process, its log captured as the CLI would print it. */
const startInProcess = Effect.gen(function*() {
  const root = yield* tempRoot
  const intercomDir = path.join(root, "intercom")
  const socketPath = path.join(intercomDir, "broker.sock")
  const lines: Array<string> = []
  const capture = Logger.make((options) => {
    lines.push(...formatLine(options).split("\n"))
  })
  const handle = yield* runBroker({ intercomDir, socketPath, writePidFile: false, idleExit: null }).pipe(
    Effect.provideService(Logger.CurrentLoggers, new Set([capture])),
    Effect.mapError((error) => new BrokerTrouble({ detail: error.message, log: "" }))
  )
  return {
    mode: "in-process",
    socketPath,
    pid: process.pid,
    memory: Effect.succeed(undefined),
    peakRss: Effect.succeed(undefined),
    connections: Effect.map(handle.stats, (stats) => stats.sessions + stats.unregistered + stats.waiting),
    logLines: () => lines,
    died: () => undefined
  } satisfies BrokerUnderTest
})

/** How long the broker process may take to answer SIGUSR2 with its memory line, unless told otherwise. */
export const MEMORY_REPORT_TIMEOUT: Duration.Duration = Duration.seconds(30)

/**
 * Starts the broker under test in the current Scope. `memoryReport` bounds
 * how long `memory` waits for the process's report (default
 * `MEMORY_REPORT_TIMEOUT`); past it, `memory` fails with a `BrokerTrouble`.
 * `imports` are modules the process preloads after the GC hook (a test's
 * fault hook: a broker that leaks, say); in-process they are ignored.
 */
export const startBroker = (
  mode: BrokerMode,
  options?: { readonly memoryReport?: Duration.Input; readonly imports?: ReadonlyArray<string> }
): Effect.Effect<BrokerUnderTest, BrokerTrouble, Scope.Scope> =>
  mode === "process" ? startProcess(options?.memoryReport ?? MEMORY_REPORT_TIMEOUT, options?.imports ?? []) : startInProcess

/**
 * Waits until `connections` is at most `target` (the broker has seen the
 * attackers' sockets close), polling every 50 ms; false after `timeout`.
 * The condition is the broker's own count, not the passage of time.
 */
export const awaitConnectionsAtMost = (
  broker: BrokerUnderTest,
  target: number,
  timeout: Duration.Input
): Effect.Effect<boolean> =>
  broker.connections.pipe(
    Effect.repeat({ schedule: Schedule.spaced("50 millis"), until: (count) => count <= target }),
    Effect.map((count) => count <= target),
    Effect.timeoutOption(timeout),
    Effect.map(Option.getOrElse(() => false))
  )
