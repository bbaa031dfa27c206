/**
 * Size: about 425 lines, one concept — a session's lifecycle: start, stop,
 * kill, replace and resume share the client and generation builders and the
 * fiber-owner checks; each workload op that drives them lives in its own
 * module (handles.ts, and the op modules beside it).
 *
 * A simulated session's lifecycle: its client (the real `IntercomClient`,
 * dialling through the in-memory network), its session generations (the real
 * `IntercomSession` over a simulated agent as host), and starting, stopping,
 * killing and replacing them. Each client and generation runs under its own
 * fiber owner, and closing one is checked to leave none of its fibers. A
 * client and the generations over it have the world's fixed timings, or the
 * client's own draw (timings.ts): a restarted client is a new process — a
 * new client instance, but for one that resumes the instance of the client
 * that left by `unregister` (`startSession`'s `resumes`).
 * Each client also folds its presence events into a membership view that
 * `finish` checks (membershipViews.ts).
 */
import { Context, Effect, Exit, type Fiber, FiberSet, Layer, Schedule, Scope, Semaphore } from "effect"
import type { Dialer } from "../../client/Dialer.ts"
import { IntercomNotConnected } from "../../client/errors.ts"
import { IntercomClient, type IntercomClientService } from "../../client/IntercomClient.ts"
import type { ChildGrant } from "../../client/SupervisorGrants.ts"
import { Host, type HostIdentity } from "../../session/Host.ts"
import {
  IntercomSession,
  type IntercomSessionOptions,
  type IntercomSessionService,
  sessionRegistration
} from "../../session/IntercomSession.ts"
import type { LifecycleStatus } from "../../session/render.ts"
import { ownedBy } from "../FiberWatch.ts"
import type { SessionMeta } from "../ledger/types.ts"
import { Prng } from "../Prng.ts"
import { type AgentPolicy, defaultAgentPolicy, makeSimAgent, type SimAgent } from "../SimAgent.ts"
import type { SimLink } from "../SimLink.ts"
import { makeSimJournal, type SimJournal } from "./journal.ts"
import { foldMembership, MembershipFold } from "./membershipViews.ts"
import { makeHostReadiness } from "./refusals.ts"
import { pending, step, worldStep } from "./steps.ts"
import { drawClientTimings, formatClientTimings, timingStream } from "./timings.ts"
import type { SessionSpec } from "./types.ts"
import { withholdsRejoin, withoutRejoin } from "./withheldRejoin.ts"
import { SIM_ADDRESS, type World } from "./world.ts"

/** A running client of a session. */
export interface ClientState {
  readonly key: string
  readonly scope: Scope.Closeable
  readonly service: IntercomClientService
  /** What every generation over this client is built with: the world's, or with this client's drawn timeouts. */
  readonly sessionOptions: IntercomSessionOptions
  /** Its liveness timeout: how long the broker has to answer its settling round trip (the ledger's `AskClient`). */
  readonly livenessTimeoutMs: number
  /** What this client believes about who is on the intercom, folded from its presence events (membershipViews.ts). */
  readonly membership: MembershipFold
}

/** A running session generation over a client. */
export interface GenerationState {
  readonly key: string
  readonly scope: Scope.Closeable
  readonly service: IntercomSessionService
  readonly agent: SimAgent
  readonly ops: FiberSet.FiberSet<unknown, unknown>
}

/** One session of the world, running or not. */
export interface SessionState {
  readonly meta: SessionMeta
  readonly index: number
  readonly policy: AgentPolicy
  /** One lifecycle action at a time. */
  readonly lock: Semaphore.Semaphore
  clients: number
  generations: number
  client: ClientState | undefined
  generation: GenerationState | undefined
  link: SimLink | undefined
  status: LifecycleStatus
  /** Asks in progress (the tool calls a person could cancel). */
  readonly asks: Set<Fiber.Fiber<unknown, unknown>>
  /** A supervisor's owner token (`supervisor-v1`): fixed for the session's life, so its clients restore capabilities. */
  readonly ownerToken: string | undefined
  /**
   * A supervisor's grants for its children, kept as an engine keeps them with the children it launched:
   * a restarted supervisor's client restores them (`issuedGrants`), so its children can register again.
   */
  readonly issued: Array<ChildGrant>
  /** A delegated child's grant, once its supervisor authorized it (the child's client starts with it). */
  grant: ChildGrant | undefined
  /** Its host journal, kept across clients and generations (`SimulationConfig.hostJournal`). */
  readonly journal: SimJournal | undefined
  /** An ephemeral session that left by `unregister`: it does not start again until `finish`. */
  ended: boolean
  /**
   * Set by `startSlow` for the start it runs: the broker-side writes of that
   * client's first connection take `ms` each from its dial on.
   */
  slowStart: SlowStart | undefined
  /**
   * Its latest sends the broker acknowledged, oldest first (at most
   * RECENT_SENDS): what `SimSession.cancelRecent` and `supersedeRecent` pick
   * from. Kept across clients, as a cancel is keyed by the session.
   */
  readonly sent: Array<RecentSend>
}

/** A send of a session the broker acknowledged: its id and the target as the sender named it. */
export interface RecentSend {
  readonly to: string
  readonly messageId: string
}

/** How many acknowledged sends a session remembers for a cancel or supersede. */
export const RECENT_SENDS = 8

/**
 * A start whose first connection's broker-side writes are slow from its dial
 * on (`SimSession.startSlow`): the dialer slows the link and records it here;
 * the driver ends the delay later (a fiber forked by the dialer would be the
 * client's, and outlive it).
 */
export interface SlowStart {
  readonly ms: number
  /** The link it slowed, once dialled. */
  link: SimLink | undefined
  /** The slow start's time is over: a later first dial of this client is not slowed. */
  closed: boolean
}

const specOf = (entry: string | SessionSpec): SessionSpec => typeof entry === "string" ? { name: entry } : entry

/** The world's sessions (default A, B, C, D), stopped, each known to the ledger. */
export const makeSessionStates = (world: World): Effect.Effect<ReadonlyArray<SessionState>> =>
  Effect.gen(function*() {
    const { config } = world
    const scopes = config.scopes ?? [undefined]
    const groups = config.groups ?? [undefined]
    const specs = (config.sessions ?? ["A", "B", "C", "D"]).map(specOf)
    const idOf = (index: number, spec: SessionSpec) => `sim-${index + 1}-${spec.name.toLowerCase()}`
    const supervisorIdOf = (name: string): string => {
      const index = specs.findIndex((spec) => spec.name.toLowerCase() === name.toLowerCase())
      const spec = specs[index]
      if (spec === undefined) throw new RangeError(`No simulated session named ${name} to supervise a child`)
      return idOf(index, spec)
    }
    const supervisors = new Set(specs.flatMap((spec) => spec.supervisor === undefined ? [] : [supervisorIdOf(spec.supervisor)]))
    const states: Array<SessionState> = []
    for (const [index, spec] of specs.entries()) {
      const scopeId = spec.scopeId ?? scopes[index % Math.max(1, scopes.length)]
      const group = spec.group ?? groups[index % Math.max(1, groups.length)]
      const id = idOf(index, spec)
      const meta: SessionMeta = {
        id,
        name: spec.name,
        scopeId,
        ...(group === undefined ? {} : { group }),
        ...(spec.ephemeral === true ? { ephemeral: true } : {}),
        ...(spec.supervisor === undefined ? {} : { supervisor: supervisorIdOf(spec.supervisor) })
      }
      world.ledger.addSession(meta)
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
        asks: new Set(),
        // Deterministic: the world's seed and the session; a secret only in production.
        ownerToken: supervisors.has(id) ? `sim-owner-${world.seed}-${id}` : undefined,
        issued: [],
        grant: undefined,
        journal: config.hostJournal === undefined ? undefined : makeSimJournal(config.hostJournal),
        ended: false,
        slowStart: undefined,
        sent: []
      })
    }
    return states
  })

/** The session's current connection, unless it has closed. */
export const currentLink = (state: SessionState): SimLink | undefined => {
  const link = state.link
  return link === undefined || link.closed ? undefined : link
}

const identityOf = (state: SessionState): HostIdentity => ({
  name: state.meta.name,
  cwd: `/sim/${state.meta.name.toLowerCase()}`,
  model: "sim-model"
})

const dialerFor = (
  world: World,
  state: SessionState,
  clientKey: string,
  rejoin: boolean,
  slow: SlowStart | undefined
): Dialer => {
  // A slow start applies to the client's first connection only (its reconnections read as usual).
  return (address) =>
    world.network.dial(address).pipe(
      Effect.mapError((error) => new IntercomNotConnected({ reason: error.message })),
      Effect.tap((connection) =>
        Effect.sync(() => {
          const link = world.links.get(connection.id)
          if (link === undefined) return
          link.attach(state.meta.id, clientKey)
          if (state.client?.key === clientKey) state.link = link
          world.ledger.note(`${state.meta.name} connected: link #${link.id} to broker #${link.brokerEpoch}`)
          if (slow === undefined || slow.closed || slow.link !== undefined) return
          // Before its `register` is read: the broker's writes to it (the mailbox flush first) are slow.
          slow.link = link
          link.delay("broker", slow.ms)
          world.ledger.note(`${state.meta.name}'s broker-side writes take ${slow.ms} ms on link #${link.id}`)
        })
      ),
    // A client drawn to go without `rejoin-v1` writes its registrations as an older client (withheldRejoin.ts).
      Effect.map((connection) => rejoin ? connection : withoutRejoin(connection))
    )
}

const leakCheck = (world: World, owner: string, what: string) =>
  world.ledger.check(world.watch.live(owner) === 0, "fiber-leak", () =>
    `${world.watch.live(owner)} fiber(s) of ${owner} still running after ${what} closed`)

/** Starts a new session generation over `client`. */
export const buildGeneration = (world: World, state: SessionState, client: ClientState): Effect.Effect<void> =>
  Effect.gen(function*() {
    const key = `${client.key}/g${++state.generations}`
    const scope = yield* Scope.fork(client.scope)
    const agent = yield* makeSimAgent({
      sessionId: state.meta.id,
      identity: identityOf(state),
      policy: state.policy,
      prng: Prng.derive(world.seed, key),
      ledger: world.ledger,
      generation: key,
      ...(state.journal === undefined ? {} : {
        journal: {
          host: state.journal.forGeneration(
            Prng.derive(world.seed, `${key}/journal`),
            (text) => world.ledger.note(`${state.meta.name}: ${text}`),
            (id) => world.ledger.alias(id)
          ),
          delivered: state.journal.delivered
        }
      }),
      ...(world.config.hostJournal?.refusals === undefined ? {} : {
        readiness: makeHostReadiness(
          world.config.hostJournal.refusals,
          Prng.derive(world.seed, `${key}/host`),
          (text) => world.ledger.note(`${state.meta.name}: ${text}`),
          (id) => world.ledger.alias(id)
        )
      })
    }).pipe(Scope.provide(scope), ownedBy(key))
    const layer = IntercomSession.layer(client.sessionOptions).pipe(
      Layer.provide(Layer.merge(Layer.succeed(IntercomClient, client.service), Host.layer(agent.host)))
    )
    const context = yield* Layer.buildWithScope(layer, scope).pipe(ownedBy(key))
    const service = Context.get(context, IntercomSession)
    agent.attach(service)
    const ops = yield* FiberSet.make().pipe(Scope.provide(scope))
    state.generation = { key, scope, service, agent, ops }
    if (state.status !== "idle") yield* service.setStatus(state.status)
    world.ledger.note(`${state.meta.name} generation ${key} started`)
  })

/**
 * Closes the current session generation, checking that none of its fibers survive it. Its client
 * stops confirming what it reads first, as the host's session ends before its operations are
 * interrupted: mail read during the teardown stays the broker's (known issue 9); the next
 * generation resumes confirming.
 */
export const closeGeneration = (world: World, state: SessionState): Effect.Effect<void> =>
  Effect.gen(function*() {
    const generation = state.generation
    if (generation === undefined) return
    state.generation = undefined
    if (state.client !== undefined) yield* state.client.service.holdConfirmations
    yield* Scope.close(generation.scope, Exit.void)
    leakCheck(world, generation.key, "its generation")
  })

/**
 * Starts a stopped session: a new client (it connects in the background) and a new generation.
 * With `resumes`, the key of the session's last client, which left by `unregister`, the new client
 * is that client instance again — what a pi process that resumes the session file does (its
 * `instanceId` inherited from the journal, src/pi/instance.ts): the same key, so the same
 * `instanceId`, timings and `rejoin-v1` draw, and to the ledger the same client instance, in a new
 * process (`Ledger.clientResumed`: what the earlier process read, this one never saw). With `group`, the
 * new client registers the session in that group instead of its own (a group move, simulation/groupMove.ts).
 */
export const startSession = (
  world: World,
  state: SessionState,
  resumes?: string,
  group: string | undefined = state.meta.group
): Effect.Effect<void> =>
  Effect.gen(function*() {
    if (state.client !== undefined || world.state.finished) return
    const key = resumes ?? `${state.meta.name}/c${++state.clients}`
    // A new process of that instance: the ledger tells its reads from the earlier process's (a repeat filter
    // starts empty in it), before it dials.
    if (resumes !== undefined) world.ledger.clientResumed(resumes)
    const ranges = world.config.clientTimings
    const drawn = ranges === undefined
      ? undefined
      : drawClientTimings(ranges, timingStream(world.seed, state.meta.id, state.clients))
    if (drawn !== undefined && resumes === undefined) {
      world.ledger.note(`${state.meta.name} client timings (${key}): ${formatClientTimings(drawn)}`)
    }
    const rejoin = world.config.withholdRejoin !== true || !withholdsRejoin(world.seed, key)
    const slow = state.slowStart
    if (!rejoin) world.ledger.note(`${state.meta.name} client ${key} registers without rejoin-v1`)
    const scope = yield* Scope.fork(world.scope)
    const service = yield* IntercomClient.make({
      agentDir: "/sim",
      intercomDir: "/sim/intercom",
      socketPath: SIM_ADDRESS,
      sessionId: state.meta.id,
      scopeId: state.meta.scopeId,
      ...(group === undefined ? {} : { group }),
      ...(state.meta.ephemeral === true ? { ephemeral: true } : {}),
      ...(state.ownerToken === undefined ? {} : { ownerToken: state.ownerToken, issuedGrants: state.issued }),
      ...(state.grant === undefined
        ? {}
        : { supervisorGrant: { capability: state.grant.capability, supervisorSessionId: state.grant.supervisorSessionId } }),
      registration: sessionRegistration({
        sessionId: state.meta.id,
        identity: identityOf(state),
        pid: 1000 + state.index,
        startedAt: world.now(),
        status: state.status
      }),
      launch: false,
      // Its session runtime consumes it, as pi's and the CLI's do: confirm what the runtime handled.
      confirmWhenHandled: true,
      dial: dialerFor(world, state, key, rejoin, slow),
      // Deterministic (a trace replays frame for frame): one per client, as a real client's random one.
      instanceId: key,
      ...(drawn?.client ?? world.timings)
    }).pipe(
      // The only option it checks is the instance id, a short key here: a failure is the harness's own defect.
      Effect.orDie,
      Scope.provide(scope),
      ownedBy(key)
    )
    const sessionOptions = drawn === undefined ? world.sessionOptions : { ...world.sessionOptions, ...drawn.session }
    const membership = new MembershipFold()
    const livenessTimeoutMs = (drawn?.client ?? world.timings).livenessTimeoutMs
    const client: ClientState = { key, scope, service, sessionOptions, livenessTimeoutMs, membership }
    state.client = client
    world.ledger.note(`${state.meta.name} client ${key} ${resumes === undefined ? "started" : "started again (the same instance)"}`)
    // The first connection is made by a fiber of the client (later ones by its own reconnect loop).
    yield* Effect.forkIn(
      service.connect.pipe(Effect.retry({ schedule: Schedule.spaced("1 second") }), Effect.ignore),
      scope
    ).pipe(ownedBy(key))
    // Subscribed now, before that fiber first runs, so no presence event escapes the fold (membershipViews.ts).
    yield* Effect.forkIn(foldMembership(service, membership), scope, { startImmediately: true }).pipe(ownedBy(key))
    yield* buildGeneration(world, state, client)
  })

/**
 * Stops a session: orderly (`stop`), or as a dying process (`kill`: its connection drops first).
 * With `resumed`, its client instance comes back (`startSession`'s `resumes`): the ledger is not
 * told that client closed for good.
 */
export const stopSession = (world: World, state: SessionState, how: "stop" | "kill", resumed = false): Effect.Effect<void> =>
  Effect.gen(function*() {
    const client = state.client
    if (client === undefined) return
    if (how === "kill" && state.link !== undefined) yield* state.link.sever("client")
    yield* closeGeneration(world, state)
    state.client = undefined
    state.link = undefined
    yield* Scope.close(client.scope, Exit.void)
    if (!resumed) world.ledger.clientClosed(client.key)
    leakCheck(world, client.key, "its client")
  })

/** Runs a lifecycle action of the session as a world step, under its lock; idle checks wait meanwhile. */
export const lifecycle = (world: World, state: SessionState, label: string, action: Effect.Effect<void>): Effect.Effect<void> =>
  worldStep(
    world,
    `${state.meta.name} ${label}`,
    Effect.acquireUseRelease(
      Effect.sync(() => world.state.lifecycleBusy++),
      () => state.lock.withPermits(1)(action),
      () => Effect.sync(() => world.state.lifecycleBusy--)
    )
  )

/**
 * The supervisor authorizes its child by name (`authorizeChild`, C-SUP-7):
 * the grant the child's clients start with. Waits for the supervisor's
 * connection; a world whose supervisor cannot authorize is a broken world
 * (a defect), not a finding.
 */
export const authorizeChild = (world: World, supervisor: SessionState, child: SessionState): Effect.Effect<void> =>
  Effect.gen(function*() {
    const client = supervisor.client
    if (client === undefined) {
      return yield* Effect.die(new Error(`${supervisor.meta.name} is not running: it cannot authorize ${child.meta.name}`))
    }
    const authorize = client.service.authorizeChild(child.meta.name).pipe(
      Effect.retry({ times: 10, schedule: Schedule.spaced("1 second") })
    )
    const exit = yield* pending(world, yield* step(world, authorize, world.steps, client.key)).result("5 minutes")
    if (Exit.isFailure(exit)) {
      return yield* Effect.die(new Error(`${supervisor.meta.name} could not authorize ${child.meta.name}: ${exit.cause}`))
    }
    child.grant = exit.value
    supervisor.issued.push(exit.value)
    world.ledger.note(`${supervisor.meta.name} authorized its child ${child.meta.name} (${supervisor.meta.group ?? "default"} → ${child.meta.group ?? "default"})`)
  })
