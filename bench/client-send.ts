/**
 * What the product's own send path costs: `IntercomClient.send`
 * (`--level client`, the default) or `IntercomSession.send` with a headless
 * host (`--level session`: a `list` to resolve the target, the send, the
 * history record) sends N messages to a receiver, W at a time.
 *
 *   node bench/client-send.ts [--level client|session] [--messages N] [--inflight W] [--rounds R]
 *
 * It starts a memory-mode broker (`--durability memory`) from this worktree's
 * `dist/` in a private dir (so `npm run build` first) and a receiver in this
 * process, the bench's framing client (bench/client.ts: it reads, and
 * confirms what it read when the broker grants `received-v1`). Each of W
 * fibers sends the next message as soon as its previous one is acknowledged
 * (`--inflight 1`: one send's round trip at a time). Per round it prints the
 * wall time from the first send until every send is acknowledged and every
 * message reached the receiver, messages per second, this process's CPU
 * (user + system) per message, and the p50 and p99 of a send's
 * acknowledgement latency (the send effect's start to its result). The
 * receiver's share of that CPU is the same for every build, so two builds
 * compare by running this file from each worktree, alternating. A warm-up
 * round comes first, unmeasured. The broker is stopped and its dir removed on
 * exit, also after a failure or Ctrl-C. bench/client-receive.ts is the
 * receive path's counterpart.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Clock, Console, Context, Data, Deferred, Effect, Exit, Layer } from "effect"
import { randomUUID } from "node:crypto"
import { IntercomClient, type IntercomClientOptions } from "../src/client/index.ts"
import { intercomPaths } from "../src/config/index.ts"
import { headless, Host, IntercomSession, sessionRegistration } from "../src/session/index.ts"
import { eachArg, helpOrUnknown } from "./args.ts"
import { type BenchClient, connectAndRegister, type Frame } from "./client.ts"
import { percentileSorted, sortedCopy } from "./stats.ts"
import { cleanupAll, type Instance, memoryBrokerSpec, start, stop } from "./targets.ts"

const usage = "usage: node bench/client-send.ts [--level client|session] [--messages N] [--inflight W] [--rounds R]"

/** The receiver's name, which every send targets. */
const RECEIVER = "bench-receiver"

/** What to run: from the command line. */
interface Options {
  readonly level: "client" | "session"
  readonly messages: number
  readonly inflight: number
  readonly rounds: number
}

/** The flags as `Options`, or an `Error` saying what is wrong with them (with the usage); `--help` prints the usage and exits 0. */
const parseOptions = (argv: ReadonlyArray<string>): Options | Error => {
  let level: Options["level"] = "client"
  let messages = 10_000
  let inflight = 64
  let rounds = 3
  try {
    eachArg(argv, "", (arg) => {
      if (arg.key === "--level") {
        const value = arg.value()
        if (value !== "client" && value !== "session") throw new Error(`--level must be client or session, not ${value}`)
        level = value
      } else if (arg.key === "--messages") messages = arg.int(1, 10_000_000)
      else if (arg.key === "--inflight") inflight = arg.int(1, 4_096)
      else if (arg.key === "--rounds") rounds = arg.int(1, 100)
      else helpOrUnknown(arg, usage)
    })
  } catch (error) {
    return new Error(`${(error instanceof Error ? error.message : String(error)).trimEnd().replace(`\n${usage}`, "")}\n${usage}`)
  }
  return { level, messages, inflight, rounds }
}

/** A send the client or session did not complete: the round, and so the run, ends with it. */
class SendFailed extends Data.TaggedError("SendFailed")<{ readonly text: string; readonly reason: string }> {
  override get message(): string {
    return `send of "${this.text}" failed: ${this.reason}`
  }
}

/** The broker or the receiver did not start. */
class SetupFailed extends Data.TaggedError("SetupFailed")<{ readonly step: string; readonly cause: unknown }> {
  override get message(): string {
    return `${this.step} failed: ${this.cause instanceof Error ? this.cause.message : String(this.cause)}`
  }
}

/** One send through the level under test; succeeds once the broker acknowledged it. */
type Send = (text: string) => Effect.Effect<void, SendFailed>

/** The receiver's side of a round: `expect` starts a round of `n` distinct texts and returns what completes at the n-th. */
interface Receiver {
  readonly expect: (n: number) => Effect.Effect<Deferred.Deferred<void>>
  /** Distinct texts received in the current round. */
  readonly received: () => number
}

const textOf = (frame: Frame): string | undefined => {
  const message = frame["message"]
  if (typeof message !== "object" || message === null || !("content" in message)) return undefined
  const content = message.content
  return typeof content === "object" && content !== null && "text" in content && typeof content.text === "string"
    ? content.text
    : undefined
}

/** Counts the distinct texts of the `message` frames `client` reads; owns the round's count and its completion. */
const makeReceiver = (client: BenchClient): Receiver => {
  let texts = new Set<string>()
  let expected = 0
  let done: Deferred.Deferred<void> | undefined
  client.onFrame = (frame) => {
    if (frame["type"] !== "message") return
    const text = textOf(frame)
    if (text === undefined) return
    texts.add(text)
    if (texts.size === expected && done !== undefined) Deferred.doneUnsafe(done, Exit.void)
  }
  return {
    expect: (n) =>
      Effect.map(Deferred.make<void>(), (deferred) => {
        texts = new Set()
        expected = n
        done = deferred
        return deferred
      }),
    received: () => texts.size
  }
}

/** A registration and client options for a session of this process on `instance`'s broker (never spawns one). */
const clientOptions = (instance: Instance, name: string): IntercomClientOptions => {
  const paths = intercomPaths(instance.dir)
  const sessionId = randomUUID()
  return {
    agentDir: paths.agentDir,
    intercomDir: paths.intercomDir,
    socketPath: instance.socketPath,
    sessionId,
    registration: sessionRegistration({
      sessionId,
      identity: { name, cwd: process.cwd(), model: "bench" },
      pid: process.pid,
      startedAt: Math.floor(performance.timeOrigin)
    }),
    launch: false
  }
}

/** `IntercomClient.send` of a plain message to the receiver. */
const clientSender = (instance: Instance) =>
  Effect.gen(function*() {
    const client = yield* IntercomClient.make(clientOptions(instance, "bench-sender"))
    yield* client.connect
    const send: Send = (text) =>
      Clock.currentTimeMillis.pipe(
        Effect.flatMap((timestamp) =>
          client.send({ to: RECEIVER, message: { id: randomUUID(), timestamp, content: { text } } })
        ),
        Effect.mapError((error) => new SendFailed({ text, reason: error.message })),
        Effect.asVoid
      )
    return send
  })

/** `IntercomSession.send` (resolve by `list`, send, record) with a headless host. */
const sessionSender = (instance: Instance) =>
  Effect.gen(function*() {
    const options = clientOptions(instance, "bench-sender")
    const host = headless({ name: "bench-sender", cwd: process.cwd(), model: "bench" }, () => Effect.void)
    const context = yield* Layer.build(
      IntercomSession.layer().pipe(Layer.provide(Layer.merge(IntercomClient.layer(options), Host.layer(host))))
    )
    const session = Context.get(context, IntercomSession)
    yield* session.list
    const send: Send = (text) =>
      session.send({ to: RECEIVER, message: text }).pipe(
        Effect.mapError((error) => new SendFailed({ text, reason: error.message })),
        Effect.flatMap((result) =>
          result._tag === "Sent" ? Effect.void : Effect.fail(new SendFailed({ text, reason: result.text }))
        )
      )
    return send
  })

/** One round: `messages` sends, `inflight` at a time; the figures it prints. */
const round = (options: Options, label: string, prefix: string, send: Send, receiver: Receiver) =>
  Effect.gen(function*() {
    const total = options.messages
    const arrived = yield* receiver.expect(total)
    const latencies = new Array<number>(total).fill(0)
    let next = 0
    const timedSend = (i: number) =>
      Effect.suspend(() => {
        const t0 = performance.now()
        return Effect.map(send(`${prefix}-${i}`), () => {
          latencies[i] = performance.now() - t0
        })
      })
    const worker = Effect.whileLoop({ while: () => next < total, body: () => timedSend(next++), step: () => {} })
    const cpu0 = process.cpuUsage()
    const t0 = performance.now()
    yield* Effect.all(Array.from({ length: Math.min(options.inflight, total) }, () => worker), {
      concurrency: "unbounded",
      discard: true
    })
    yield* Deferred.await(arrived).pipe(
      Effect.timeoutOrElse({
        duration: "60 seconds",
        orElse: () => Effect.die(new Error(`the receiver got ${receiver.received()} of ${total} messages within 60 s`))
      })
    )
    const ms = performance.now() - t0
    const cpu = process.cpuUsage(cpu0)
    const sorted = sortedCopy(latencies)
    yield* Console.log(
      `${label}: ${ms.toFixed(0)} ms, ${(total / ms * 1000).toFixed(0)} msg/s, ` +
        `${((cpu.user + cpu.system) / total).toFixed(2)} µs CPU per message, ` +
        `ack p50 ${percentileSorted(sorted, 50).toFixed(3)} ms p99 ${percentileSorted(sorted, 99).toFixed(3)} ms, ` +
        `received ${receiver.received()}/${total}`
    )
  })

const main = (options: Options) =>
  Effect.gen(function*() {
    const instance = yield* Effect.acquireRelease(
      Effect.tryPromise({ try: () => start(memoryBrokerSpec), catch: (cause) => new SetupFailed({ step: "starting the broker", cause }) }),
      (instance) => Effect.promise(() => stop(instance))
    )
    const receiverClient = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () => connectAndRegister(instance.socketPath, randomUUID(), { name: RECEIVER }),
        catch: (cause) => new SetupFailed({ step: "registering the receiver", cause })
      }),
      ({ client }) => Effect.sync(() => client.close())
    )
    const receiver = makeReceiver(receiverClient.client)
    const send = options.level === "client" ? yield* clientSender(instance) : yield* sessionSender(instance)
    yield* Console.log(
      `level ${options.level}, ${options.messages} messages per round, ${options.inflight} in flight, ` +
        `${options.rounds} rounds (+1 warm-up); memory broker pid ${instance.pid} in ${instance.dir}`
    )
    for (let r = 0; r <= options.rounds; r++) {
      yield* round(options, r === 0 ? "warm-up" : `round ${r}`, `m${r}`, send, receiver)
    }
  })

const parsed = parseOptions(process.argv.slice(2))
if (parsed instanceof Error) {
  process.stderr.write(`client-send: ${parsed.message}\n`)
  process.exitCode = 2
} else {
  // The scope stops the broker and removes its dir; this is the backstop should the process exit without it.
  process.on("exit", cleanupAll)
  NodeRuntime.runMain(Effect.scoped(main(parsed)))
}
