/**
 * What the product's own receive path costs: one process sends N messages
 * (a bench framing client, as fast as the broker takes them) to a session that
 * reads them through `IntercomClient.messages` (`--level client`) or through
 * `IntercomSession` with a headless host (`--level session`, the default).
 *
 *   node bench/client-receive.ts [--level session|client] [--messages N] [--rounds R]
 *
 * The session's client spawns the broker from this worktree's `dist/` in a
 * private dir with no settings file, so the broker runs with the default
 * durability, `sqlite` (durable; `npm run build` first), and it prints, per round, the wall time from the
 * first send to the N-th message reaching the host, and this process's CPU
 * (user + system) per message. The sender's share of that CPU is the same for
 * every build, so two builds compare by running this file from each worktree,
 * alternating. The broker is stopped and the dir (under `$TMPDIR`) removed at
 * the end, by the Scope's finalizers, on every way out: a failure, Ctrl-C,
 * and stdout closed under it (`| head`: EPIPE, which would otherwise kill
 * the process outside the Effect, its finalizers unrun).
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Console, Context, Data, Deferred, Effect, Layer, Option, Ref, Schedule, Stream } from "effect"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { IntercomClient } from "../src/client/index.ts"
import { type IntercomPaths, intercomPaths } from "../src/config/index.ts"
import { headless, Host, IntercomSession, sessionRegistration } from "../src/session/index.ts"
import { eachArg, helpOrUnknown } from "./args.ts"
import { BenchClient } from "./client.ts"

const usage = "usage: node bench/client-receive.ts [--level session|client] [--messages N] [--rounds R]"

/** What to run: from the command line. */
interface Options {
  readonly level: "session" | "client"
  readonly total: number
  readonly rounds: number
}

/** The flags as `Options`, or an `Error` saying what is wrong with them (with the usage); `--help` prints the usage and exits 0. */
const parseOptions = (argv: ReadonlyArray<string>): Options | Error => {
  let level: Options["level"] = "session"
  let total = 20_000
  let rounds = 3
  try {
    eachArg(argv, "", (arg) => {
      if (arg.key === "--level") {
        const value = arg.value()
        if (value !== "session" && value !== "client") throw new Error(`--level must be session or client, not ${value}`)
        level = value
      } else if (arg.key === "--messages") total = arg.int(1, 10_000_000)
      else if (arg.key === "--rounds") rounds = arg.int(1, 100)
      else helpOrUnknown(arg, usage)
    })
  } catch (error) {
    return new Error(`${(error instanceof Error ? error.message : String(error)).trimEnd().replace(`\n${usage}`, "")}\n${usage}`)
  }
  return { level, total, rounds }
}

const privateDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "intercom-recv-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

const isRunning = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** SIGTERM to the broker the client spawned, then its exit awaited (5 s at most), so the dir is removed after it. */
const stopBroker = (paths: IntercomPaths) =>
  Effect.gen(function*() {
    const pid = yield* Effect.sync(() => {
      try {
        const pid = Number.parseInt(fs.readFileSync(paths.pidFile, "utf8"), 10)
        process.kill(pid, "SIGTERM")
        return Option.some(pid)
      } catch {
        return Option.none<number>() // never started, or already gone
      }
    })
    if (Option.isNone(pid)) return
    yield* Effect.sync(() => isRunning(pid.value)).pipe(
      Effect.repeat({ schedule: Schedule.spaced("20 millis"), while: (running) => running }),
      Effect.timeoutOption("5 seconds")
    )
  })

/** Stdout closed under the bench (EPIPE: a reader such as `head` went away). */
class OutputClosed extends Data.TaggedError("OutputClosed")<{ readonly code: string }> {
  override get message(): string {
    return `stdout closed (${this.code}); the broker was stopped and its dir removed`
  }
}

/**
 * Fails with `OutputClosed` when stdout reports an error. Listening turns
 * what would be an uncaught 'error' event — the process killed outside the
 * Effect, the broker and the dir left behind — into a failure the main
 * effect races, so the Scope's finalizers run.
 */
const stdoutClosed = Effect.callback<never, OutputClosed>((resume) => {
  const onError = (error: NodeJS.ErrnoException) => resume(Effect.fail(new OutputClosed({ code: error.code ?? error.message })))
  process.stdout.on("error", onError)
  return Effect.sync(() => {
    process.stdout.off("error", onError)
  })
})

/** Counts arrivals and completes `done` at the N-th of the current round. */
interface Counter {
  readonly arrived: (n: number) => Effect.Effect<void>
  readonly round: Effect.Effect<Deferred.Deferred<void>>
}

const makeCounter = (total: number) =>
  Effect.gen(function*() {
    const state = yield* Ref.make({ count: 0, done: yield* Deferred.make<void>() })
    const counter: Counter = {
      arrived: (n) =>
        Effect.flatMap(Ref.modify(state, (s) => [s, { ...s, count: s.count + n }]), (s) =>
          s.count + n >= total ? Deferred.succeed(s.done, undefined) : Effect.void),
      round: Effect.flatMap(Deferred.make<void>(), (done) => Effect.as(Ref.set(state, { count: 0, done }), done))
    }
    return counter
  })

const receiver = (paths: IntercomPaths, name: string, level: Options["level"], counter: Counter) =>
  Effect.gen(function*() {
    const sessionId = randomUUID()
    const identity = { name, cwd: process.cwd(), model: "bench" }
    const client = IntercomClient.layer({
      agentDir: paths.agentDir,
      intercomDir: paths.intercomDir,
      socketPath: paths.socketPath,
      sessionId,
      registration: sessionRegistration({ sessionId, identity, pid: process.pid, startedAt: Math.floor(performance.timeOrigin) }),
      launch: { _tag: "Default" }
    })
    if (level === "client") {
      const context = yield* Layer.build(client)
      const intercom = Context.get(context, IntercomClient)
      yield* Effect.forkScoped(Stream.runForEach(intercom.messages, () => counter.arrived(1)))
      yield* intercom.list
      return
    }
    const host = Host.layer(headless(identity, () => counter.arrived(1)))
    const context = yield* Layer.build(IntercomSession.layer().pipe(Layer.provide(Layer.merge(client, host))))
    yield* Context.get(context, IntercomSession).status
    yield* Context.get(context, IntercomSession).list
  })

const main = ({ level, rounds, total }: Options) =>
  Effect.gen(function*() {
    const paths = intercomPaths(yield* privateDir)
    yield* Effect.addFinalizer(() => stopBroker(paths))
    const counter = yield* makeCounter(total)
    yield* receiver(paths, "receiver", level, counter)
    const sender = yield* Effect.promise(() => BenchClient.connect(paths.socketPath))
    yield* Effect.promise(() => sender.register(randomUUID(), { name: "sender" }))
    yield* Console.log(`level ${level}, ${total} messages per round, ${rounds} rounds (+1 warm-up)`)
    for (let r = 0; r <= rounds; r++) {
      const done = yield* counter.round
      const cpu0 = process.cpuUsage()
      const t0 = performance.now()
      for (let i = 0; i < total; i++) sender.send("receiver", `m${r}-${i}`, "hello from the bench")
      yield* Deferred.await(done).pipe(Effect.timeout("120 seconds"))
      const ms = performance.now() - t0
      const cpu = process.cpuUsage(cpu0)
      const label = r === 0 ? "warm-up" : `round ${r}`
      yield* Console.log(
        `${label}: ${ms.toFixed(0)} ms, ${(total / ms * 1000).toFixed(0)} msg/s, ` +
          `${((cpu.user + cpu.system) / total).toFixed(2)} µs CPU per message`
      )
    }
    sender.close()
  })

const parsed = parseOptions(process.argv.slice(2))
if (parsed instanceof Error) {
  process.stderr.write(`client-receive: ${parsed.message}\n`)
  process.exitCode = 2
} else {
  NodeRuntime.runMain(
    Effect.scoped(Effect.raceFirst(main(parsed), stdoutClosed)).pipe(
      // After the Scope closed: the message is true by then. Stderr, as stdout is gone.
      Effect.tapError((error) => Effect.sync(() => process.stderr.write(`client-receive: ${error.message}\n`)))
    )
  )
}
