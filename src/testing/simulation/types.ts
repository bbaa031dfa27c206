/**
 * Size: about 525 lines, nearly all JSDoc'd fields of those few types; one
 * vocabulary, kept in one place so Simulation.ts re-exports a single module.
 *
 * The simulation's public vocabulary: how a world is configured
 * (`SimulationConfig`, `SessionSpec`), what a scenario drives (`SimSession`,
 * `SimulationService`, `Pending`) and what a run reports (`SimReport`).
 * Simulation.ts re-exports all of it.
 */
import type { Duration, Effect, Exit, Fiber } from "effect"
import type { BrokerService } from "../../broker/Broker.ts"
import type { BrokerCoreOptions } from "../../broker/options.ts"
import type { IntercomClientOptions } from "../../client/options.ts"
import type { Inbound } from "../../session/Host.ts"
import type {
  AskFailure,
  IntercomSessionOptions,
  IntercomToolParams,
  ListError,
  Replied,
  ReplyFailure,
  SendDeclined,
  SendFailure,
  Sent,
  SessionList,
  ToolResult
} from "../../session/IntercomSession.ts"
import type { LifecycleStatus } from "../../session/render.ts"
import type { Ledger } from "../Ledger.ts"
import type { Delivery } from "../../client/events.ts"
import type { AskTally, GroupTally, MessageTally, Side, Violation, ViolationKind } from "../ledger/types.ts"
import type { AgentPolicy } from "../SimAgent.ts"
import type { BrokerInputFault, BrokerOutputFault } from "../SimLink.ts"
import type { OwnConnection } from "./heldReturn.ts"
import type { SimHostile } from "./hostile.ts"
import type { SimHostJournal } from "./journal.ts"
import type { SimClientTimingRanges } from "./timings.ts"

/** One session of the world: its name, and optionally its pi scope and agent behaviour. */
export interface SessionSpec {
  readonly name: string
  /** pi-intercom `scopeId` (an isolation boundary). */
  readonly scopeId?: string | undefined
  readonly agent?: Partial<AgentPolicy> | undefined
  /** Its home group (`groups-v1`); blank or absent is `default`. */
  readonly group?: string | undefined
  /**
   * Makes this session a delegated child (`supervisor-v1`) of the session
   * named here, which becomes a supervisor (it registers with an owner
   * token). Once the supervisor is connected it authorizes this child by
   * name, and the child starts with the grant (see docs/testing.md, "Groups
   * and supervisors").
   */
  readonly supervisor?: string | undefined
  /**
   * A short-lived session (`ephemeral-v1`, `IntercomClientOptions.ephemeral`),
   * as the CLI's one-shot commands register: once it leaves by `unregister`
   * (`SimSession.unregister`) it never starts again during the script (a
   * `start` is skipped); `finish` starts it again, a fresh registration under
   * the same id, so that the final checks see the whole world.
   */
  readonly ephemeral?: boolean | undefined
}

/**
 * Client timings, the real client's options of the same names; the
 * simulation's defaults are shorter than production's so runs settle
 * quickly (reconnect 250 ms–4 s, liveness every 10 s with a 3 s timeout,
 * 5 s connect, send and list timeouts; the rejoin grace is the client's 10 s).
 */
export interface SimClientTimings extends
  Pick<
    IntercomClientOptions,
    | "connectTimeoutMs"
    | "sendTimeoutMs"
    | "listTimeoutMs"
    | "livenessIntervalMs"
    | "livenessTimeoutMs"
    | "reconnectBaseMs"
    | "reconnectMaxMs"
    | "rejoinGraceMs"
  >
{}

/**
 * How the simulated broker keeps its mail: `durable` (the product's default,
 * `durability: "sqlite"`) gives every broker incarnation a memory `MailStore`
 * over one state the world keeps for its whole life — the simulated disk,
 * which outlives a simulated crash; `memory` keeps everything in the broker
 * and loses it with each crash.
 */
export type SimDurability = "durable" | "memory"

/** How the simulated broker takes its connections over (`SimulationConfig.brokerConnections`). */
export type SimBrokerConnections = "adopted" | "accepted"

/** Everything about a simulated world; only `seed` is required. */
export interface SimulationConfig {
  /** Seeds every random choice: the workload, the agents, and Effect's `Random` (reconnect jitter). */
  readonly seed: number
  /** The sessions of the world, started at once. Default A, B, C, D. */
  readonly sessions?: ReadonlyArray<string | SessionSpec>
  /** `scopeId`s given round-robin to sessions that do not name one. Default: one unscoped space. */
  readonly scopes?: ReadonlyArray<string | undefined>
  /**
   * Groups (`groups-v1`) given round-robin to sessions that name none. Default:
   * none (every session in `default`).
   */
  readonly groups?: ReadonlyArray<string | undefined>
  /**
   * Options of the real broker core (idle exit is off in the simulation).
   * `store` is set by `durability`; one given here is used by every broker
   * incarnation as is (for a test's deliberately broken store).
   */
  readonly broker?: BrokerCoreOptions
  /**
   * `durable` (default): the broker's mail, replay records and ask edges are
   * committed to a simulated disk that a crash does not erase (a crash marks
   * it down first, so what the dying broker had not committed is lost, as
   * with kill -9); the ledger then allows no acknowledged message lost to a
   * crash. `memory`: the broker's state dies with it.
   */
  readonly durability?: SimDurability
  /**
   * Durable mode: how long each commit to the simulated disk takes (an
   * fsync), in ms of simulated time. A crash can land while one is under
   * way: what it carried never lands, and the output held behind it (acks,
   * deliveries) is never written. Default 5.
   */
  readonly commitMs?: number
  /** Options of the real session runtime; default ask timeout 20 s, connect timeout 5 s. */
  readonly session?: IntercomSessionOptions
  /** Client timings (see `SimClientTimings`). */
  readonly client?: SimClientTimings
  /**
   * Draw each client's timings, and its session runtime's connect and ask
   * timeouts, from these ranges (simulation/timings.ts, `--client-timings`),
   * anew for every client a session starts, from a PRNG stream of its own,
   * instead of the one fixed set (`client`, `session`). Default none: every
   * client uses the fixed set.
   */
  readonly clientTimings?: SimClientTimingRanges | undefined
  /**
   * Some clients register without `rejoin-v1` (`--withhold-rejoin`): each
   * client a session starts, by a draw of its own (withheldRejoin.ts, one in
   * two), writes its `register` frames without the feature and its
   * `instanceId`, as an older client does; the ledger tolerates
   * `takeover-late-write` only for a takeover such a registration made or
   * suffered. Default false: every client has it.
   */
  readonly withholdRejoin?: boolean | undefined
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
  /**
   * A deliberately broken build on the other side: makes, per world, a
   * rewrite of what the broker reads (see BrokenBuilds.ts). For testing the
   * invariants only.
   */
  readonly brokerInputFault?: () => BrokerInputFault
  /** Frames each direction of an in-memory link buffers. Default 64. */
  readonly linkCapacity?: number
  /**
   * How the broker takes its connections over. `adopted` (default): as the
   * Unix-socket broker does (`BrokerService.adopt`: no fiber or Scope per
   * connection, frames pushed from the link as a socket's `data` events,
   * ReadPump.ts). `accepted`: the fiber path (`BrokerService.accept`: a
   * fiber and Scope per connection, and a fiber reading for it), which the
   * in-memory broker tests use; for comparing the two.
   */
  readonly brokerConnections?: SimBrokerConnections
  /** How long `finish` lets the healed world settle before the final checks. Default 60 s. */
  readonly settleMs?: number
  /**
   * Violations reported but not failing the run: known issues, listed in
   * docs/testing.md with the seed that shows each. Default none.
   */
  readonly tolerate?: ReadonlyArray<ViolationKind>
  /**
   * Hostile sessions (simulation/hostile.ts): raw connections in the first
   * session's scope that attack the others when a script (or a workload's
   * `Hostile` op) tells them to. Default 0; with any, the ledger also makes
   * the checks that need them in mind (`ask-hijacked`).
   */
  readonly hostile?: number
  /**
   * Give every session a host journal (simulation/journal.ts, `--host-journal`):
   * checkpoints that wait simulated time, and restore across generations.
   * Default none: hosts without a journal, as before.
   */
  readonly hostJournal?: SimHostJournal | undefined
}

/**
 * How often a run reached the rarer branches of the broker's connection path
 * (docs/testing.md, "Pressure"), summed over every broker incarnation.
 */
export interface PathTally {
  /** Connections that waited for admission (`BrokerStats.admissionWaits`: `maxUnregistered` were unregistered). */
  readonly admissionWaits: number
  /** Of those, the ones whose connection closed while it waited: dropped unregistered (`BrokerStats.waitsWithdrawn`). */
  readonly waitsWithdrawn: number
  /** Readers held back behind parked output that stopped reading past `heldLimit` (`BrokerStats.readPauses`). */
  readonly readPauses: number
  /** Batches the read pump took and held because its receiver had paused (ReadPump.ts; any pause). */
  readonly pumpHeld: number
  /** Registrations whose mailbox flush did not fit the outbox and was parked on the session's own reader (`BrokerStats.ownParks`). */
  readonly ownParks: number
  /** Messages parked behind a sender's older mail in a recipient's own parked list (`BrokerStats.parkedBehindOwn`). */
  readonly parkedBehindOwn: number
  /** A sender's drainer waited behind its older mail in a recipient's own parked list (`BrokerStats.waitsBehindOwn`). */
  readonly waitsBehindOwn: number
  /** Items for a reader itself offered ahead of the head of its parked list, which waited: the drain path own items take (`BrokerStats.offeredAhead`, ParkedDrain.offerOwnAhead). */
  readonly offeredAhead: number
  /** `ask-expiry-v1` settling list answers held behind a reply to their asker still parked elsewhere (`BrokerStats.answersBehindReplies`). */
  readonly answersBehindReplies: number
  /** Held settling answers released after their last parked reply was offered (`BrokerStats.answersReleasedOffered`). */
  readonly answersReleasedOffered: number
  /** Held settling answers released when a close forced the parked lists (`BrokerStats.answersReleasedForced`). */
  readonly answersReleasedForced: number
  /** Held settling answers dropped with their asker's connection (`BrokerStats.answersDropped`). */
  readonly answersDropped: number
  /** Held settling answers released when the takeover custody hold that kept their reply ended (`BrokerStats.answersReleasedCustody`). */
  readonly answersReleasedCustody: number
  /** Departures withheld from a recipient behind the sender's mail in its own parked list (`BrokerStats.departuresHeld`). */
  readonly departuresHeld: number
  /** Returns while a departure was held: a session back while its old connection's output was parked (`BrokerStats.returnsHeld`, `--held-return`). */
  readonly returnsHeld: number
  /** Takeovers of a `received-v1` session with mail unconfirmed in the old connection's custody: a custody hold taken (`BrokerStats.custodyHoldsTaken`). */
  readonly custodyHoldsTaken: number
  /** Custody holds carried over by a further takeover before the old close (`BrokerStats.custodyHoldsCarried`). */
  readonly custodyHoldsCarried: number
  /** Custody holds adopted by a new registration of the session (`BrokerStats.custodyHoldsAdopted`). */
  readonly custodyHoldsAdopted: number
  /** Messages kept on a custody hold until it ended (`BrokerStats.custodyHeldMessages`). */
  readonly custodyHeldMessages: number
  /** Drainer offers that waited for a custody hold to end (`BrokerStats.custodyHeldWaits`). */
  readonly custodyHeldWaits: number
  /** Departures withheld behind a custody hold (`BrokerStats.custodyHeldDepartures`). */
  readonly custodyHeldDepartures: number
  /** Returns of held senders withheld with their departure behind a custody hold (`BrokerStats.custodyHeldReturns`). */
  readonly custodyHeldReturns: number
  /** Custody holds on which a settling answer waited for a reply an old connection the hold waits for may give back (`BrokerStats.custodyAwaitedReplies`, `--settle-hold`). */
  readonly custodyAwaitedReplies: number
  /** Mailbox copies cancelled after a client instance read them, kept for its return (`BrokerStats.withdrawnCopiesKept`). */
  readonly withdrawnCopiesKept: number
  /** Of those, given to a reader's return with their cancel (`BrokerStats.withdrawnCopiesGiven`). */
  readonly withdrawnCopiesGiven: number
  /** Controls given back alone with their session away, kept for the instance given their message (`BrokerStats.controlsKept`). */
  readonly controlsKept: number
  /** Of those, given at that instance's return (`BrokerStats.controlsKeptGiven`). */
  readonly controlsKeptGiven: number
}

/** What a run found. `ok` is false when any invariant was violated. */
export interface SimReport {
  /** The run's seed. */
  readonly seed: number
  /** How the broker kept its mail in this run. */
  readonly durability: SimDurability
  /** No violation, apart from tolerated ones. */
  readonly ok: boolean
  /** Every violation, tolerated ones included. */
  readonly violations: ReadonlyArray<Violation>
  /** How many of `violations` were of a tolerated kind. */
  readonly tolerated: number
  /** What became of every message. */
  readonly messages: MessageTally
  /** How every ask ended. */
  readonly asks: AskTally
  /** Traffic between groups of one scope (all zero without groups). */
  readonly groups: GroupTally
  /** Invariant checks made (continuous and final). */
  readonly checks: number
  /** Frames that crossed the in-memory network. */
  readonly frames: number
  /** Trace lines (events). */
  readonly events: number
  /** Simulated time at the end of the run. */
  readonly simulatedMs: number
  /** Fibers started by the world's owners (brokers, clients, generations). */
  readonly fibersStarted: number
  /** How often the run reached the broker's rarer connection-path branches (`PathTally`). */
  readonly paths: PathTally
  /** Each op a workload flag inserted (`--answer-takeover`), by name: how often it reached its case and was skipped. */
  readonly insertedOps: Readonly<Record<string, InsertedOpTally>>
  /** The run, line by line, with stable names for ids: the same for the same seed. */
  readonly trace: ReadonlyArray<string>
}

/**
 * How often one inserted op reached its case in a run, and how often it was skipped (the sessions it needs
 * not there, or its case not reached; `sim.insertedOp`).
 */
export interface InsertedOpTally {
  readonly reached: number
  readonly skipped: number
}

/** An action still running in the simulated world. */
export interface Pending<A, E> {
  /** The action's fiber (poll it while advancing time yourself when faults must land on time). */
  readonly fiber: Fiber.Fiber<A, E>
  /**
   * Its outcome. Moves simulated time forward (in 100 ms steps) until it is
   * done; after `within` (default 15 minutes) it is interrupted instead.
   */
  readonly result: (within?: Duration.Input) => Effect.Effect<Exit.Exit<A, E>>
}

/**
 * A handle on one simulated session, from `sim.session(name)`: its actions
 * (each a step of the world), its lifecycle and its faults. Actions on a
 * stopped session are skipped and return `undefined`.
 */
export interface SimSession {
  /** Its name. */
  readonly name: string
  /** Its session id (the same across restarts). */
  readonly id: string
  /** Its pi `scopeId`, if any. */
  readonly scopeId: string | undefined
  /** Its group (`default` unless its spec or the config's `groups` name one). */
  readonly group: string
  /** Whether its client and a session generation are running. */
  readonly running: Effect.Effect<boolean>
  /**
   * Sends via the session's `send` (C-TOOL-4), with a delivery mode
   * (`delivery-v1`) if given; skipped (undefined) while the session is stopped.
   */
  readonly send: (
    to: string,
    text: string,
    options?: {
      readonly delivery?: "steer" | "queue" | "passive"
      readonly queueMode?: "stack" | "replace"
      readonly threadId?: string
    }
  ) => Effect.Effect<Pending<Sent | SendDeclined, SendFailure> | undefined>
  /** Asks via the session's `ask` and waits for the answer (or `timeout`, default the session's ask timeout). */
  readonly ask: (
    to: string,
    text: string,
    options?: { readonly timeout?: Duration.Input }
  ) => Effect.Effect<Pending<Replied | Sent, AskFailure> | undefined>
  /**
   * A delegated child's `supervisorSend` (the client's: the session runtime
   * has no such action) to its supervisor; with `ask`, a message that expects
   * a reply within `timeout` (default 20 s), which the supervisor's agent
   * answers like any ask. Skipped (undefined) while the session is stopped;
   * refused by the broker (`E_SUPERVISOR_UNAUTHORIZED`) for a session that is
   * no child.
   */
  readonly supervisorSend: (
    text: string,
    options?: { readonly ask?: boolean; readonly timeout?: Duration.Input }
  ) => Effect.Effect<Pending<Delivery, unknown> | undefined>
  /**
   * Cancels (`cancel_message`, P71) this session's `back`-th latest
   * acknowledged send (to `to` when given, else to anyone; 0 the latest,
   * past the oldest remembered the oldest) through its client; succeeds with
   * what the broker answered. Undefined when the session is stopped or
   * remembers no such send.
   */
  readonly cancelRecent: (back: number, to?: string) => Effect.Effect<Pending<string, unknown> | undefined>
  /**
   * Sends a message `text` that supersedes (P72) this session's `back`-th
   * latest acknowledged send, picked as `cancelRecent` picks it, to that
   * send's target.
   */
  readonly supersedeRecent: (back: number, text: string, to?: string) => Effect.Effect<Pending<string, unknown> | undefined>
  /** Cancels (interrupts) this session's asks in progress, as a person cancelling the tool call. */
  readonly cancelAsks: Effect.Effect<void>
  /** `reply`: to the asker named `to`, or to the single pending ask. */
  readonly reply: (text: string, options?: { readonly to?: string; readonly replyTo?: string }) => Effect.Effect<
    Pending<Sent, ReplyFailure> | undefined
  >
  /**
   * Answers the question `questionId` of the session whose id is `to` through the
   * session's client (a `send` with `replyTo`), as an agent answers from
   * what it kept across a restart: the question need not have reached this
   * client instance. With a delivery mode (`delivery-v1`) if given: a
   * `replace` one is staged by the broker until its window closes.
   * Succeeds with the broker's delivery; undefined while the session is
   * stopped.
   */
  readonly answer: (
    to: string,
    questionId: string,
    text: string,
    options?: {
      readonly delivery?: "steer" | "queue" | "passive"
      readonly queueMode?: "stack" | "replace"
      readonly threadId?: string
    }
  ) => Effect.Effect<Pending<string, unknown> | undefined>
  /** Lists the sessions it can see (its scope). */
  readonly list: Effect.Effect<Pending<SessionList, ListError> | undefined>
  /** A topic action through the session's tool (`publish`, `subscribe`, `unsubscribe`, `topics`). */
  readonly topic: (params: IntercomToolParams) => Effect.Effect<Pending<ToolResult, never> | undefined>
  /** Sets its presence (`thinking`, `idle`, …); kept across restarts. */
  readonly setStatus: (status: LifecycleStatus) => Effect.Effect<void>
  /** Busy for `duration` of simulated time (which passes), then idle again. */
  readonly busyFor: (duration: Duration.Input) => Effect.Effect<void>
  /** Everything the current generation's agent was handed. */
  readonly inbox: Effect.Effect<ReadonlyArray<Inbound>>
  /** Starts a stopped session: a new client and a new generation (the same session id). */
  readonly start: Effect.Effect<void>
  /**
   * `start`, with the broker-side writes of the new client's first
   * connection taking `delay` each from its dial on, for `duration`: a
   * recipient that reads slowly from the moment it registers, so a mailbox
   * flush larger than its outbox stays parked on its reader meanwhile.
   */
  readonly startSlow: (delay: Duration.Input, duration: Duration.Input) => Effect.Effect<void>
  /** Orderly stop: the generation closes, the client unregisters and disconnects. */
  readonly stop: Effect.Effect<void>
  /**
   * Leaves by `unregister` (the orderly stop, named as the workload's
   * `Unregister` op names it): a session comes back with a later `start`; an
   * ephemeral one (`SessionSpec.ephemeral`) has ended and does not (its
   * later `start`s are skipped until `finish`).
   */
  readonly unregister: Effect.Effect<void>
  /**
   * Leaves by `unregister` (the orderly stop), then a new process of the
   * session registers as the same client instance — as a pi process that
   * resumes the session file inherits its `instanceId` (src/pi/instance.ts).
   * Skipped (noted) for a stopped or short-lived session.
   */
  readonly unregisterAndResume: Effect.Effect<void>
  /**
   * Moves the session to another group (`groups-v1`): its process dies (as `kill`) and a new process of
   * the same client instance (the same `instanceId`, as `unregisterAndResume`) registers it in `group`, or
   * back in its own group when `group` is undefined. Its `group` above stays its own; the ledger judges it in
   * the new one, and as sharing the one it left (`Ledger.sessionMoved`). Skipped (noted) for a stopped or
   * short-lived session. What the broker owed the instance in the group it left must reach it when it comes
   * back there (simulation/groupMove.ts).
   */
  readonly moveGroup: (group: string | undefined) => Effect.Effect<void>
  /** The process dies: its connection drops on its side, then everything closes. */
  readonly kill: Effect.Effect<void>
  /** A new session generation over the same client (what a host reload does). */
  readonly replaceGeneration: Effect.Effect<void>
  /** Drops the current connection on one side. */
  readonly drop: (side: Side) => Effect.Effect<void>
  /** Stops one side of the current connection reading, for `duration` (until `resume` without one). */
  readonly stall: (side: Side, duration?: Duration.Input) => Effect.Effect<void>
  /** That side of the current connection reads again. */
  readonly resume: (side: Side) => Effect.Effect<void>
  /** Each write from one side of the current connection takes `delay` first, for `duration` (or until healed). */
  readonly delayWrites: (side: Side, delay: Duration.Input, duration?: Duration.Input) => Effect.Effect<void>
}

/** The world a scenario drives: its sessions, its broker, simulated time, and the end of the run. */
export interface SimulationService {
  /** The world's seed. */
  readonly seed: number
  /** The world's ledger: its trace and the violations so far. */
  readonly ledger: Ledger
  /** Every session, in the order of `SimulationConfig.sessions`. */
  readonly sessions: ReadonlyArray<SimSession>
  /** The hostile sessions (`SimulationConfig.hostile`), X1, X2, … */
  readonly hostiles: ReadonlyArray<SimHostile>
  /** The session named `name` (case-insensitive). */
  readonly session: (name: string) => SimSession
  /** The broker process. */
  readonly broker: {
    /** Whether a broker incarnation is up. */
    readonly isUp: Effect.Effect<boolean>
    /**
     * The broker process dies: connections drop, its in-memory state is gone
     * (in a durable world its simulated disk keeps what it had committed).
     */
    readonly crash: Effect.Effect<void>
    /** Starts a fresh broker if none is up. */
    readonly start: Effect.Effect<void>
    /** Crash, then start a fresh broker on the same address. */
    readonly restart: Effect.Effect<void>
    /** Crash now and start again after `downFor` of simulated time. */
    readonly crashFor: (downFor: Duration.Input) => Effect.Effect<void>
    /** The broker core that is up (its stats, its session count), if any. */
    readonly core: Effect.Effect<BrokerService | undefined>
  }
  /** Lets simulated time pass. */
  readonly advance: (duration: Duration.Input) => Effect.Effect<void>
  /** Moves the wall clock by `millis` (negative: backwards); overdue timers fire. */
  readonly jumpClock: (millis: number) => Effect.Effect<void>
  /** Adds a line to the trace. */
  readonly note: (text: string) => Effect.Effect<void>
  /**
   * Notes `text` and counts one run of the op a workload flag inserted
   * (`op`, e.g. "answer takeover") as having reached its case or been
   * skipped (or having fallen short of it): the run's `SimReport.insertedOps`, which a soak sums and prints.
   */
  readonly insertedOp: (op: string, outcome: "reached" | "skipped", text: string) => Effect.Effect<void>
  /**
   * A registration storm (simulation/pressure.ts): `connections` connections
   * arrive at once and do not register; each probes `health` and closes after
   * `holdMs`, unless the broker closes it first (its registration timeout).
   */
  readonly storm: (connections: number, holdMs: number) => Effect.Effect<void>
  /**
   * A connection of `session`'s own, which its stopped client is not
   * (simulation/heldReturn.ts, `--held-return`): registered as the session
   * with a bare `register`, it writes what the script tells it, in one write
   * each, and reads (mail for the session handed to its host) until the
   * broker closes it or the script does. Undefined when it could not register.
   */
  readonly ownConnection: (session: SimSession) => Effect.Effect<OwnConnection | undefined>
  /**
   * Ends the run: heals every fault, restarts what is down, lets the world
   * settle, makes the final checks, closes the world and checks no fiber is
   * left. Call it once, last.
   */
  readonly finish: Effect.Effect<SimReport>
}
