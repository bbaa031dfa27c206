/**
 * `node bench/cli.ts [--reps N] [--bin path] [--out file.json]` — latency of the `intercom`
 * executable's client commands, and of a first session action with no broker
 * running (docs/performance.md, "CLI and first-action latency").
 *
 * Run `npm run build` first (the executable is package.json's `bin`; the
 * broker a session spawns is the build's). Measured, never asserted:
 *
 * - with a broker running (and a `watch --name target` to send to): the wall
 *   time of `intercom list` and `intercom send target …` as processes, spawn
 *   to exit; `node -e 0` and `intercom --version` as the floor under them;
 * - with no broker running, each rep in a fresh agent dir: the first action of
 *   an in-process `IntercomSession` (spawn the broker + register + `list`),
 *   and `intercom list` as a process (process start + the same).
 *
 * Every process and agent dir is removed at the end, also on failure or Ctrl-C.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Console, Context, Deferred, Effect, Exit, Layer, Option, Schedule, type Scope } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { IntercomClient } from "../src/client/IntercomClient.ts"
import { intercomPaths } from "../src/config/agentDir.ts"
import { headless, Host } from "../src/session/Host.ts"
import { IntercomSession, sessionRegistration } from "../src/session/IntercomSession.ts"
import { median, sortedCopy } from "./stats.ts"
import { benchEnv } from "./targets.ts"

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")

const binPath = (): string => {
  const pkg: unknown = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8"))
  const bin = typeof pkg === "object" && pkg !== null && "bin" in pkg ? pkg.bin : undefined
  const entry = typeof bin === "object" && bin !== null && "intercom" in bin && typeof bin.intercom === "string"
    ? bin.intercom
    : undefined
  if (entry === undefined) throw new Error("package.json has no bin.intercom")
  const resolved = path.resolve(ROOT, entry)
  if (!fs.existsSync(resolved)) throw new Error(`${resolved} does not exist: run \`npm run build\` first`)
  return resolved
}

const parseArgs = (argv: ReadonlyArray<string>) => {
  let reps = 10
  let out = path.join(ROOT, "bench", "results", "cli.json")
  let bin: string | undefined
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (arg === "--reps") reps = Number(argv[++i])
    else if (arg === "--bin") bin = path.resolve(argv[++i] ?? "")
    else if (arg === "--out") out = path.resolve(argv[++i] ?? "")
    else throw new Error(`unknown argument ${arg}\nusage: node bench/cli.ts [--reps N] [--bin path] [--out file.json]`)
  }
  if (!Number.isInteger(reps) || reps < 1 || reps > 100) throw new Error("--reps must be an integer in 1..100")
  return { reps, out, bin }
}

// ---------------------------------------------------------------- processes

interface Ran {
  readonly ms: number
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** A child process that is SIGKILLed when the Scope closes, if still running. */
const spawnScoped = (argv: ReadonlyArray<string>, env: NodeJS.ProcessEnv) =>
  Effect.gen(function*() {
    const [file = "", ...args] = argv
    const exited = yield* Deferred.make<number | null>()
    const started = performance.now()
    const child: ChildProcess = yield* Effect.acquireRelease(
      Effect.sync(() => spawn(file, args, { env, stdio: ["ignore", "pipe", "pipe"] })),
      (child) => Effect.sync(() => child.exitCode === null && child.signalCode === null ? void child.kill("SIGKILL") : undefined)
    )
    let stdout = ""
    let stderr = ""
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => void (stdout += chunk))
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => void (stderr += chunk))
    child.once("exit", (code) => Deferred.doneUnsafe(exited, Exit.succeed(code)))
    return { child, started, exited, stdout: () => stdout, stderr: () => stderr }
  })

/** Runs to completion; `ms` is spawn → exit. */
const timed = (argv: ReadonlyArray<string>, env: NodeJS.ProcessEnv): Effect.Effect<Ran, Error> =>
  Effect.scoped(Effect.gen(function*() {
    const run = yield* spawnScoped(argv, env)
    const code = yield* Deferred.await(run.exited).pipe(
      Effect.timeoutOrElse({ duration: "30 seconds", orElse: () => Effect.fail(new Error(`${argv.join(" ")} did not exit`)) })
    )
    const ms = performance.now() - run.started
    return { ms, code, stdout: run.stdout(), stderr: run.stderr() }
  }))

const checked = (what: string) => (ran: Ran): Effect.Effect<number, Error> =>
  ran.code === 0 ? Effect.succeed(ran.ms) : Effect.fail(new Error(`${what} exited ${ran.code}: ${ran.stderr}`))

/** Waits until `run`'s stdout matches. */
const waitFor = (run: { readonly stdout: () => string }, pattern: RegExp, what: string) =>
  Effect.sync(() => pattern.test(run.stdout())).pipe(
    Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (seen) => seen }),
    Effect.timeoutOrElse({ duration: "20 seconds", orElse: () => Effect.fail(new Error(`no ${what}`)) })
  )

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** A fresh short agent dir; its broker (found through the pid file) is stopped and the dir removed with the Scope. */
const agentDir: Effect.Effect<string, never, Scope.Scope> = Effect.acquireRelease(
  Effect.sync(() => path.join(fs.mkdtempSync("/tmp/ibc-"), "a")),
  (dir) =>
    Effect.gen(function*() {
      const pidFile = intercomPaths(dir).pidFile
      const pid = Number.parseInt(fs.existsSync(pidFile) ? fs.readFileSync(pidFile, "utf8") : "", 10)
      if (Number.isSafeInteger(pid) && pid > 0 && isAlive(pid)) {
        process.kill(pid, "SIGTERM")
        const gone = yield* Effect.sync(() => !isAlive(pid)).pipe(
          Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (dead) => dead }),
          Effect.timeoutOption("5 seconds")
        )
        if (Option.isNone(gone)) process.kill(pid, "SIGKILL")
      }
      fs.rmSync(path.dirname(dir), { recursive: true, force: true })
    }).pipe(Effect.ignore)
)

/** The environment of a process against agent dir `dir`, without the user's intercom settings (`benchEnv`). */
const envFor = (dir: string): NodeJS.ProcessEnv => benchEnv(dir)

// ---------------------------------------------------------------- measurements

/** `intercom list` / `send` with a broker and a receiver running; floors alongside. Interleaved per rep. */
const withBroker = (bin: string, reps: number) =>
  Effect.scoped(Effect.gen(function*() {
    const dir = yield* agentDir
    const env = envFor(dir)
    const broker = yield* spawnScoped([process.execPath, bin, "broker", "--dir", dir], env)
    yield* waitFor(broker, /Intercom broker started/, "broker startup line")
    const watch = yield* spawnScoped([process.execPath, bin, "watch", "--name", "target", "--no-stdin"], env)
    yield* waitFor(watch, /^Watching as target/m, "watch ready line")
    const samples = { node: [] as Array<number>, version: [] as Array<number>, list: [] as Array<number>, send: [] as Array<number> }
    // One unmeasured round warms the page cache.
    yield* timed([process.execPath, bin, "list"], env)
    for (let rep = 0; rep < reps; rep++) {
      samples.node.push(yield* timed([process.execPath, "-e", "0"], env).pipe(Effect.flatMap(checked("node -e 0"))))
      samples.version.push(yield* timed([process.execPath, bin, "--version"], env).pipe(Effect.flatMap(checked("--version"))))
      samples.list.push(yield* timed([process.execPath, bin, "list"], env).pipe(Effect.flatMap(checked("list"))))
      samples.send.push(
        yield* timed([process.execPath, bin, "send", "target", `bench ${rep}`], env).pipe(Effect.flatMap(checked("send")))
      )
      yield* Console.error(`bench cli: rep ${rep + 1}/${reps} list ${samples.list.at(-1)?.toFixed(0)} ms, send ${samples.send.at(-1)?.toFixed(0)} ms`)
    }
    return samples
  }))

/** The first action of an in-process session in a fresh agent dir: spawn + register + list. */
const firstSessionAction = Effect.scoped(Effect.gen(function*() {
  const paths = intercomPaths(yield* agentDir)
  const sessionId = randomUUID()
  const identity = { name: "bench", cwd: process.cwd(), model: "bench" }
  const client = IntercomClient.layer({
    agentDir: paths.agentDir,
    intercomDir: paths.intercomDir,
    socketPath: paths.socketPath,
    sessionId,
    registration: sessionRegistration({ sessionId, identity, pid: process.pid, startedAt: Date.now() }),
    launch: { _tag: "Default" }
  })
  const host = Host.layer(headless(identity, () => Effect.void))
  const context = yield* Layer.build(IntercomSession.layer().pipe(Layer.provide(Layer.merge(client, host))))
  const session = Context.get(context, IntercomSession)
  const started = performance.now()
  yield* session.list
  return performance.now() - started
}))

/** `intercom list` as a process in a fresh agent dir: process start + spawn + register + list. */
const firstCliList = (bin: string) =>
  Effect.scoped(Effect.gen(function*() {
    const dir = yield* agentDir
    return yield* timed([process.execPath, bin, "list"], envFor(dir)).pipe(Effect.flatMap(checked("first list")))
  }))

// ---------------------------------------------------------------- report

interface Row {
  readonly name: string
  readonly samples: ReadonlyArray<number>
  readonly target?: number
}

/** Per-rep differences: on a noisy machine they vary less than either series. */
const minus = (a: ReadonlyArray<number>, b: ReadonlyArray<number>): ReadonlyArray<number> =>
  a.flatMap((x, i) => {
    const y = b[i]
    return y === undefined ? [] : [x - y]
  })

const summary = (row: Row) => {
  const sorted = sortedCopy(row.samples)
  return {
    name: row.name,
    n: sorted.length,
    medianMs: Math.round(median(sorted)),
    minMs: Math.round(sorted[0] ?? Number.NaN),
    maxMs: Math.round(sorted.at(-1) ?? Number.NaN),
    ...(row.target === undefined ? {} : { targetMs: row.target, met: median(sorted) <= row.target })
  }
}

const main = Effect.gen(function*() {
  const options = parseArgs(process.argv.slice(2))
  const { reps, out } = options
  const bin = options.bin ?? binPath()
  const load = os.loadavg()[0] ?? 0
  yield* Console.error(`bench cli: ${reps} reps, bin ${path.relative(ROOT, bin)}, load average ${load.toFixed(2)}`)
  const failures: Array<string> = []
  /** A failed phase is reported, and the others still run. */
  const attempt = <A>(what: string, effect: Effect.Effect<A, Error>): Effect.Effect<Option.Option<A>> =>
    effect.pipe(
      Effect.map(Option.some),
      Effect.catch((error) =>
        Console.error(`bench cli: ${what} failed: ${error.message}`).pipe(
          Effect.andThen(Effect.sync(() => failures.push(`${what}: ${error.message.split("\n")[0]}`))),
          Effect.as(Option.none<A>())
        )
      )
    )
  const hot = Option.getOrElse(
    yield* attempt("with a broker running", withBroker(bin, reps)),
    () => ({ node: [], version: [], list: [], send: [] })
  )
  const first: Array<number> = []
  const firstList: Array<number> = []
  for (let rep = 0; rep < reps; rep++) {
    const session = yield* attempt("first session action", firstSessionAction)
    if (Option.isSome(session)) first.push(session.value)
    const list = yield* attempt("first intercom list", firstCliList(bin))
    if (Option.isSome(list)) firstList.push(list.value)
    yield* Console.error(
      `bench cli: rep ${rep + 1}/${reps} first session action ${Option.getOrElse(Option.map(session, (ms) => ms.toFixed(0)), () => "-")} ms, first list ${Option.getOrElse(Option.map(list, (ms) => ms.toFixed(0)), () => "-")} ms`
    )
  }
  const rows = [
    summary({ name: "node -e 0", samples: hot.node }),
    summary({ name: "intercom --version", samples: hot.version }),
    summary({ name: "intercom list (broker running)", samples: hot.list, target: 300 }),
    summary({ name: "intercom send (broker running)", samples: hot.send, target: 300 }),
    summary({ name: "  list − node -e 0, same rep (what intercom adds to a bare node)", samples: minus(hot.list, hot.node) }),
    summary({ name: "  list − intercom --version, same rep (the command's own work)", samples: minus(hot.list, hot.version) }),
    summary({ name: "  send − intercom --version, same rep", samples: minus(hot.send, hot.version) }),
    summary({ name: "first session action, no broker (in-process: spawn + register + list)", samples: first, target: 500 }),
    summary({ name: "intercom list, no broker (process: start + spawn + register + list)", samples: firstList })
  ]
  const width = Math.max(...rows.map((row) => row.name.length))
  yield* Console.log(`| what | median ms | min–max ms | target |\n|---|---:|---:|---|`)
  for (const row of rows) {
    const target = row.targetMs === undefined ? "" : `≤ ${row.targetMs} ${row.met === true ? "met" : "missed"}`
    yield* Console.log(`| ${row.name.padEnd(width)} | ${row.medianMs} | ${row.minMs}–${row.maxMs} | ${target} |`)
  }
  fs.mkdirSync(path.dirname(out), { recursive: true })
  fs.writeFileSync(
    out,
    `${JSON.stringify({ date: new Date().toISOString(), bin: path.relative(ROOT, bin), reps, cpus: os.cpus().length, loadBefore: load, loadAfter: os.loadavg()[0], failures, rows, samples: { ...hot, first, firstList } }, null, 2)}\n`
  )
  yield* Console.error(`bench cli: wrote ${path.relative(process.cwd(), out)}`)
  if (failures.length > 0) {
    yield* Console.error(`bench cli: ${failures.length} failure(s):\n  ${failures.join("\n  ")}`)
    process.exitCode = 1
  }
})

NodeRuntime.runMain(main)
