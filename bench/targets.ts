/**
 * Targets under test (our broker in durable and in memory mode, the raw relay,
 * and a NATS server as an outside reference) as child processes: spawn in a
 * fresh short temp dir, wait for the ready line, read /proc stats, stop.
 * Every spawned process and temp dir is tracked and cleaned up on exit,
 * including on errors and Ctrl-C.
 *
 * Size: about 520 lines, one concept — a target's life as a process (its
 * spec, start, stop and the /proc readings taken while it runs). The start
 * is most of it: the ready line, the open-file limit and the error a target
 * that fails to start gives.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import fs from "node:fs"
import os from "node:os"
import { stripTypeScriptTypes } from "node:module"
import path from "node:path"
import { fileURLToPath } from "node:url"
import { DEFAULT_MAX_SESSIONS } from "../src/broker/options.ts"
import { BROKER_NODE_FLAGS, BUNDLED_CLI, brokerEntryPoint } from "../src/config/install.ts"
import { BROKER_OWN_FILES, parseOpenFileLimit } from "../src/config/openFiles.ts"

/**
 * The table's columns: `broker` is ours as a client spawns it (durable, the
 * default) or `--broker-cmd`; `memory` is ours with `--durability memory`;
 * `raw` the raw relay; `nats` a `nats-server` found on the PATH.
 */
export type TargetName = "raw" | "broker" | "memory" | "nats"

/** Every column, in table order. */
export const TARGET_ORDER: ReadonlyArray<TargetName> = ["raw", "broker", "memory", "nats"]

/** What a ready line told: the serving pid (when it differs from the child's) and a TCP port. */
export interface Ready {
  readonly pid: number | undefined
  readonly port: number | undefined
}

/**
 * Called at the edges of a workload's measured interval, after its warm-up
 * (`bench/profile.ts` attributes the target's CPU inside it): `begin` just
 * before the first measured send, `end` once the last one is answered, with
 * the number of units measured (messages, round trips, one startup).
 */
export interface MeasureHooks {
  readonly begin: (pid: number) => void
  readonly end: (pid: number, units: number) => void
}

export interface TargetSpec {
  readonly name: TargetName
  /** Told where the measured interval starts and ends (the profiler's hooks); undefined for a plain bench run. */
  readonly measure?: MeasureHooks
  /** argv for a fresh instance whose agent dir is `dir`. */
  readonly argv: (dir: string, maxSessions: number | undefined) => ReadonlyArray<string>
  readonly socketPath: (dir: string) => string
  /** Recognises readiness in what the process printed so far (stdout, stderr); default: our ready line. */
  readonly ready?: (stdout: string, stderr: string) => Ready | undefined
}

/** Our broker, in either durability mode (the workloads that need intercom's own features run only on these). */
export const isBroker = (spec: TargetSpec): boolean => spec.name === "broker" || spec.name === "memory"

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")

const socketIn = (dir: string): string => path.join(dir, "intercom", "broker.sock")

/**
 * The raw relay is spawned from a type-stripped `.mjs` copy: running `.ts`
 * directly costs ~170 ms of startup on this machine (Node loads its
 * TypeScript stripper), which would distort the startup reference. The broker
 * runs from `dist/`, also plain JS.
 */
let relayScript: string | undefined
const rawRelayScript = (): string => {
  if (relayScript !== undefined) return relayScript
  const outDir = makeTempDir()
  for (const name of ["raw-relay", "framing"]) {
    const source = fs.readFileSync(path.join(repoRoot, "bench", `${name}.ts`), "utf8")
    const js = stripTypeScriptTypes(source, { mode: "strip" }).replaceAll("./framing.ts", "./framing.mjs")
    fs.writeFileSync(path.join(outDir, `${name}.mjs`), js)
  }
  relayScript = path.join(outDir, "raw-relay.mjs")
  return relayScript
}

export const rawSpec: TargetSpec = {
  name: "raw",
  argv: (dir) => [process.execPath, rawRelayScript(), socketIn(dir)],
  socketPath: socketIn
}

/**
 * The session cap a workload that sets none runs with: the default, or what
 * this machine's open-file limit holds when that is less, so the broker's
 * start-up warning about the limit (src/config/openFiles.ts) does not ride
 * along as a note on every run. A cap costs nothing per message.
 */
const fittingCap = (): number | undefined => {
  let limit: number | undefined
  try {
    limit = parseOpenFileLimit(fs.readFileSync("/proc/self/limits", "utf8"))
  } catch {
    return undefined
  }
  return limit === undefined || limit - BROKER_OWN_FILES >= DEFAULT_MAX_SESSIONS ? undefined : limit - BROKER_OWN_FILES
}

/**
 * The broker as a client spawns it: `node` with the client's V8 flags
 * (`BROKER_NODE_FLAGS`), `brokerEntryPoint()` (the bundled
 * `dist/bin/intercom.mjs`, or tsc's `dist/cli/main.js` in a tree without the
 * bundle) with `broker --dir <dir>`, so `startup` measures what a client waits for.
 * A `--broker-cmd` runs exactly what it says: name the flags there to compare like with like.
 */
export const brokerSpec: TargetSpec = {
  name: "broker",
  argv: (dir, maxSessions) => {
    const argv = [process.execPath, ...BROKER_NODE_FLAGS, brokerEntryPoint(), "broker", "--dir", dir]
    const cap = maxSessions ?? fittingCap()
    if (cap !== undefined) argv.push("--max-sessions", String(cap))
    return argv
  },
  socketPath: socketIn
}

/** The broker in memory mode (`--durability memory`). */
export const memoryBrokerSpec: TargetSpec = {
  name: "memory",
  argv: (dir, maxSessions) => [...brokerSpec.argv(dir, maxSessions), "--durability", "memory"],
  socketPath: socketIn
}

/**
 * Our broker from another tree's bundle (`<root>/dist/bin/intercom.mjs`),
 * started as `brokerSpec` starts this tree's (the client's V8 flags, the same
 * session cap), in either durability mode, with `nodeFlags` after the
 * client's (V8 flags to try): `bench/ab.ts` runs two trees side by side with it.
 */
export const treeBrokerSpec = (
  root: string,
  durability: "durable" | "memory",
  nodeFlags: ReadonlyArray<string> = []
): TargetSpec => ({
  name: durability === "durable" ? "broker" : "memory",
  argv: (dir, maxSessions) => {
    const argv = [process.execPath, ...BROKER_NODE_FLAGS, ...nodeFlags, path.join(root, BUNDLED_CLI), "broker", "--dir", dir]
    const cap = maxSessions ?? fittingCap()
    if (cap !== undefined) argv.push("--max-sessions", String(cap))
    if (durability === "memory") argv.push("--durability", "memory")
    return argv
  },
  socketPath: socketIn
})

/**
 * A custom command for the broker under test. Whitespace-separated; `{dir}` is
 * the agent dir, `{sock}` the socket path (`<dir>/intercom/broker.sock`), a
 * leading `node` means this Node binary. Example: `node bench/raw-relay.ts {sock}`.
 */
export const customBrokerSpec = (template: string): TargetSpec => ({
  name: "broker",
  argv: (dir) =>
    template.trim().split(/\s+/).map((tok, i) => {
      if (i === 0 && tok === "node") return process.execPath
      return tok.replaceAll("{dir}", dir).replaceAll("{sock}", socketIn(dir))
    }),
  socketPath: socketIn
})

/** `nats-server` on the PATH, or undefined. */
export const findNatsServer = (): string | undefined => {
  for (const dir of (process.env["PATH"] ?? "").split(path.delimiter)) {
    if (dir === "") continue
    const file = path.join(dir, "nats-server")
    try {
      fs.accessSync(file, fs.constants.X_OK)
      if (fs.statSync(file).isFile()) return file
    } catch {
      // not here
    }
  }
  return undefined
}

const NATS_LISTENING = /Listening for client connections on [^\s]*:(\d+)/

/**
 * A NATS server on 127.0.0.1 with a port it picks itself (`-p -1`: a free
 * one, read back from its log), no monitoring, no persistence: the outside
 * reference for the workloads that map onto plain publish/subscribe.
 */
export const natsSpec = (binary: string): TargetSpec => ({
  name: "nats",
  argv: () => [binary, "-a", "127.0.0.1", "-p", "-1"],
  socketPath: () => "",
  ready: (_stdout, stderr) => {
    const m = NATS_LISTENING.exec(stderr)
    if (m === null || !stderr.includes("Server is ready")) return undefined
    return { pid: undefined, port: Number(m[1]) }
  }
})

// ---------------------------------------------------------------- cleanup

const children = new Set<ChildProcess>()
const extraPids = new Set<number>()
const tempDirs = new Set<string>()

export const makeTempDir = (): string => {
  const dir = fs.mkdtempSync("/tmp/ib-")
  tempDirs.add(dir)
  return dir
}

export const removeTempDir = (dir: string): void => {
  tempDirs.delete(dir)
  fs.rmSync(dir, { recursive: true, force: true })
}

const killQuietly = (pid: number, signal: NodeJS.Signals): void => {
  try {
    process.kill(pid, signal)
  } catch {
    // already gone
  }
}

/** Synchronous last-resort cleanup; safe to call from an `exit` handler. */
export const cleanupAll = (): void => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
  children.clear()
  for (const pid of extraPids) killQuietly(pid, "SIGKILL")
  extraPids.clear()
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true })
  tempDirs.clear()
}

/**
 * Tracks a process the bench spawned beside the targets (a workload's
 * `intercom send`): `cleanupAll` kills it if it still runs, so Ctrl-C or
 * `--ci`'s watchdog leaves none behind.
 */
export const trackChild = (child: ChildProcess): void => {
  children.add(child)
  child.once("exit", () => children.delete(child))
}

let handlersInstalled = false
export const installCleanupHandlers = (): void => {
  if (handlersInstalled) return
  handlersInstalled = true
  process.on("exit", cleanupAll)
  const signals: ReadonlyArray<NodeJS.Signals> = ["SIGINT", "SIGTERM", "SIGHUP"]
  for (const sig of signals) {
    process.on(sig, () => {
      process.stderr.write(`\nbench: ${sig}, stopping child processes\n`)
      cleanupAll()
      // As a shell reports a process the signal killed: SIGINT 130, SIGTERM 143, SIGHUP 129.
      process.exit(128 + os.constants.signals[sig])
    })
  }
}

// ---------------------------------------------------------------- instances

export interface Instance {
  readonly target: TargetName
  readonly dir: string
  readonly socketPath: string
  /** Pid of the process that serves the socket (from the ready line). */
  readonly pid: number
  /** The TCP port of a target that listens on one (NATS). */
  readonly port: number | undefined
  readonly child: ChildProcess
  /** ms from spawn() until the ready line was read. */
  readonly readyMs: number
  /** stderr collected so far (last 8 KiB). */
  stderr: () => string
  /** The last 20 stderr lines that mention an error, warning, defect or exception. */
  unusualStderr: () => Array<string>
  /** Lines written to stderr so far. */
  stderrLines: () => number
  /** Whether the process exited before `stop()` was called, with its status. */
  unexpectedExit: () => string | undefined
}

export interface StartOptions {
  readonly maxSessions?: number
  readonly timeoutMs?: number
  /** Called right after spawn() with the socket path, the spawn time (performance.now()) and the child's pid. */
  readonly onSpawned?: (socketPath: string, t0: number, pid: number | undefined) => void
}

const UNUSUAL = /error|warn|fatal|exception|defect/i

const READY = /(Intercom broker started|raw relay ready)[^\n]*?pid:\s*(\d+)/

const ourReady = (stdout: string): Ready | undefined => {
  const m = READY.exec(stdout)
  return m === null ? undefined : { pid: Number(m[2]), port: undefined }
}

/**
 * The variables through which the user's own intercom settings would reach a
 * process the bench starts: the agent dir, the group, scope and stable id,
 * the timeouts, a subagent's supervisor (src/config/settings.ts'
 * `INTERCOM_ENV`, session/supervisorBridge.ts).
 */
const USER_INTERCOM_ENV = /^(ATOMIC|PI)_(CODING_AGENT_DIR|INTERCOM_|SUBAGENT_)/

/**
 * The environment of a process the bench starts against the agent dir `dir`
 * (a target; a workload's `intercom send`): this process's, without the
 * user's intercom settings (`USER_INTERCOM_ENV`), with `PI_CODING_AGENT_DIR`
 * = `dir`. Inherited, a `PI_INTERCOM_GROUP` of the shell (a pi session's, a
 * subagent's) put `intercom send` in another group than the bench's
 * recipient, and every `cli-send` run failed.
 */
export const benchEnv = (dir: string): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !USER_INTERCOM_ENV.test(key)) env[key] = value
  }
  env["PI_CODING_AGENT_DIR"] = dir
  env["NODE_NO_WARNINGS"] = "1"
  return env
}

export const start = (spec: TargetSpec, options: StartOptions = {}): Promise<Instance> => {
  const dir = makeTempDir()
  const argv = spec.argv(dir, options.maxSessions)
  const [file, ...args] = argv
  if (file === undefined) return Promise.reject(new Error("empty command"))
  const t0 = performance.now()
  const child = spawn(file, args, {
    cwd: repoRoot,
    stdio: ["ignore", "pipe", "pipe"],
    env: benchEnv(dir)
  })
  children.add(child)
  options.onSpawned?.(spec.socketPath(dir), t0, child.pid)
  let stdout = ""
  let stderr = ""
  /** stderr from the start until ready (the 8 KiB tail in `stderr` may have lost a ready line). */
  let earlyStderr = ""
  let stopping = false
  let exitStatus: string | undefined
  let partial = ""
  const unusual: Array<string> = []
  let stderrLines = 0
  const checkReady = { current: (): void => {} }
  child.stderr?.on("data", (d: Buffer) => {
    const text = d.toString("utf8")
    stderr = (stderr + text).slice(-8192)
    if (earlyStderr.length < 65_536) {
      earlyStderr += text
      checkReady.current()
    }
    const lines = (partial + text).split("\n")
    partial = lines.pop() ?? ""
    stderrLines += lines.length
    for (const line of lines) {
      if (UNUSUAL.test(line)) {
        unusual.push(line.slice(0, 500))
        if (unusual.length > 20) unusual.shift()
      }
    }
  })
  return new Promise((resolve, reject) => {
    let settled = false
    const timer = setTimeout(() => {
      if (settled) return
      settled = true
      child.kill("SIGKILL")
      reject(new Error(`${spec.name} did not print its ready line within ${options.timeoutMs ?? 15_000} ms: ${tail(stdout + stderr)}`))
    }, options.timeoutMs ?? 15_000)
    child.on("exit", (code, signal) => {
      children.delete(child)
      exitStatus = signal !== null ? `signal ${signal}` : `exit code ${code}`
      if (!stopping && settled) process.stderr.write(`bench: ${spec.name} (pid ${child.pid}) exited unexpectedly: ${exitStatus}\n${tail(stderr)}\n`)
      if (!settled) {
        settled = true
        clearTimeout(timer)
        reject(new Error(`${spec.name} exited before ready (${exitStatus}): ${tail(stdout + stderr)}`))
      }
    })
    child.on("error", (e) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      reject(e)
    })
    checkReady.current = () => {
      if (settled) return
      const r = spec.ready === undefined ? ourReady(stdout) : spec.ready(stdout, earlyStderr)
      if (r === undefined) return
      settled = true
      clearTimeout(timer)
      const readyMs = performance.now() - t0
      const pid = r.pid ?? child.pid ?? -1
      if (pid !== child.pid) extraPids.add(pid)
      const instance: Instance = {
        target: spec.name,
        dir,
        socketPath: spec.socketPath(dir),
        pid,
        port: r.port,
        child,
        readyMs,
        stderr: () => stderr,
        unusualStderr: () => unusual.slice(),
        stderrLines: () => stderrLines,
        unexpectedExit: () => (stopping ? undefined : exitStatus)
      }
      stopHooks.set(instance, () => {
        stopping = true
      })
      resolve(instance)
    }
    child.stdout?.on("data", (d: Buffer) => {
      if (stdout.length < 65_536) stdout += d.toString("utf8")
      checkReady.current()
    })
  })
}

const stopHooks = new WeakMap<Instance, () => void>()

const tail = (s: string): string => s.trim().split("\n").slice(-6).join(" | ").slice(-1500)

const waitExit = (child: ChildProcess, ms: number): Promise<boolean> =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      resolve(true)
      return
    }
    const timer = setTimeout(() => resolve(false), ms)
    child.once("exit", () => {
      clearTimeout(timer)
      resolve(true)
    })
  })

export interface StopResult {
  /** ms from SIGTERM to exit, or undefined if it had to be SIGKILLed. */
  readonly termMs: number | undefined
}

/** SIGTERM, wait up to 3 s, then SIGKILL; removes the temp dir. */
export const stop = async (instance: Instance): Promise<StopResult> => {
  stopHooks.get(instance)?.()
  const { child } = instance
  const t0 = performance.now()
  let termMs: number | undefined
  if (child.exitCode === null && child.signalCode === null) {
    child.kill("SIGTERM")
    if (instance.pid !== child.pid) killQuietly(instance.pid, "SIGTERM")
    if (await waitExit(child, 3000)) termMs = performance.now() - t0
    else child.kill("SIGKILL")
    await waitExit(child, 2000)
  } else {
    termMs = 0
  }
  if (instance.pid !== child.pid) {
    killQuietly(instance.pid, "SIGKILL")
    extraPids.delete(instance.pid)
  }
  children.delete(child)
  removeTempDir(instance.dir)
  return { termMs }
}

// ---------------------------------------------------------------- /proc

let clockTicks = 100
try {
  clockTicks = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100
} catch {
  // keep 100
}

/** Clock ticks per second of /proc's utime and stime (`getconf CLK_TCK`, usually 100). */
export const clockTicksPerSecond = (): number => clockTicks

/** utime + stime of a process, in µs (resolution: one clock tick, usually 10 ms). */
export const cpuMicros = (pid: number): number => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    // fields[0] is field 3 (state); utime is field 14, stime field 15.
    const utime = Number(fields[11])
    const stime = Number(fields[12])
    return ((utime + stime) * 1e6) / clockTicks
  } catch {
    return Number.NaN
  }
}

/**
 * Minor page faults a process has taken so far (/proc/<pid>/stat, field 10):
 * each is a first touch of a page the kernel had not yet backed. On this
 * development VM one costs about 20 µs, so a few per operation show in its
 * latency (docs/performance.md, "The list at 10,000 idle sessions, sixth stop").
 */
export const minorFaults = (pid: number): number => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    // fields[0] is field 3 (state); minflt is field 10.
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[7])
  } catch {
    return Number.NaN
  }
}

/** A `Vm*` line of /proc/<pid>/status, in KiB. */
export const procStatusKiB = (pid: number, key: "VmRSS" | "VmHWM"): number => {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, "utf8")
    const m = new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(status)
    return m === null ? Number.NaN : Number(m[1])
  } catch {
    return Number.NaN
  }
}
