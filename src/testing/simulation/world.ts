/**
 * One simulated world's fixed parts and its small mutable state: the ledger,
 * the world's Scope and step set, the in-memory network and its links, the
 * options every broker, client and session is built with, and which broker
 * incarnation is up. Made once per run by `makeWorld`; its mutable state is
 * touched only by the world's steps, which run one at a time.
 */
import { Clock, Effect, FiberSet, Scope } from "effect"
import type { BrokerService } from "../../broker/Broker.ts"
import { type BrokerCoreOptions, resolveCoreOptions } from "../../broker/options.ts"
import type { IntercomSessionOptions } from "../../session/IntercomSession.ts"
import { makeMemoryMailState, type MemoryMailState } from "../../store/MailStore.ts"
import { type InMemoryNetwork, makeInMemoryNetwork } from "../../transport/InMemoryNetwork.ts"
import type { FiberWatch } from "../FiberWatch.ts"
import { Ledger } from "../Ledger.ts"
import { SimLink } from "../SimLink.ts"
import type { LogSink } from "./environment.ts"
import type { InsertedOpTally, SimClientTimings, SimDurability, SimulationConfig } from "./types.ts"

/** The address the simulated broker listens on. */
export const SIM_ADDRESS = "sim://broker"

/** The broker incarnation that is up. */
export interface BrokerState {
  readonly epoch: number
  readonly scope: Scope.Closeable
  readonly core: BrokerService
}

/** What changes as the world runs. */
export interface WorldState {
  /** The broker that is up, if any. */
  broker: BrokerState | undefined
  /** The last broker incarnation's number. */
  epoch: number
  /** Lifecycle actions (start, stop, kill, …) in progress; idle checks wait for none. */
  lifecycleBusy: number
  /** The world is closing: nothing starts again. */
  finished: boolean
  /** How often each op a workload flag inserts (`--answer-takeover`) reached its case or was skipped (`SimReport.insertedOps`). */
  insertedOps: Record<string, InsertedOpTally>
  /** Rare connection-path branches reached so far (broker incarnations add theirs when they die). */
  paths: {
    admissionWaits: number
    waitsWithdrawn: number
    readPauses: number
    pumpHeld: number
    ownParks: number
    parkedBehindOwn: number
    waitsBehindOwn: number
    offeredAhead: number
    answersBehindReplies: number
    answersReleasedOffered: number
    answersReleasedForced: number
    answersDropped: number
    answersReleasedCustody: number
    departuresHeld: number
    returnsHeld: number
    custodyHoldsTaken: number
    custodyHoldsCarried: number
    custodyHoldsAdopted: number
    custodyHeldMessages: number
    custodyHeldWaits: number
    custodyHeldDepartures: number
    custodyHeldReturns: number
    custodyAwaitedReplies: number
    withdrawnCopiesKept: number
    withdrawnCopiesGiven: number
    controlsKept: number
    controlsKeptGiven: number
  }
}

/** One simulated world. */
export interface World {
  readonly seed: number
  readonly config: SimulationConfig
  readonly ledger: Ledger
  readonly watch: FiberWatch
  /** The simulated time, in milliseconds. */
  readonly now: () => number
  /** Every broker, client and step lives in it; `finish` closes it. */
  readonly scope: Scope.Closeable
  /** Steps of the world not tied to a session generation. */
  readonly steps: FiberSet.FiberSet<unknown, unknown>
  readonly network: InMemoryNetwork
  readonly links: Map<number, SimLink>
  /** The same links by their broker end's connection id (what the broker's `ReaderObserver` names). */
  readonly linksByServer: Map<number, SimLink>
  readonly settleMs: number
  readonly brokerOptions: BrokerCoreOptions
  readonly durability: SimDurability
  /**
   * The simulated disk of a durable world: made once, it outlives every
   * broker incarnation (each gets a `MailStore` over it); undefined in
   * memory mode.
   */
  readonly disk: MemoryMailState | undefined
  readonly sessionOptions: IntercomSessionOptions
  readonly timings: Required<SimClientTimings>
  readonly state: WorldState
}

/** Makes the world for `config` in the current Scope, its trace fed by `logSink` from now on. */
export const makeWorld = (
  config: SimulationConfig,
  watch: FiberWatch,
  logSink: LogSink
): Effect.Effect<World, never, Scope.Scope> =>
  Effect.gen(function*() {
    const clock = yield* Clock.Clock
    const now = () => clock.currentTimeMillisUnsafe()
    const ledger = new Ledger({
      now,
      ...(config.strictInFlight === undefined ? {} : { strictInFlight: config.strictInFlight }),
      ...(config.traceFrames === undefined ? {} : { traceFrames: config.traceFrames }),
      hostileChecks: (config.hostile ?? 0) > 0,
      durable: (config.durability ?? "durable") === "durable",
      replaceWindowMs: resolveCoreOptions(config.broker ?? {}).replaceWindowMs
    })
    logSink.note = (line) => ledger.note(line)
    const scope = yield* Scope.fork(yield* Effect.scope)
    const steps = yield* FiberSet.make().pipe(Scope.provide(scope))
    const links = new Map<number, SimLink>()
    const linksByServer = new Map<number, SimLink>()
    const brokerFault = config.brokerFault?.()
    const brokerInputFault = config.brokerInputFault?.()
    const state: WorldState = {
      broker: undefined,
      epoch: 0,
      lifecycleBusy: 0,
      finished: false,
      insertedOps: {},
      paths: { admissionWaits: 0, waitsWithdrawn: 0, readPauses: 0, pumpHeld: 0, ownParks: 0, parkedBehindOwn: 0, waitsBehindOwn: 0, offeredAhead: 0, answersBehindReplies: 0, answersReleasedOffered: 0, answersReleasedForced: 0, answersDropped: 0, answersReleasedCustody: 0, departuresHeld: 0, returnsHeld: 0, custodyHoldsTaken: 0, custodyHoldsCarried: 0, custodyHoldsAdopted: 0, custodyHeldMessages: 0, custodyHeldWaits: 0, custodyHeldDepartures: 0, custodyHeldReturns: 0, custodyAwaitedReplies: 0, withdrawnCopiesKept: 0, withdrawnCopiesGiven: 0, controlsKept: 0, controlsKeptGiven: 0 }
    }
    const network: InMemoryNetwork = yield* makeInMemoryNetwork({
      capacity: config.linkCapacity ?? 64,
      pumpHeld: () => {
        state.paths.pumpHeld++
      },
      link: ({ id, client, server }) => {
        const link = new SimLink(id, state.broker?.epoch ?? 0, { client, server }, ledger, brokerFault, brokerInputFault)
        links.set(id, link)
        linksByServer.set(server.id, link)
        return { client: link.client, server: link.server }
      }
    })
    return {
      seed: config.seed,
      config,
      ledger,
      watch,
      now,
      scope,
      steps,
      network,
      links,
      linksByServer,
      settleMs: config.settleMs ?? 60_000,
      brokerOptions: { idleExit: null, ...config.broker },
      durability: config.durability ?? "durable",
      disk: (config.durability ?? "durable") === "durable" ? makeMemoryMailState() : undefined,
      sessionOptions: { askTimeoutMs: 20_000, connectTimeoutMs: 5_000, ...config.session },
      timings: {
        connectTimeoutMs: 5_000,
        sendTimeoutMs: 5_000,
        listTimeoutMs: 5_000,
        livenessIntervalMs: 10_000,
        livenessTimeoutMs: 3_000,
        reconnectBaseMs: 250,
        reconnectMaxMs: 4_000,
        rejoinGraceMs: 10_000,
        ...config.client
      },
      state
    }
  })
