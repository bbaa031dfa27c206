/**
 * `Simulation`: a whole intercom world in one process — the real broker core,
 * real clients and real session runtimes, joined by the in-memory network,
 * with simulated agents as hosts — driven entirely by TestClock and one seed.
 *
 * The driver (a scenario, or the random workload) is the only fiber that
 * moves time. Each action it takes is a *step*: the action is forked behind a
 * 1 ms sleep and the clock advanced by 1 ms, so TestClock runs it (and
 * everything it wakes) until the world is idle again — the same order on
 * every run. Actions that wait (an ask, a reconnect) keep running as time
 * moves on; the step returns a `Pending` handle.
 *
 * Every owner of fibers (broker incarnation, client, session generation) runs
 * under a `FiberOwner` label, so closing it can be checked to leave nothing
 * running. The `Ledger` watches every frame and host hand-off and checks the
 * invariants (docs/testing.md).
 */
import {
  Cause,
  Clock,
  Context,
  Duration,
  Effect,
  Exit,
  Fiber,
  FiberSet,
  Layer,
  Logger,
  Metric,
  Option,
  Random,
  References,
  Schedule,
  Scope,
  Semaphore
} from "effect"
import { TestClock } from "effect/testing"
import { Broker, type BrokerService } from "../broker/Broker.ts"
import type { BrokerCoreOptions } from "../broker/options.ts"
import type { Dialer } from "../client/ClientConnection.ts"
import { IntercomNotConnected } from "../client/errors.ts"
import { IntercomClient, type IntercomClientService } from "../client/IntercomClient.ts"
import { Host, type HostIdentity, type Inbound } from "../session/Host.ts"
import {
  type AskFailure,
  IntercomSession,
  type IntercomSessionOptions,
  type IntercomSessionService,
  type ListError,
  type Replied,
  type ReplyFailure,
  type SendFailure,
  type Sent,
  type SendDeclined,
  type SessionList,
  sessionRegistration
} from "../session/IntercomSession.ts"
import type { LifecycleStatus } from "../session/render.ts"
import { type InMemoryNetwork, makeInMemoryNetwork } from "../transport/InMemoryNetwork.ts"
import { type FiberWatch, makeFiberWatch, ownedBy } from "./FiberWatch.ts"
import {
  type AskTally,
  Ledger,
  type MessageTally,
  type SessionMeta,
  type Side,
  type Violation,
  type ViolationKind
} from "./Ledger.ts"
import { Prng } from "./Prng.ts"
import { type AgentPolicy, defaultAgentPolicy, describeFailure, makeSimAgent, type SimAgent } from "./SimAgent.ts"
import { type BrokerOutputFault, SimLink } from "./SimLink.ts"

/** The address the simulated broker listens on. */
export const SIM_ADDRESS = "sim://broker"

/** Simulated time each step takes. */
const STEP_MS = 1

export interface SessionSpec {
  readonly name: string
  /** pi-intercom `scopeId` (an isolation boundary). */
  readonly scopeId?: string | undefined
  readonly agent?: Partial<AgentPolicy> | undefined
}

/** Client timings; the simulation's defaults are shorter than production's so runs settle quickly. */
export interface SimClientTimings {
  readonly connectTimeoutMs?: number
  readonly sendTimeoutMs?: number
  readonly listTimeoutMs?: number
  readonly livenessIntervalMs?: number
  readonly livenessTimeoutMs?: number
  readonly reconnectBaseMs?: number
  readonly reconnectMaxMs?: number
}

export interface SimulationConfig {
  /** Seeds every random choice: the workload, the agents, and Effect's `Random` (reconnect jitter). */
  readonly seed: number
  /** The sessions of the world, started at once. Default A, B, C, D. */
  readonly sessions?: ReadonlyArray<string | SessionSpec>
  /** `scopeId`s given round-robin to sessions that do not name one. Default: one unscoped space. */
  readonly scopes?: ReadonlyArray<string | undefined>
  readonly broker?: BrokerCoreOptions
  readonly session?: IntercomSessionOptions
  readonly client?: SimClientTimings
  /** Default agent behaviour; a session's own `agent` overrides it. */
  readonly agent?: Partial<AgentPolicy>
  /** Count messages lost in flight to a dying receiver as violations. Default false. */
  readonly strictInFlight?: boolean
  /** Every frame in the trace. Default false. */
  readonly traceFrames?: boolean
  /**
   * A deliberately broken build: makes, per world, a rewrite of what the
   * broker writes (see BrokenBuilds.ts). For testing the invariants only.
   */
  readonly brokerFault?: () => BrokerOutputFault
  /** Frames each direction of an in-memory link buffers. Default 64. */
  readonly linkCapacity?: number
  /** How long `finish` lets the healed world settle before the final checks. Default 60 s. */
  readonly settleMs?: number
  /**
   * Violations reported but not failing the run: known issues, listed in
   * docs/testing.md with the seed that shows each. Default none.
   */
  readonly tolerate?: ReadonlyArray<ViolationKind>
}

/** What a run found. `ok` is false when any invariant was violated. */
export interface SimReport {
  readonly seed: number
  /** No violation, apart from tolerated ones. */
  readonly ok: boolean
  /** Every violation, tolerated ones included. */
  readonly violations: ReadonlyArray<Violation>
  /** How many of `violations` were of a tolerated kind. */
  readonly tolerated: number
  readonly messages: MessageTally
  readonly asks: AskTally
  /** Invariant checks made (continuous and final). */
  readonly checks: number
  /** Frames that crossed the in-memory network. */
  readonly frames: number
  /** Trace lines (events). */
  readonly events: number
  readonly simulatedMs: number
  readonly fibersStarted: number
  readonly trace: ReadonlyArray<string>
}

/** An action still running in the simulated world. */
export interface Pending<A, E> {
  readonly fiber: Fiber.Fiber<A, E>
  /**
   * Its outcome. Moves simulated time forward (in 100 ms steps) until it is
   * done; after `within` (default 15 minutes) it is interrupted instead.
   */
  readonly result: (within?: Duration.Input) => Effect.Effect<Exit.Exit<A, E>>
}

export interface SimSession {
  readonly name: string
  readonly id: string
  readonly scopeId: string | undefined
  /** Whether its client and a session generation are running. */
  readonly running: Effect.Effect<boolean>
  /** Sends via the session's `send` (C-TOOL-4); skipped (undefined) while the session is stopped. */
  readonly send: (to: string, text: string) => Effect.Effect<Pending<Sent | SendDeclined, SendFailure> | undefined>
  readonly ask: (
    to: string,
    text: string,
    options?: { readonly timeout?: Duration.Input }
  ) => Effect.Effect<Pending<Replied | Sent, AskFailure> | undefined>
  /** Cancels (interrupts) this session's asks in progress, as a person cancelling the tool call. */
  readonly cancelAsks: Effect.Effect<void>
  /** `reply`: to the asker named `to`, or to the single pending ask. */
  readonly reply: (text: string, options?: { readonly to?: string; readonly replyTo?: string }) => Effect.Effect<
    Pending<Sent, ReplyFailure> | undefined
  >
  readonly list: Effect.Effect<Pending<SessionList, ListError> | undefined>
  readonly setStatus: (status: LifecycleStatus) => Effect.Effect<void>
  /** Busy for `duration` of simulated time (which passes), then idle again. */
  readonly busyFor: (duration: Duration.Input) => Effect.Effect<void>
  /** Everything the current generation's agent was handed. */
  readonly inbox: Effect.Effect<ReadonlyArray<Inbound>>
  /** Starts a stopped session: a new client and a new generation (the same session id). */
  readonly start: Effect.Effect<void>
  /** Orderly stop: the generation closes, the client unregisters and disconnects. */
  readonly stop: Effect.Effect<void>
  /** The process dies: its connection drops on its side, then everything closes. */
  readonly kill: Effect.Effect<void>
  /** A new session generation over the same client (what a host reload does). */
  readonly replaceGeneration: Effect.Effect<void>
  /** Drops the current connection on one side. */
  readonly drop: (side: Side) => Effect.Effect<void>
  /** Stops one side of the current connection reading, for `duration` (until `resume` without one). */
  readonly stall: (side: Side, duration?: Duration.Input) => Effect.Effect<void>
  readonly resume: (side: Side) => Effect.Effect<void>
  /** Each write from one side of the current connection takes `delay` first, for `duration` (or until healed). */
  readonly delayWrites: (side: Side, delay: Duration.Input, duration?: Duration.Input) => Effect.Effect<void>
}

export interface SimulationService {
  readonly seed: number
  readonly ledger: Ledger
  readonly sessions: ReadonlyArray<SimSession>
  /** The session named `name` (case-insensitive). */
  readonly session: (name: string) => SimSession
  readonly broker: {
    readonly isUp: Effect.Effect<boolean>
    /** The broker process dies: connections drop, its in-memory state is gone. */
    readonly crash: Effect.Effect<void>
    readonly start: Effect.Effect<void>
    /** Crash, then start a fresh broker on the same address. */
    readonly restart: Effect.Effect<void>
    /** Crash now and start again after `downFor` of simulated time. */
    readonly crashFor: (downFor: Duration.Input) => Effect.Effect<void>
    readonly core: Effect.Effect<BrokerService | undefined>
  }
  /** Lets simulated time pass. */
  readonly advance: (duration: Duration.Input) => Effect.Effect<void>
  /** Moves the wall clock by `millis` (negative: backwards); overdue timers fire. */
  readonly jumpClock: (millis: number) => Effect.Effect<void>
  /** Adds a line to the trace. */
  readonly note: (text: string) => Effect.Effect<void>
  /**
   * Ends the run: heals every fault, restarts what is down, lets the world
   * settle, makes the final checks, closes the world and checks no fiber is
   * left. Call it once, last.
   */
  readonly finish: Effect.Effect<SimReport>
}

export class Simulation extends Context.Service<Simulation, SimulationService>()("effect-intercom/testing/Simulation") {
  /**
   * The world for `config`, with its own TestClock, seeded `Random`, fiber
   * watch and a logger that writes warnings to the trace. Everything that
   * uses the layer runs under that clock.
   */
  static readonly layer = (config: SimulationConfig): Layer.Layer<Simulation | TestClock.TestClock> =>
    Layer.unwrap(Effect.sync(() => {
      const watch = makeFiberWatch()
      const logSink: LogSink = { note: undefined }
      return Layer.effect(Simulation, makeSimulation(config, watch, logSink)).pipe(
        Layer.provideMerge(simulationEnvironment(config.seed, watch, logSink))
      )
    }))
}

interface LogSink {
  note: ((line: string) => void) | undefined
}

/** TestClock, seeded Random, the fiber watch, and logs to the trace (warnings and worse). */
const simulationEnvironment = (seed: number, watch: FiberWatch, sink: LogSink) =>
  Layer.mergeAll(
    TestClock.layer({ warningDelay: "1 minute" }),
    Layer.succeed(Random.Random, new Prng(seed)),
    Layer.succeed(Metric.FiberRuntimeMetrics, watch.service),
    Layer.succeed(References.MinimumLogLevel, "Warn"),
    Logger.layer([
      Logger.make(({ logLevel, message }) => {
        const text = Array.isArray(message) ? message.map(String).join(" ") : String(message)
        sink.note?.(`   log ${logLevel}: ${text}`)
      })
    ])
  )

interface ClientState {
  readonly key: string
  readonly scope: Scope.Closeable
  readonly service: IntercomClientService
}

interface GenerationState {
  readonly key: string
  readonly scope: Scope.Closeable
  readonly service: IntercomSessionService
  readonly agent: SimAgent
  readonly ops: FiberSet.FiberSet<unknown, unknown>
}

interface SessionState {
  readonly meta: SessionMeta
  readonly index: number
  readonly policy: AgentPolicy
  readonly lock: Semaphore.Semaphore
  clients: number
  generations: number
  client: ClientState | undefined
  generation: GenerationState | undefined
  link: SimLink | undefined
  status: LifecycleStatus
  /** Asks in progress (the tool calls a person could cancel). */
  readonly asks: Set<Fiber.Fiber<unknown, unknown>>
}

interface BrokerState {
  readonly epoch: number
  readonly scope: Scope.Closeable
  readonly core: BrokerService
}

const specOf = (entry: string | SessionSpec): SessionSpec => typeof entry === "string" ? { name: entry } : entry

const millisOf = (input: Duration.Input): number => Duration.toMillis(Duration.fromInputUnsafe(input))

const makeSimulation = (
  config: SimulationConfig,
  watch: FiberWatch,
  logSink: LogSink
): Effect.Effect<SimulationService, never, Scope.Scope> =>
  Effect.gen(function*() {
    const seed = config.seed
    const clock = yield* Clock.Clock
    const now = () => clock.currentTimeMillisUnsafe()
    const ledger = new Ledger({
      now,
      ...(config.strictInFlight === undefined ? {} : { strictInFlight: config.strictInFlight }),
      ...(config.traceFrames === undefined ? {} : { traceFrames: config.traceFrames })
    })
    logSink.note = (line) => ledger.note(line)
    const worldScope = yield* Scope.fork(yield* Effect.scope)
    const steps = yield* FiberSet.make().pipe(Scope.provide(worldScope))
    const settleMs = config.settleMs ?? 60_000
    const brokerOptions: BrokerCoreOptions = { idleExit: null, ...config.broker }
    const sessionOptions: IntercomSessionOptions = { askTimeoutMs: 20_000, connectTimeoutMs: 5_000, ...config.session }
    const timings: Required<SimClientTimings> = {
      connectTimeoutMs: 5_000,
      sendTimeoutMs: 5_000,
      listTimeoutMs: 5_000,
      livenessIntervalMs: 10_000,
      livenessTimeoutMs: 3_000,
      reconnectBaseMs: 250,
      reconnectMaxMs: 4_000,
      ...config.client
    }

    // --- the network and its links ----------------------------------------

    const links = new Map<number, SimLink>()
    const brokerFault = config.brokerFault?.()
    let broker: BrokerState | undefined
    let epoch = 0
    let lifecycleBusy = 0
    let finished = false

    const network: InMemoryNetwork = yield* makeInMemoryNetwork({
      capacity: config.linkCapacity ?? 64,
      link: ({ id, client, server }) => {
        const link = new SimLink(id, broker?.epoch ?? 0, { client, server }, ledger, brokerFault)
        links.set(id, link)
        return { client: link.client, server: link.server }
      }
    })

    // --- steps and time ------------------------------------------------------

    /** Checks that hold whenever the world is idle and no fault is in progress. */
    const idleChecks = Effect.gen(function*() {
      const current = broker
      if (current === undefined || lifecycleBusy > 0) return
      for (const link of links.values()) if (link.settling) return
      const count = yield* current.core.sessionCount
      const owners = new Set(ledger.registeredOwners())
      ledger.check(count === owners.size, "registry-mismatch", () =>
        `the broker has ${count} live session(s); registered connections belong to ${owners.size} (${
          [...owners].map((id) => ledger.nameOf(id)).join(", ")
        })`)
    })

    const advance = (duration: Duration.Input): Effect.Effect<void> =>
      Effect.andThen(TestClock.adjust(duration), idleChecks)

    /** Runs `action` as one step (see the module comment) and returns its fiber. */
    const step = <A, E>(
      action: Effect.Effect<A, E>,
      into: FiberSet.FiberSet<unknown, unknown> = steps,
      owner?: string
    ): Effect.Effect<Fiber.Fiber<A, E>> =>
      Effect.gen(function*() {
        const run = FiberSet.run(into, Effect.andThen(Effect.sleep(STEP_MS), action))
        const fiber = yield* (owner === undefined ? run : run.pipe(ownedBy(owner)))
        yield* advance(STEP_MS)
        return fiber
      })

    const pending = <A, E>(fiber: Fiber.Fiber<A, E>): Pending<A, E> => ({
      fiber,
      result: (within = Duration.minutes(15)) =>
        Effect.gen(function*() {
          const deadline = now() + millisOf(within)
          while (fiber.pollUnsafe() === undefined && now() < deadline) yield* advance(100)
          if (fiber.pollUnsafe() === undefined) yield* Fiber.interrupt(fiber)
          return yield* Fiber.await(fiber)
        })
    })

    /** Runs a world action (broker, lifecycle) as a step and waits until it is done. */
    const worldStep = (label: string | undefined, action: Effect.Effect<void>): Effect.Effect<void> =>
      Effect.gen(function*() {
        if (label !== undefined) ledger.note(label)
        const fiber = yield* step(action)
        while (fiber.pollUnsafe() === undefined) yield* advance(100)
      })

    // --- the broker --------------------------------------------------------

    const startBroker: Effect.Effect<void> = Effect.gen(function*() {
      if (broker !== undefined || finished) return
      const brokerEpoch = ++epoch
      const owner = `broker#${brokerEpoch}`
      const scope = yield* Scope.fork(worldScope)
      const core = yield* Broker.make(brokerOptions).pipe(Scope.provide(scope), ownedBy(owner))
      broker = { epoch: brokerEpoch, scope, core }
      yield* network.listen(SIM_ADDRESS, core.accept).pipe(Scope.provide(scope), ownedBy(owner), Effect.orDie)
      ledger.note(`broker #${brokerEpoch} started`)
    })

    const crashBroker: Effect.Effect<void> = Effect.gen(function*() {
      const current = broker
      if (current === undefined) return
      broker = undefined
      ledger.brokerCrashed(current.epoch)
      ledger.note(`broker #${current.epoch} crashed`)
      yield* Scope.close(current.scope, Exit.void)
      const owner = `broker#${current.epoch}`
      ledger.check(watch.live(owner) === 0, "fiber-leak", () =>
        `${watch.live(owner)} fiber(s) of ${owner} still running after it crashed`)
    })

    // --- sessions ------------------------------------------------------------

    const scopes = config.scopes ?? [undefined]
    const specs = (config.sessions ?? ["A", "B", "C", "D"]).map(specOf)
    const states: Array<SessionState> = []
    for (const [index, spec] of specs.entries()) {
      const scopeId = spec.scopeId ?? scopes[index % Math.max(1, scopes.length)]
      const meta: SessionMeta = { id: `sim-${index + 1}-${spec.name.toLowerCase()}`, name: spec.name, scopeId }
      ledger.addSession(meta)
      states.push({
        meta,
        index,
        policy: { ...defaultAgentPolicy, ...config.agent, ...spec.agent },
        lock: yield* Semaphore.make(1),
        clients: 0,
        generations: 0,
        client: undefined,
        generation: undefined,
        link: undefined,
        status: "idle",
        asks: new Set()
      })
    }

    const identityOf = (state: SessionState): HostIdentity => ({
      name: state.meta.name,
      cwd: `/sim/${state.meta.name.toLowerCase()}`,
      model: "sim-model"
    })

    const dialerFor = (state: SessionState, clientKey: string): Dialer => (address) =>
      network.dial(address).pipe(
        Effect.mapError((error) => new IntercomNotConnected({ reason: error.message })),
        Effect.tap((connection) =>
          Effect.sync(() => {
            const link = links.get(connection.id)
            if (link === undefined) return
            link.attach(state.meta.id, clientKey)
            if (state.client?.key === clientKey) state.link = link
            ledger.note(`${state.meta.name} connected: link #${link.id} to broker #${link.brokerEpoch}`)
          })
        )
      )

    const leakCheck = (owner: string, what: string) =>
      ledger.check(watch.live(owner) === 0, "fiber-leak", () =>
        `${watch.live(owner)} fiber(s) of ${owner} still running after ${what} closed`)

    const buildGeneration = (state: SessionState, client: ClientState): Effect.Effect<void> =>
      Effect.gen(function*() {
        const key = `${client.key}/g${++state.generations}`
        const scope = yield* Scope.fork(client.scope)
        const agent = yield* makeSimAgent({
          sessionId: state.meta.id,
          identity: identityOf(state),
          policy: state.policy,
          prng: Prng.derive(seed, key),
          ledger
        }).pipe(Scope.provide(scope), ownedBy(key))
        const layer = IntercomSession.layer(sessionOptions).pipe(
          Layer.provide(Layer.merge(Layer.succeed(IntercomClient, client.service), Host.layer(agent.host)))
        )
        const context = yield* Layer.buildWithScope(layer, scope).pipe(ownedBy(key))
        const service = Context.get(context, IntercomSession)
        agent.attach(service)
        const ops = yield* FiberSet.make().pipe(Scope.provide(scope))
        state.generation = { key, scope, service, agent, ops }
        if (state.status !== "idle") yield* service.setStatus(state.status)
        ledger.note(`${state.meta.name} generation ${key} started`)
      })

    const closeGeneration = (state: SessionState): Effect.Effect<void> =>
      Effect.gen(function*() {
        const generation = state.generation
        if (generation === undefined) return
        state.generation = undefined
        yield* Scope.close(generation.scope, Exit.void)
        leakCheck(generation.key, "its generation")
      })

    const startSession = (state: SessionState): Effect.Effect<void> =>
      Effect.gen(function*() {
        if (state.client !== undefined || finished) return
        const key = `${state.meta.name}/c${++state.clients}`
        const scope = yield* Scope.fork(worldScope)
        const service = yield* IntercomClient.make({
          agentDir: "/sim",
          intercomDir: "/sim/intercom",
          socketPath: SIM_ADDRESS,
          sessionId: state.meta.id,
          scopeId: state.meta.scopeId,
          registration: sessionRegistration({
            sessionId: state.meta.id,
            identity: identityOf(state),
            pid: 1000 + state.index,
            startedAt: now(),
            status: state.status
          }),
          launch: false,
          dial: dialerFor(state, key),
          ...timings
        }).pipe(Scope.provide(scope), ownedBy(key))
        const client: ClientState = { key, scope, service }
        state.client = client
        ledger.note(`${state.meta.name} client ${key} started`)
        // The first connection is made by a fiber of the client (later ones by its own reconnect loop).
        yield* Effect.forkIn(
          service.connect.pipe(Effect.retry({ schedule: Schedule.spaced("1 second") }), Effect.ignore),
          scope
        ).pipe(ownedBy(key))
        yield* buildGeneration(state, client)
      })

    const stopSession = (state: SessionState, how: "stop" | "kill"): Effect.Effect<void> =>
      Effect.gen(function*() {
        const client = state.client
        if (client === undefined) return
        if (how === "kill" && state.link !== undefined) yield* state.link.sever("client")
        yield* closeGeneration(state)
        state.client = undefined
        state.link = undefined
        yield* Scope.close(client.scope, Exit.void)
        ledger.clientClosed(client.key)
        leakCheck(client.key, "its client")
      })

    const lifecycle = (state: SessionState, label: string, action: Effect.Effect<void>): Effect.Effect<void> =>
      worldStep(
        `${state.meta.name} ${label}`,
        Effect.acquireUseRelease(
          Effect.sync(() => lifecycleBusy++),
          () => state.lock.withPermits(1)(action),
          () => Effect.sync(() => lifecycleBusy--)
        )
      )

    /** Runs a session action as a step in the current generation; undefined when the session is stopped. */
    const sessionOp = <A, E>(
      state: SessionState,
      label: string,
      action: (session: IntercomSessionService) => Effect.Effect<A, E>,
      describe: (exit: Exit.Exit<A, E>) => string
    ): Effect.Effect<Pending<A, E> | undefined> =>
      Effect.gen(function*() {
        const generation = state.generation
        const client = state.client
        if (generation === undefined || client === undefined) {
          ledger.note(`${state.meta.name} ${label}: skipped (session stopped)`)
          return undefined
        }
        const fiber = yield* step(
          Effect.suspend(() => {
            ledger.note(`${state.meta.name} ${label}`)
            return action(generation.service)
          }).pipe(
            Effect.onExit((exit) => Effect.sync(() => ledger.note(`${state.meta.name} ${label} → ${describe(exit)}`)))
          ),
          generation.ops,
          client.key
        )
        return pending(fiber)
      })

    const failureOf = <A, E>(exit: Exit.Exit<A, E>, success: (a: A) => string): string =>
      Exit.isSuccess(exit) ? success(exit.value) : describeFailure(exit.cause)

    const currentLink = (state: SessionState): SimLink | undefined => {
      const link = state.link
      return link === undefined || link.closed ? undefined : link
    }

    const handleOf = (state: SessionState): SimSession => {
      const name = state.meta.name
      return {
        name,
        id: state.meta.id,
        scopeId: state.meta.scopeId,
        running: Effect.sync(() => state.generation !== undefined),
        send: (to, text) =>
          sessionOp(
            state,
            `send ${to} "${text}"`,
            (session) => session.send({ to, message: text }),
            (exit) =>
              failureOf(exit, (sent) =>
                sent._tag === "Sent" ? `${ledger.alias(sent.messageId)} ${sent.delivery}` : "declined")
          ),
        ask: (to, text, options = {}) => {
          let alias = ""
          const asking = sessionOp(
            state,
            `ask ${to} "${text}"`,
            (session) =>
              Effect.suspend(() => {
                alias = ledger.askStarted(state.meta.id, to)
                return session.ask({
                  to,
                  message: text,
                  ...(options.timeout === undefined ? {} : { timeoutMs: millisOf(options.timeout) })
                })
              }).pipe(
                Effect.onExit((exit) =>
                  Effect.sync(() => {
                    if (alias === "") return
                    if (Exit.isSuccess(exit)) {
                      const value = exit.value
                      if (value._tag === "Replied") {
                        ledger.askEnded(alias, "Replied", {
                          questionId: value.questionId,
                          fromId: value.from.id,
                          message: value.reply
                        })
                      } else {
                        ledger.askEnded(alias, `Sent (${value.delivery})`)
                      }
                    } else {
                      ledger.askEnded(alias, failureTag(exit.cause))
                    }
                  })
                )
              ),
            (exit) =>
              failureOf(exit, (result) =>
                result._tag === "Replied" ? `replied by ${ledger.alias(result.reply.id)}` : `sent, ${result.delivery}`)
          )
          return Effect.tap(asking, (pending) =>
            Effect.sync(() => {
              if (pending === undefined) return
              const fiber: Fiber.Fiber<unknown, unknown> = pending.fiber
              state.asks.add(fiber)
              fiber.addObserver(() => state.asks.delete(fiber))
            }))
        },
        cancelAsks: worldStep(
          `${name} cancels its asks`,
          Effect.suspend(() => Effect.forEach([...state.asks], Fiber.interrupt, { discard: true }))
        ),
        reply: (text, options = {}) =>
          sessionOp(
            state,
            `reply${options.to === undefined ? "" : ` to ${options.to}`} "${text}"`,
            (session) => session.reply({ message: text, to: options.to, replyTo: options.replyTo }),
            (exit) => failureOf(exit, (sent) => `${ledger.alias(sent.messageId)} ${sent.delivery}`)
          ),
        list: sessionOp(
          state,
          "list",
          (session) => session.list,
          (exit) => failureOf(exit, (list) => `${list.sessions.length} session(s)`)
        ),
        setStatus: (status) =>
          worldStep(
            undefined,
            Effect.suspend(() => {
              state.status = status
              ledger.note(`${name} is ${status}`)
              return state.generation === undefined ? Effect.void : state.generation.service.setStatus(status)
            })
          ),
        busyFor: (duration) =>
          Effect.gen(function*() {
            const handle = handleOf(state)
            yield* handle.setStatus("thinking")
            yield* advance(duration)
            yield* handle.setStatus("idle")
          }),
        inbox: Effect.sync(() => state.generation?.agent.inbox ?? []),
        start: lifecycle(state, "starts", startSession(state)),
        stop: lifecycle(state, "stops", stopSession(state, "stop")),
        kill: lifecycle(state, "is killed", stopSession(state, "kill")),
        replaceGeneration: lifecycle(
          state,
          "replaces its generation",
          Effect.gen(function*() {
            const client = state.client
            if (client === undefined) return
            yield* closeGeneration(state)
            yield* buildGeneration(state, client)
          })
        ),
        drop: (side) =>
          worldStep(
            `${name}'s connection drops on the ${side} side`,
            Effect.suspend(() => currentLink(state)?.sever(side) ?? Effect.void)
          ),
        stall: (side, duration) =>
          worldStep(
            `${name}'s ${side} stops reading${duration === undefined ? "" : ` for ${Duration.format(Duration.fromInputUnsafe(duration))}`}`,
            Effect.suspend(() => {
              const link = currentLink(state)
              if (link === undefined) return Effect.void
              link.stall(side)
              if (duration === undefined) return Effect.void
              return Effect.asVoid(FiberSet.run(steps, Effect.andThen(Effect.sleep(duration), Effect.sync(() => link.resume(side)))))
            })
          ),
        resume: (side) =>
          worldStep(`${name}'s ${side} reads again`, Effect.sync(() => currentLink(state)?.resume(side))),
        delayWrites: (side, delay, duration) =>
          worldStep(
            `${name}'s ${side} writes take ${Duration.format(Duration.fromInputUnsafe(delay))}`,
            Effect.suspend(() => {
              const link = currentLink(state)
              if (link === undefined) return Effect.void
              link.delay(side, millisOf(delay))
              if (duration === undefined) return Effect.void
              return Effect.asVoid(FiberSet.run(steps, Effect.andThen(Effect.sleep(duration), Effect.sync(() => link.delay(side, 0)))))
            })
          )
      }
    }

    const handles = states.map(handleOf)

    // --- the end of a run ----------------------------------------------------

    const finish: Effect.Effect<SimReport> = Effect.gen(function*() {
      ledger.note("finish: heal every fault, restart what is down, settle")
      for (const link of links.values()) link.heal()
      yield* worldStep(undefined, startBroker)
      for (const state of states) {
        if (state.client === undefined) yield* lifecycle(state, "starts", startSession(state))
      }
      yield* advance(settleMs)
      ledger.note("final checks")
      // Everyone is connected and registered; the registry, lists and mailbox agree.
      for (const state of states) {
        const status = state.client === undefined ? undefined : yield* state.client.service.status
        ledger.check(status?.connected === true, "not-reconnected", () =>
          `${state.meta.name} is not connected ${settleMs} ms after the faults healed (${status?.lastError ?? "stopped"})`)
      }
      yield* idleChecks
      for (const link of links.values()) {
        ledger.check(!link.lingering, "registry-mismatch", () =>
          `the broker never saw link #${link.id} of ${ledger.nameOf(link.owner ?? "?")} end, ${settleMs} ms after the faults healed`)
      }
      const current = broker
      if (current !== undefined) {
        const count = yield* current.core.sessionCount
        ledger.check(count === states.length, "registry-mismatch", () =>
          `the broker has ${count} live session(s), the world ${states.length}`)
        const held = (yield* current.core.stats).mailbox
        if (held > 0) {
          // Mail waiting although every target is connected: make every session register again
          // and see where it goes (deliveries now are `stranded-mail`).
          ledger.note(`the mailbox holds ${held} message(s) with every session connected: every session registers again`)
          ledger.setRescue(true)
          for (const state of states) {
            const link = currentLink(state)
            if (link !== undefined) yield* worldStep(undefined, link.sever("client"))
          }
          yield* advance(15_000)
          ledger.setRescue(false)
        }
        const stats = yield* current.core.stats
        ledger.check(stats.mailbox === 0, "mailbox-not-empty", () =>
          `${stats.mailbox} message(s) still in the mailbox with every session connected`)
        ledger.check(stats.unregistered === 0, "registry-mismatch", () =>
          `${stats.unregistered} connection(s) still unregistered`)
      }
      const byScope = new Map<string, Array<SessionState>>()
      for (const state of states) {
        const key = state.meta.scopeId ?? ""
        byScope.set(key, [...(byScope.get(key) ?? []), state])
      }
      for (const members of byScope.values()) {
        const first = members[0]
        if (first === undefined) continue
        const listed = yield* handleOf(first).list
        if (listed === undefined) continue
        const exit = yield* listed.result("30 seconds")
        if (Exit.isSuccess(exit)) {
          const ids = exit.value.sessions.map((session) => session.id).sort()
          const expected = members.map((state) => state.meta.id).sort()
          ledger.check(ids.join(",") === expected.join(","), "registry-mismatch", () =>
            `${first.meta.name}'s list shows [${ids.map((id) => ledger.nameOf(id)).join(", ")}], its scope has [${
              expected.map((id) => ledger.nameOf(id)).join(", ")
            }]`)
        } else {
          ledger.violate("registry-mismatch", `${first.meta.name} could not list: ${describeFailure(exit.cause)}`)
        }
      }
      for (const alias of ledger.unsettledAsks()) ledger.violate("ask-unsettled", `${alias} never settled`)
      for (const state of states) {
        const waiting = state.generation === undefined ? false : yield* state.generation.service.waiting
        ledger.check(!waiting, "ask-unsettled", () => `${state.meta.name} still holds its reply-waiter slot`)
      }
      // Ask the broker's replay record about losses nothing else explains (P46).
      for (const lost of ledger.unexplained()) {
        const client = states.find((state) => state.meta.id === lost.sender)?.client
        if (client === undefined) continue
        const answer = yield* step(client.service.send({ to: lost.target, message: lost.message }), steps, client.key)
        while (answer.pollUnsafe() === undefined) yield* advance(100)
        const exit = yield* Fiber.await(answer)
        ledger.recordSaid(
          lost.message.id,
          Exit.isSuccess(exit)
            ? "delivered"
            : Cause.findErrorOption(exit.cause).pipe(
              Option.match({ onNone: () => "no answer", onSome: (error) => "code" in error ? error.code : error._tag })
            )
        )
      }
      const messages = ledger.finish()
      const asks = ledger.askTally()
      // Close the world; nothing may keep running.
      finished = true
      yield* worldStep("the world closes", Effect.gen(function*() {
        for (const state of states) yield* state.lock.withPermits(1)(stopSession(state, "stop"))
        yield* crashBroker
      }))
      yield* Scope.close(worldScope, Exit.void)
      const leaks = watch.liveUnder("")
      ledger.check(leaks.length === 0, "fiber-leak", () =>
        `after the world closed: ${leaks.map(([owner, count]) => `${owner}: ${count}`).join(", ")}`)
      const violations = ledger.violations
      const tolerate = new Set(config.tolerate ?? [])
      const tolerated = violations.filter((violation) => tolerate.has(violation.kind)).length
      return {
        seed,
        ok: tolerated === violations.length,
        violations,
        tolerated,
        messages,
        asks,
        checks: ledger.checks,
        frames: ledger.frames,
        events: ledger.trace.length,
        simulatedMs: now(),
        fibersStarted: watch.started(),
        trace: ledger.trace
      } satisfies SimReport
    })

    // --- start the world -------------------------------------------------------

    ledger.note(`simulation seed ${seed}: ${states.map((state) => `${state.meta.name}${state.meta.scopeId === undefined ? "" : `@${state.meta.scopeId}`}`).join(", ")}`)
    yield* worldStep(undefined, startBroker)
    for (const state of states) yield* worldStep(undefined, state.lock.withPermits(1)(startSession(state)))

    return {
      seed,
      ledger,
      sessions: handles,
      session: (name) => {
        const found = handles.find((handle) => handle.name.toLowerCase() === name.toLowerCase())
        if (found === undefined) throw new RangeError(`No simulated session named ${name}`)
        return found
      },
      broker: {
        isUp: Effect.sync(() => broker !== undefined),
        crash: worldStep(undefined, crashBroker),
        start: worldStep(undefined, startBroker),
        restart: worldStep("broker restarts", Effect.andThen(crashBroker, startBroker)),
        crashFor: (downFor) =>
          worldStep(
            `broker down for ${Duration.format(Duration.fromInputUnsafe(downFor))}`,
            Effect.andThen(
              crashBroker,
              Effect.asVoid(FiberSet.run(steps, Effect.andThen(Effect.sleep(downFor), startBroker)))
            )
          ),
        core: Effect.sync(() => broker?.core)
      },
      advance,
      jumpClock: (millis) =>
        Effect.gen(function*() {
          ledger.note(`the wall clock jumps ${millis >= 0 ? "forward" : "back"} ${Math.abs(millis)} ms`)
          yield* TestClock.setTime(now() + millis)
          yield* idleChecks
        }),
      note: (text) => Effect.sync(() => ledger.note(text)),
      finish
    } satisfies SimulationService
  })

/** The tag of an ask's failure, for the tallies. */
const failureTag = <E>(cause: Parameters<typeof describeFailure<E>>[0]): string => {
  const text = describeFailure(cause)
  const space = text.indexOf(" ")
  return space < 0 ? text : text.slice(0, space)
}
