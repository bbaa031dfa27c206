/**
 * The built `intercom` executable (whatever package.json's `bin` names) run as
 * real processes, for the client commands. Every process lives in the test's
 * Scope and is SIGKILLed when it closes; every agent dir is a short private
 * dir under /tmp whose broker (auto-spawned, detached) is stopped through its
 * pid file when the Scope closes, before the dir is removed. Nothing here
 * builds: `npm test` runs the build before vitest.
 */
import { Deferred, Duration, Effect, Exit, Option, Schedule, type Scope } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const ROOT = fileURLToPath(new URL("../../", import.meta.url))

/** package.json `bin.intercom`, resolved against the package root. */
export const binPath = (): string => {
  const pkg: unknown = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8"))
  const bin = typeof pkg === "object" && pkg !== null && "bin" in pkg ? pkg.bin : undefined
  const entry = typeof bin === "string"
    ? bin
    : typeof bin === "object" && bin !== null && "intercom" in bin && typeof bin.intercom === "string"
    ? bin.intercom
    : undefined
  if (entry === undefined) throw new Error("package.json has no bin.intercom")
  return path.resolve(ROOT, entry)
}

export const BIN = binPath()

/** Generous: the suite shares two slow cores with other test files. */
export const WAIT = Duration.seconds(20)

// One process harness vocabulary for both CLI suites.
export { CliTimeout, type Outcome } from "../cli/support.ts"
import { CliTimeout, type Outcome } from "../cli/support.ts"

export interface CliProcess {
  readonly child: ChildProcess
  readonly stdout: () => string
  readonly stderr: () => string
  readonly waitExit: (timeout?: Duration.Input) => Effect.Effect<Outcome, CliTimeout>
  /** Waits until stdout matches `pattern` (searched from the start); returns the match. */
  readonly waitStdout: (pattern: RegExp, timeout?: Duration.Input) => Effect.Effect<RegExpExecArray, CliTimeout>
  readonly waitStderr: (pattern: RegExp, timeout?: Duration.Input) => Effect.Effect<RegExpExecArray, CliTimeout>
  /** Writes a line to stdin (only with `stdin: "pipe"`). */
  readonly writeLine: (line: string) => Effect.Effect<void>
  readonly endStdin: Effect.Effect<void>
  readonly kill: (signal: NodeJS.Signals) => Effect.Effect<void>
}

/** An agent dir for one test, and the environment that points the CLI at it. */
export interface Agent {
  readonly root: string
  readonly agentDir: string
  readonly intercomDir: string
  readonly socketPath: string
  readonly pidFile: string
  readonly env: Readonly<Record<string, string>>
}

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** SIGTERM the broker named by the pid file (if any) and wait until it is gone; SIGKILL after 5 s. */
export const stopBroker = (pidFile: string): Effect.Effect<void> =>
  Effect.gen(function*() {
    const pid = Number.parseInt(fs.existsSync(pidFile) ? fs.readFileSync(pidFile, "utf8") : "", 10)
    if (!Number.isSafeInteger(pid) || pid <= 0 || !isAlive(pid)) return
    process.kill(pid, "SIGTERM")
    const gone = yield* Effect.sync(() => !isAlive(pid)).pipe(
      Effect.repeat({ schedule: Schedule.spaced("50 millis"), until: (dead) => dead }),
      Effect.timeoutOption("5 seconds")
    )
    if (Option.isNone(gone)) process.kill(pid, "SIGKILL")
  }).pipe(Effect.ignore)

/**
 * A fresh agent dir `/tmp/eicc-XXXXXX/a` (short, for the socket path), with a
 * private HOME and no inherited intercom variables. Its broker is stopped and
 * the dir removed when the Scope closes.
 */
export const makeAgent: Effect.Effect<Agent, never, Scope.Scope> = Effect.acquireRelease(
  Effect.sync(() => {
    const root = fs.mkdtempSync("/tmp/eicc-")
    const agentDir = path.join(root, "a")
    const intercomDir = path.join(agentDir, "intercom")
    const env: Record<string, string> = {}
    for (const [key, value] of Object.entries(process.env)) {
      if (value === undefined) continue
      if (/^(ATOMIC|PI)_(CODING_AGENT_DIR|INTERCOM_)/.test(key)) continue
      env[key] = value
    }
    return {
      root,
      agentDir,
      intercomDir,
      socketPath: path.join(intercomDir, "broker.sock"),
      pidFile: path.join(intercomDir, "broker.pid"),
      env: { ...env, HOME: root, USER: "tester", NODE_NO_WARNINGS: "1", PI_CODING_AGENT_DIR: agentDir }
    }
  }),
  (agent) =>
    stopBroker(agent.pidFile).pipe(
      Effect.andThen(Effect.sync(() => fs.rmSync(agent.root, { recursive: true, force: true })))
    )
)

/** Spawns `intercom ...args`; SIGKILLed when the Scope closes if still running. */
export const spawnCli = (
  agent: Agent,
  args: ReadonlyArray<string>,
  options: { readonly stdin?: "pipe" | "ignore"; readonly env?: Readonly<Record<string, string>> } = {}
): Effect.Effect<CliProcess, never, Scope.Scope> =>
  Effect.gen(function*() {
    const exit = yield* Deferred.make<Outcome>()
    const child = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const child = spawn(process.execPath, [BIN, ...args], {
          env: { ...agent.env, ...options.env },
          cwd: agent.root,
          stdio: [options.stdin ?? "ignore", "pipe", "pipe"]
        })
        child.once("exit", (code, signal) => Deferred.doneUnsafe(exit, Exit.succeed({ code, signal })))
        child.stdin?.on("error", () => {})
        return child
      }),
      (child) =>
        Effect.gen(function*() {
          if (child.exitCode === null && child.signalCode === null) {
            child.kill("SIGKILL")
            yield* Effect.timeoutOption(Deferred.await(exit), "5 seconds")
          }
        })
    )
    let stdout = ""
    let stderr = ""
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => void (stdout += chunk))
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => void (stderr += chunk))
    const timeoutError = (what: string) => new CliTimeout({ what, stdout, stderr })
    const waitFor = (what: string, read: () => string, pattern: RegExp, timeout: Duration.Input = WAIT) =>
      Effect.gen(function*() {
        while (true) {
          const match = pattern.exec(read())
          if (match !== null) return match
          if (child.exitCode !== null || child.signalCode !== null) {
            yield* Effect.sleep("50 millis") // let the pipes drain
            const last = pattern.exec(read())
            if (last !== null) return last
            return yield* timeoutError(`${what} ${pattern} (the process exited)`)
          }
          yield* Effect.sleep("20 millis")
        }
      }).pipe(Effect.timeoutOrElse({ duration: timeout, orElse: () => Effect.fail(timeoutError(`${what} ${pattern}`)) }))
    return {
      child,
      stdout: () => stdout,
      stderr: () => stderr,
      waitExit: (timeout: Duration.Input = WAIT) =>
        Deferred.await(exit).pipe(
          Effect.tap(() => Effect.sleep("30 millis")), // let the pipes drain
          Effect.timeoutOrElse({ duration: timeout, orElse: () => Effect.fail(timeoutError("exit")) })
        ),
      waitStdout: (pattern, timeout) => waitFor("stdout", () => stdout, pattern, timeout),
      waitStderr: (pattern, timeout) => waitFor("stderr", () => stderr, pattern, timeout),
      writeLine: (line) => Effect.sync(() => void child.stdin?.write(`${line}\n`)),
      endStdin: Effect.sync(() => void child.stdin?.end()),
      kill: (signal) => Effect.sync(() => void child.kill(signal))
    } satisfies CliProcess
  })

export interface Completed extends Outcome {
  readonly stdout: string
  readonly stderr: string
}

/** Runs a command to completion. */
export const runCli = (
  agent: Agent,
  args: ReadonlyArray<string>,
  options: { readonly env?: Readonly<Record<string, string>> } = {}
): Effect.Effect<Completed, CliTimeout> =>
  Effect.scoped(
    Effect.gen(function*() {
      const cli = yield* spawnCli(agent, args, options)
      const outcome = yield* cli.waitExit()
      return { ...outcome, stdout: cli.stdout(), stderr: cli.stderr() }
    })
  )

/** `watch --name <name>` with piped stdin, once it has printed its ready line. */
export const startWatch = (
  agent: Agent,
  name: string,
  extra: ReadonlyArray<string> = []
): Effect.Effect<CliProcess, CliTimeout, Scope.Scope> =>
  Effect.gen(function*() {
    const watch = yield* spawnCli(agent, ["watch", "--name", name, ...extra], { stdin: "pipe" })
    yield* extra.includes("--json") ? watch.waitStdout(/"event":"ready"/) : watch.waitStdout(/^Watching as /m)
    return watch
  })

/** Parses every line of `text` as JSON. */
export const jsonLines = (text: string): ReadonlyArray<Record<string, unknown>> =>
  text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => {
      const value: unknown = JSON.parse(line)
      if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error(`not an object: ${line}`)
      return Object.fromEntries(Object.entries(value))
    })

/** The single JSON object a `--json` command printed. */
export const jsonOf = (completed: Completed): Record<string, unknown> => {
  const lines = jsonLines(completed.stdout)
  if (lines.length !== 1 || lines[0] === undefined) {
    throw new Error(`expected one JSON line, got:\n${completed.stdout}\n--- stderr:\n${completed.stderr}`)
  }
  return lines[0]
}

/** `value[k1][k2]…`, or `undefined` where a step is not an object. */
export const get = (value: unknown, ...keys: ReadonlyArray<string>): unknown =>
  keys.reduce<unknown>((current, key) => typeof current === "object" && current !== null ? Reflect.get(current, key) : undefined, value)

/** `value` when it is an array; throws otherwise. */
export const asArray = (value: unknown): ReadonlyArray<unknown> => {
  if (!Array.isArray(value)) throw new Error(`not an array: ${JSON.stringify(value)}`)
  return value
}
