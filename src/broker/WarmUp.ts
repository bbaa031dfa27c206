/**
 * Self warm-up (issue 16): once the broker listens, it runs its own
 * per-frame path on synthetic traffic until V8 has optimized it, so that the
 * first real clients meet optimized code rather than V8's compilers
 * (docs/performance.md, "Self warm-up, tenth stop").
 *
 * What runs is the real path, in a private copy: a second `Broker` (its own
 * Router, registry, statistics, admission gate and adopted connections) behind
 * a private Unix socket (Linux: an abstract name, so no file; elsewhere a file
 * in the intercom directory, removed when it closes), and four pairs of in-process
 * clients on plain sockets. Every frame goes through the classes and
 * functions a real one does — `SocketConnection`'s `data` handler and
 * `FrameDecoder`, `PeerReader`, `Router.handleFrame`, the send pipeline's
 * stages, `Output`, `PeerWriter`, `encodeFramesInto` — with the shapes real
 * clients give it: half the pairs register as `IntercomClient` does (every
 * extension but `observe-v1`), half as the bench's clients do (`received-v1`
 * only, `senderSequence`), so neither kind of peer meets code compiled for
 * the other alone. Durable mode warms the durable path too (the journal, the
 * write gate, the store writer and its SQL) against a private in-memory
 * SQLite database: the real store is never written.
 *
 * Nothing of it is visible to a client: its sessions, membership events,
 * statistics and log lines are the private broker's (whose log level is
 * `None`); the real broker's only trace is one debug line at the end.
 *
 * It owns the private broker, its listener and the clients, all in a Scope
 * of its own that closes when it ends — or when its fiber is interrupted
 * (the broker's shutdown: it is forked in the broker's Scope). Real traffic
 * is served meanwhile: the synthetic traffic goes through the event loop, one
 * batch per private connection and turn, so a real client's frames wait at
 * most that. It stops after its plan, or once the main thread has spent
 * `cpuBudgetMs` of CPU since it began (compiling runs beside it on V8's
 * threads), whichever comes first. Why this plan and budget:
 * docs/performance.md, "Self warm-up, tenth stop".
 */
import { Clock, Effect, Layer, References, type Scope } from "effect"
import { randomBytes } from "node:crypto"
import * as net from "node:net"
import * as path from "node:path"
import { TelemetryEnabled } from "../observability/Telemetry.ts"
import { EXTENSION_FEATURES, OBSERVE_V1, RECEIVED_V1 } from "../protocol/features.ts"
import { encodeFrames, FrameDecoder, FrameScratch } from "../protocol/framing.ts"
import * as Database from "../store/Database.ts"
import { makeSqlite } from "../store/MailStore.ts"
import { makeSql as makeQuestionSql, QuestionStore } from "../store/QuestionStore.ts"
import { ResultArchive } from "../store/ResultArchive.ts"
import { socketConnection } from "../transport/SocketConnection.ts"
import { Broker, type BrokerService } from "./Broker.ts"
import type { BrokerCoreOptions } from "./options.ts"

/** How much synthetic traffic the warm-up runs. */
export interface WarmUpPlan {
  /** Pairs of clients (an asker and its answerer), running at once. */
  readonly pairs: number
  /** Rounds per pair; each is one burst of sends, then `asksPerRound` asks. */
  readonly rounds: number
  /** Sends per burst (one write, as a windowed sender's first window). */
  readonly burst: number
  /** Ask round trips per round (one frame per batch: the per-batch code's share). */
  readonly asksPerRound: number
  /** The warm-up stops once the main thread has used this much CPU (ms, user + system) since it began. */
  readonly cpuBudgetMs: number
  /** How long after the broker listens it begins (ms on the Clock): the spawner's first probe goes first. */
  readonly delayMs: number
}

/** The default plan (docs/performance.md, "Self warm-up, tenth stop", says how it was sized). */
export const DEFAULT_WARM_UP: WarmUpPlan = { pairs: 4, rounds: 50, burst: 48, asksPerRound: 2, cpuBudgetMs: 400, delayMs: 20 }

/** What a warm-up did: for its debug line and for tests. */
export interface WarmUpReport {
  /** Rounds run, over all pairs. */
  readonly rounds: number
  readonly messages: number
  readonly asks: number
  /** Main-thread CPU (user + system, ms) from its start to its end, real traffic's included. */
  readonly cpuMs: number
  /** The whole process's CPU over the same time: V8's compiler and GC threads too. */
  readonly processCpuMs: number
  /** Whether it stopped at the CPU budget rather than at the end of its plan. */
  readonly capped: boolean
}

/** The 100 characters of every synthetic message (the bench's size). */
const TEXT = JSON.stringify("w".repeat(100))

/** The extensions `IntercomClient` asks for (RegisterHandshake.ts: all but the live view). */
const CLIENT_FEATURES = EXTENSION_FEATURES.filter((feature) => feature !== OBSERVE_V1)

const processCpuMs = (): number => {
  const usage = process.cpuUsage()
  return (usage.user + usage.system) / 1000
}

/**
 * CPU of the main thread alone (ms): what the warm-up takes from serving
 * clients. V8's compiler and GC helper threads run beside it. Node before
 * 23.9 has no `threadCpuUsage`: the whole process's CPU stands in.
 */
const mainThreadCpuMs = (): number => {
  if (typeof process.threadCpuUsage !== "function") return processCpuMs()
  const usage = process.threadCpuUsage()
  return (usage.user + usage.system) / 1000
}

/** A private socket name: abstract on Linux (no file), else a file in `dir`. */
const privateSocketPath = (dir: string): string => {
  const name = `warm-${process.pid}-${randomBytes(6).toString("hex")}`
  return process.platform === "linux" ? `\0effect-intercom-${name}` : path.join(dir, `${name}.sock`)
}

/**
 * One synthetic client: a plain socket that writes frame texts and hands
 * each frame it reads to `onFrame`. It confirms what it read
 * (`received-v1`) after each chunk that held a message, as clients do, when
 * the broker granted it.
 */
class WarmClient {
  readonly sessionId: string
  /** Each frame read, in order. */
  onFrame: (frame: string) => void = () => {}
  /** The connection failed or closed (once). */
  onFailure: (error: Error) => void = () => {}
  private readonly socket: net.Socket
  private readonly decoder = new FrameDecoder()
  private readonly frames: Array<string> = []
  private framesRead = 0
  private confirming = false
  private failed = false

  constructor(socket: net.Socket, sessionId: string) {
    this.socket = socket
    this.sessionId = sessionId
    socket.on("data", (chunk: Buffer) => this.received(chunk))
    socket.on("error", (error) => this.fail(error))
    socket.on("close", () => this.fail(new Error("warm-up connection closed")))
  }

  private received(chunk: Buffer): void {
    const frames = this.frames
    frames.length = 0
    if (this.decoder.push(chunk, frames) !== undefined) return this.fail(new Error("warm-up framing error"))
    this.framesRead += frames.length
    let sawMessage = false
    for (const frame of frames) {
      if (frame.startsWith(MESSAGE_PREFIX)) sawMessage = true
      this.onFrame(frame)
    }
    if (sawMessage && this.confirming) this.write([`{"type":"received","frames":${this.framesRead}}`])
  }

  private fail(error: Error): void {
    if (this.failed) return
    this.failed = true
    this.onFailure(error)
  }

  write(texts: ReadonlyArray<string>): void {
    if (!this.socket.destroyed) this.socket.write(encodeFrames(texts))
  }

  /** Registers as `sessionId` with `features`; confirms reads when granted `received-v1`. */
  register(features: ReadonlyArray<string>, now: number): Effect.Effect<void, Error> {
    const session = JSON.stringify({ name: this.sessionId, cwd: "/", model: "warm-up", pid: process.pid, startedAt: now, lastActivity: now })
    const frame = `{"type":"register","sessionId":${JSON.stringify(this.sessionId)},"session":${session},"features":${
      JSON.stringify(features)
    }}`
    return Effect.callback<void, Error>((resume) => {
      this.onFailure = (error) => resume(Effect.fail(error))
      this.onFrame = (text) => {
        if (!text.startsWith(`{"type":"registered"`)) return resume(Effect.fail(new Error(`warm-up: ${text.slice(0, 80)}`)))
        this.confirming = features.includes(RECEIVED_V1)
        this.onFrame = () => {}
        resume(Effect.void)
      }
      this.write([frame])
    })
  }

  destroy(): void {
    this.socket.destroy()
  }
}

/** How every forwarded message's frame begins. */
const MESSAGE_PREFIX = `{"type":"message"`

/**
 * One asker and its answerer, driven from their sockets' events with no
 * fiber: each round, one burst of sends and a health probe (its answer says
 * the burst was handled), then `asksPerRound` asks one at a time, each
 * answered by the answerer as soon as it reads it.
 */
class WarmPair {
  rounds = 0
  private readonly asker: WarmClient
  private readonly answerer: WarmClient
  private readonly plan: WarmUpPlan
  private readonly benchShape: boolean
  private readonly now: number
  private readonly overBudget: () => boolean
  private readonly tag: string
  private asking = false
  private asked = 0
  private done: ((error: Error | undefined) => void) | undefined = undefined

  constructor(
    asker: WarmClient,
    answerer: WarmClient,
    options: { readonly plan: WarmUpPlan; readonly benchShape: boolean; readonly now: number; readonly overBudget: () => boolean }
  ) {
    this.asker = asker
    this.answerer = answerer
    this.plan = options.plan
    this.benchShape = options.benchShape
    this.now = options.now
    this.overBudget = options.overBudget
    this.tag = asker.sessionId
  }

  /** Runs the pair's rounds; completes after the last, or once the budget is spent. */
  run(): Effect.Effect<void, Error> {
    return Effect.callback<void, Error>((resume) => {
      this.done = (error) => {
        this.done = undefined
        resume(error === undefined ? Effect.void : Effect.fail(error))
      }
      this.asker.onFailure = this.answerer.onFailure = (error) => this.done?.(error)
      this.asker.onFrame = (frame) => this.askerRead(frame)
      this.answerer.onFrame = (frame) => this.answererRead(frame)
      this.nextRound()
      return Effect.sync(() => {
        this.done = undefined
      })
    })
  }

  private nextRound(): void {
    if (this.done === undefined) return
    if (this.rounds >= this.plan.rounds || this.overBudget()) return this.done(undefined)
    this.rounds++
    this.asking = false
    const target = JSON.stringify(this.answerer.sessionId)
    const frames: Array<string> = []
    for (let i = 1; i <= this.plan.burst; i++) {
      const sequence = this.benchShape ? `,"senderSequence":${i}` : ""
      frames.push(
        `{"type":"send","to":${target},"message":{"id":"${this.tag}-${this.rounds}-${i}","timestamp":${this.now},"content":{"text":${TEXT}}${sequence}}}`
      )
    }
    frames.push(`{"type":"health","requestId":"${this.tag}-${this.rounds}"}`)
    this.asker.write(frames)
  }

  private question(): string {
    return `${this.tag}-q-${this.rounds}-${this.asked}`
  }

  private ask(): void {
    if (this.asked >= this.plan.asksPerRound) return this.nextRound()
    this.asked++
    this.asker.write([
      `{"type":"send","to":${
        JSON.stringify(this.answerer.sessionId)
      },"message":{"id":"${this.question()}","timestamp":${this.now},"content":{"text":${TEXT}},"expectsReply":true}}`
    ])
  }

  private askerRead(frame: string): void {
    if (!this.asking) {
      // The burst's probe answered: every send before it was handled.
      if (frame.startsWith(`{"type":"health_ok"`)) {
        this.asking = true
        this.asked = 0
        this.ask()
      }
    } else if (frame.startsWith(MESSAGE_PREFIX)) {
      this.ask() // the answer came
    }
  }

  private answererRead(frame: string): void {
    // Only the question: the burst's last messages may still be coming in.
    if (!this.asking || !frame.startsWith(MESSAGE_PREFIX) || !frame.includes(`"expectsReply":true`)) return
    this.answerer.write([
      `{"type":"send","to":${
        JSON.stringify(this.asker.sessionId)
      },"message":{"id":"r-${this.question()}","timestamp":${this.now},"content":{"text":${TEXT}},"replyTo":"${this.question()}"}}`
    ])
  }
}

/** Listens on `socketPath` and hands every accepted socket to `broker.adopt`, as `serveUnix` does; closed with the Scope. */
const listenPrivately = (socketPath: string, broker: BrokerService): Effect.Effect<void, Error, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.callback<net.Server, Error>((resume) => {
      const scratch = new FrameScratch()
      let connections = 0
      const server = net.createServer({ pauseOnConnect: true }, (socket) => {
        broker.adopt(socketConnection(socket, { id: ++connections, scratch }))
      })
      server.once("error", (error) => resume(Effect.fail(error)))
      server.listen({ path: socketPath }, () => resume(Effect.succeed(server)))
    }),
    (server) => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
  ).pipe(Effect.asVoid)

const connect = (socketPath: string, sessionId: string): Effect.Effect<WarmClient, Error, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.callback<WarmClient, Error>((resume) => {
      const socket = net.createConnection({ path: socketPath })
      socket.once("error", (error) => resume(Effect.fail(error)))
      socket.once("connect", () => resume(Effect.succeed(new WarmClient(socket, sessionId))))
      return Effect.sync(() => socket.destroy())
    }),
    (client) => Effect.sync(() => client.destroy())
  )

/** The private broker: memory-only, or over a private in-memory SQLite database (durable mode). */
const privateBroker = (core: BrokerCoreOptions, durable: boolean): Effect.Effect<BrokerService, unknown, Scope.Scope> => {
  const options = { ...core, store: undefined, idleExit: null }
  if (!durable) return Broker.make(options)
  return Effect.gen(function*() {
    const database = yield* Layer.build(Database.layerMemory)
    const stores = yield* Effect.provide(
      Effect.all({ mail: makeSqlite, archive: ResultArchive.makeSql(), questions: makeQuestionSql }),
      database
    )
    return yield* Broker.make({ ...options, store: stores.mail }).pipe(
      Effect.provideService(ResultArchive, stores.archive),
      Effect.provideService(QuestionStore, stores.questions)
    )
  })
}

/**
 * Runs the warm-up (see the module header) and reports what it did. Fails
 * only if its private broker or sockets fail; the caller ignores that (the
 * broker serves as it would have without a warm-up).
 */
export const runWarmUp = (
  core: BrokerCoreOptions,
  options: {
    readonly durable: boolean
    readonly dir: string
    readonly plan?: WarmUpPlan
    /** Run once the private clients are registered, as the synthetic traffic begins. */
    readonly started?: Effect.Effect<unknown>
  }
): Effect.Effect<WarmUpReport, unknown> =>
  Effect.scoped(Effect.gen(function*() {
    const plan = options.plan ?? DEFAULT_WARM_UP
    const cpu0 = mainThreadCpuMs()
    const process0 = processCpuMs()
    const broker = yield* privateBroker(core, options.durable).pipe(
      // Its log lines (sessions joining and leaving) and metric series are its own: none reach the real broker's.
      Effect.provideService(References.MinimumLogLevel, "None"),
      Effect.provideService(TelemetryEnabled, { traces: false, metrics: false })
    )
    const socketPath = privateSocketPath(options.dir)
    yield* listenPrivately(socketPath, broker)
    const now = yield* Clock.currentTimeMillis
    const overBudget = () => mainThreadCpuMs() - cpu0 >= plan.cpuBudgetMs
    const pairs: Array<WarmPair> = []
    for (let p = 0; p < plan.pairs; p++) {
      // Half register as IntercomClient does, half as the bench's clients do (module header).
      const benchShape = p % 2 === 1
      const features = benchShape ? [RECEIVED_V1] : CLIENT_FEATURES
      const asker = yield* connect(socketPath, `warm-a${p}`)
      const answerer = yield* connect(socketPath, `warm-b${p}`)
      yield* asker.register(features, now)
      yield* answerer.register(features, now)
      pairs.push(new WarmPair(asker, answerer, { plan, benchShape, now, overBudget }))
    }
    if (options.started !== undefined) yield* options.started
    yield* Effect.forEach(pairs, (pair) => pair.run(), { concurrency: "unbounded", discard: true })
    let rounds = 0
    for (const pair of pairs) rounds += pair.rounds
    const asks = rounds * plan.asksPerRound
    return {
      rounds,
      messages: rounds * plan.burst + 2 * asks,
      asks,
      cpuMs: mainThreadCpuMs() - cpu0,
      processCpuMs: processCpuMs() - process0,
      capped: rounds < plan.rounds * plan.pairs
    }
  }))
