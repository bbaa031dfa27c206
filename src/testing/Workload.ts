/**
 * Random workloads: a list of operations generated from a seed and run
 * against a `Simulation` (a failing one is shrunk by Shrink.ts).
 *
 * A workload is plain data, so a failing run prints as a short script and
 * replays exactly: `generateWorkload(seed)` gives the same operations for the
 * same seed, and `runWorkload(seed, ops)` the same trace.
 *
 * Size: one concept, about 980 lines — generating and running workloads; the
 * op kinds and their weights are listed together so a seed's draw order stays
 * in one place, and each op's runner sits beside them, so a workload flag
 * (`--groups`, `--unregister`, …) adds its draw and its run in one module
 * (the larger ops' draws and runners have modules of their own under
 * simulation/: pressure.ts, delivery.ts, parkedFlush.ts, controls.ts,
 * instanceControl.ts, readerReturn.ts, …).
 */
import { Effect, Layer, Schema } from "effect"
import type { Side } from "./Ledger.ts"
import { Prng } from "./Prng.ts"
import {
  DELIVERY_WEIGHT,
  DeliverySendFields,
  drawDeliverySend,
  formatDeliverySend,
  runDeliverySend
} from "./simulation/delivery.ts"
import { ControlFields, formatControl, runControl, withControls } from "./simulation/controls.ts"
import { CustodyHoldFields, drawCustodyHold, formatCustodyHold, runCustodyHold } from "./simulation/custodyHold.ts"
import { drawHeldReturn, formatHeldReturn, HeldReturnFields, runHeldReturn } from "./simulation/heldReturn.ts"
import { drawSettleCustody, formatSettleCustody, runSettleCustody, SettleCustodyFields } from "./simulation/settleCustody.ts"
import { drawInstanceControl, formatInstanceControl, InstanceControlFields, runInstanceControl } from "./simulation/instanceControl.ts"
import { drawSettleHold, formatSettleHold, runSettleHold, SettleHoldFields } from "./simulation/settleHold.ts"
import { drawReaderReturn, formatReaderReturn, ReaderReturnFields, runReaderReturn } from "./simulation/readerReturn.ts"
import { drawStaleAsk, formatStaleAsk, runStaleAsk, StaleAskFields } from "./simulation/staleAsk.ts"
import { AnswerMailboxFields, drawAnswerMailbox, formatAnswerMailbox, runAnswerMailbox } from "./simulation/answerMailbox.ts"
import { AnswerTakeoverFields, drawAnswerTakeover, formatAnswerTakeover, runAnswerTakeover } from "./simulation/answerTakeover.ts"
import { HOSTILE_ATTACKS, HostileAttack } from "./simulation/hostile.ts"
import {
  drawParkedFlush,
  formatParkedFlush,
  PARKED_FLUSH_OUTBOX_CHARS,
  ParkedFlushFields,
  runParkedFlush
} from "./simulation/parkedFlush.ts"
import {
  drawPressure,
  floodText,
  FloodFields,
  formatFlood,
  formatStorm,
  pressureBroker,
  StormFields
} from "./simulation/pressure.ts"
import { type SessionSpec, Simulation, type SimulationConfig, type SimReport, type SimSession } from "./Simulation.ts"

const Int = Schema.Int
const SideSchema = Schema.Literals(["client", "broker"])
const op = <Tag extends string, Fields extends Schema.Struct.Fields>(tag: Tag, fields: Fields) =>
  Schema.Struct({ _tag: Schema.tag(tag), after: Int, ...fields })

/**
 * One operation of a workload. Sessions are named by index into the world's
 * sessions; `after` is the simulated time (ms) before it. A Schema, so a
 * printed workload can be read back (`npm run sim -- --replay`).
 */
export const OpSchema = Schema.Union([
  op("Send", { from: Int, to: Int, byId: Schema.optionalKey(Schema.Boolean) }),
  op("Ask", { from: Int, to: Int, timeoutMs: Int, byId: Schema.optionalKey(Schema.Boolean) }),
  op("SupervisorSend", { from: Int, ask: Schema.Boolean, timeoutMs: Int }),
  op("CancelAsk", { session: Int }),
  op("Reply", { from: Int }),
  op("List", { from: Int }),
  op("Status", { session: Int, busy: Schema.Boolean }),
  op("Stop", { session: Int }),
  op("Start", { session: Int }),
  op("Kill", { session: Int }),
  op("Unregister", { session: Int, lingerOps: Int }),
  op("ReplaceGeneration", { session: Int }),
  op("CrashBroker", { downMs: Int }),
  op("Drop", { session: Int, side: SideSchema }),
  op("Stall", { session: Int, side: SideSchema, ms: Int }),
  op("DelayWrites", { session: Int, side: SideSchema, delayMs: Int, forMs: Int }),
  op("ClockJump", { ms: Int }),
  op("Hostile", { attacker: Int, attack: HostileAttack }),
  op("DeliverySend", DeliverySendFields),
  op("Publish", { from: Int, topic: Int, event: Schema.Literals(["update", "blocker", "decision", "release"]) }),
  op("Subscribe", { from: Int, topic: Int, awaitRelease: Schema.Boolean }),
  op("Storm", StormFields),
  op("Flood", FloodFields),
  op("ParkedFlush", ParkedFlushFields),
  op("HeldReturn", HeldReturnFields),
  op("CustodyHold", CustodyHoldFields),
  op("SettleHold", SettleHoldFields),
  op("SettleCustody", SettleCustodyFields),
  op("InstanceControl", InstanceControlFields),
  op("ReaderReturn", ReaderReturnFields),
  op("StaleAsk", StaleAskFields),
  op("AnswerTakeover", AnswerTakeoverFields),
  op("AnswerMailbox", AnswerMailboxFields),
  op("Control", ControlFields)
])
/** One operation of a workload (see `OpSchema`). */
export type Op = typeof OpSchema.Type

/** The kinds of operation. */
export type OpKind = Op["_tag"]

/** Relative weights of each kind of operation; 0 never generates it. */
export type OpWeights = Readonly<Record<OpKind, number>>

/** Traffic only: sends, asks, cancels, replies, lists, presence; no faults (`npm run sim -- --traffic`). */
export const trafficWeights: OpWeights = {
  Send: 40,
  Ask: 20,
  SupervisorSend: 0,
  CancelAsk: 3,
  Reply: 4,
  List: 6,
  Status: 6,
  Stop: 0,
  Start: 0,
  Kill: 0,
  // Only with `WorkloadOptions.unregister` (UNREGISTER_WEIGHT); the orderly `Stop` unregisters too.
  Unregister: 0,
  ReplaceGeneration: 0,
  CrashBroker: 0,
  Drop: 0,
  Stall: 0,
  DelayWrites: 0,
  ClockJump: 0,
  Hostile: 0,
  DeliverySend: 0,
  Publish: 0,
  Subscribe: 0,
  // Never drawn by weight: `pressure` inserts them from a stream of their own (simulation/pressure.ts).
  Storm: 0,
  Flood: 0,
  // Never drawn by weight: `parkedFlush` inserts it from a stream of its own (simulation/parkedFlush.ts).
  ParkedFlush: 0,
  // Never drawn by weight: `heldReturn` inserts it from a stream of its own (simulation/heldReturn.ts).
  HeldReturn: 0,
  // Never drawn by weight: `custodyHold` inserts it from a stream of its own (simulation/custodyHold.ts).
  CustodyHold: 0,
  // Never drawn by weight: `settleHold` inserts it from a stream of its own (simulation/settleHold.ts).
  SettleHold: 0,
  // Never drawn by weight: `settleHold` inserts it too, from a stream of its own (simulation/settleCustody.ts).
  SettleCustody: 0,
  // Never drawn by weight: `instanceControl` inserts it from a stream of its own (simulation/instanceControl.ts).
  InstanceControl: 0,
  // Never drawn by weight: `readerReturn` inserts it from a stream of its own (simulation/readerReturn.ts).
  ReaderReturn: 0,
  // Never drawn by weight: `staleAsk` inserts it from a stream of its own (simulation/staleAsk.ts).
  StaleAsk: 0,
  // Never drawn by weight: `answerTakeover` inserts it from a stream of its own (simulation/answerTakeover.ts).
  AnswerTakeover: 0,
  // Never drawn by weight: `answerMailbox` inserts it from a stream of its own (simulation/answerMailbox.ts).
  AnswerMailbox: 0,
  // Never drawn by weight: inserted after some sends from a stream of its own (simulation/controls.ts).
  Control: 0
}

/** Traffic plus every lifecycle action and fault. */
export const defaultWeights: OpWeights = {
  ...trafficWeights,
  Stop: 3,
  Start: 4,
  Kill: 2,
  ReplaceGeneration: 3,
  CrashBroker: 2,
  Drop: 4,
  Stall: 3,
  DelayWrites: 3,
  ClockJump: 2
}

/** How a workload is generated and the world it runs in. */
export interface WorkloadOptions {
  /**
   * Vary the world with the seed too: small broker outboxes, mailboxes and
   * link buffers (backpressure, parking, eviction), two pi scopes, agent
   * temperament. Settings in the config win. Default true.
   */
  readonly vary?: boolean
  /** Operations to generate. Default 40. */
  readonly ops?: number
  /** Sessions in the world (the config's `sessions` wins if given). Default 4. */
  readonly sessions?: number
  /** Overrides of `defaultWeights`. */
  readonly weights?: Partial<OpWeights>
  /**
   * Mix hostile sessions into the world (HOSTILE_SESSIONS of them) and
   * their attacks into the workload (weight HOSTILE_WEIGHT, a low rate).
   * Default false: the seed sweep runs without them.
   */
  readonly hostile?: boolean
  /**
   * Spread the sessions over two groups of each scope (`default` and
   * `run-1`, see `groupSpecs`) with a supervisor and its delegated child
   * across them; mix in the child's supervisor-channel messages and asks
   * (weight GROUPS_SUPERVISOR_WEIGHT) and plain sends and asks into the other
   * group by name or exact id (which the broker must refuse). Default false:
   * the standard seed sweep runs without groups; `npm test` sweeps them
   * separately (test/testing/groups.test.ts).
   */
  readonly groups?: boolean
  /**
   * Mix sends with delivery modes (`delivery-v1`) into the workload: steer,
   * queue, passive, and bursts of replace updates on a few threads (weight
   * DELIVERY_WEIGHT; simulation/delivery.ts). Default false: the standard
   * sweep runs without them.
   */
  readonly delivery?: boolean
  /**
   * Mix topic traffic into the workload (`topics-v1`): publications of every
   * event on TOPIC_COUNT topics (weight TOPICS_PUBLISH_WEIGHT) and
   * subscriptions, some awaiting releases (weight TOPICS_SUBSCRIBE_WEIGHT).
   * Default false: the standard seed sweep runs without them.
   */
  readonly topics?: boolean
  /**
   * Pressure on the broker's connection path (simulation/pressure.ts): insert
   * a registration storm (`Storm`, in STORM_CHANCE of the seeds) and a flood
   * of long messages to a slow recipient (`Flood`, in FLOOD_CHANCE) into the
   * workload, drawn from a stream of their own, and run it in a world with
   * small broker limits (`pressureBroker`: `maxUnregistered`, `outboxChars`,
   * `heldLimit`). Default true; false gives the workloads and worlds of
   * before (the seeds docs/testing.md names up to issue 16's seventh stop).
   */
  readonly pressure?: boolean
  /**
   * Sessions that leave by `unregister` (`Unregister`, weight
   * UNREGISTER_WEIGHT; half of them stop reading and leave 1–4 ops later,
   * so mail reaches them that they leave unread) and come back under the same id with a later `Start`,
   * and one session registered ephemeral (`ephemeral-v1`, see
   * `ephemeralIndexOf`) that ends with its `unregister` and does not come
   * back during the script. Default false: the standard sweep runs without
   * them.
   */
  readonly unregister?: boolean
  /**
   * Insert a `ParkedFlush` (one, or two in SECOND_PARKED_FLUSH_CHANCE of the
   * seeds; simulation/parkedFlush.ts), drawn from a stream of its own: a
   * recipient comes back to a mailbox flush larger than its outbox, reads it
   * slowly, and its senders send on, leave, rejoin or unregister meanwhile.
   * The world's outboxes take PARKED_FLUSH_OUTBOX_CHARS characters unless
   * pressure makes them smaller. Default false: the standard sweep runs
   * without it.
   */
  readonly parkedFlush?: boolean
  /**
   * Insert one `HeldReturn` (simulation/heldReturn.ts), drawn from a stream
   * of its own: a session leaves with its last messages parked behind a slow
   * recipient and registers again on a new connection while they wait. The
   * world's outboxes take PARKED_FLUSH_OUTBOX_CHARS characters unless
   * pressure makes them smaller. Default false.
   */
  readonly heldReturn?: boolean
  /**
   * Insert one `CustodyHold` (simulation/custodyHold.ts), drawn from a
   * stream of its own: a recipient taken over by a new client instance
   * while its old connection holds a sender's unconfirmed mail, and that
   * sender sending, leaving and coming back while the new connection holds
   * its mail (the broker's takeover custody hold). Default false.
   */
  readonly custodyHold?: boolean
  /**
   * Insert one `SettleHold` (simulation/settleHold.ts), drawn from a stream
   * of its own: an asker's deadline comes while the reply to its ask is
   * parked behind the answerer's mail to a slow reader, so the broker holds
   * its settling answer (`ask-expiry-v1`); then the reply is released,
   * forced or taken back. Also one `SettleCustody`
   * (simulation/settleCustody.ts), from a stream of its own: the reply kept
   * by a takeover's custody hold on the asker's session instead, or (its
   * take-back variant) written to the asker's old connection, never
   * confirmed, while the hold waits for that close. The
   * world's outboxes take PARKED_FLUSH_OUTBOX_CHARS characters unless
   * pressure makes them smaller. Default false.
   */
  readonly settleHold?: boolean
  /**
   * Insert one `InstanceControl` (simulation/instanceControl.ts), drawn
   * from a stream of its own: a receiver reads a message, leaves and comes
   * back as a new client instance, and the sender then cancels or
   * supersedes that message, which must not reach the new instance
   * (`control-to-other-instance`). Default false.
   */
  readonly instanceControl?: boolean
  /**
   * Insert one `ReaderReturn` (simulation/readerReturn.ts), drawn from a
   * stream of its own: a reader's connection drops while it holds the
   * sender's control or message unconfirmed, the sender cancels or
   * supersedes, and the same client instance comes back, which must get
   * what it is owed (`control-never-reached-reader`). Default false.
   */
  readonly readerReturn?: boolean
  /**
   * Insert one `StaleAsk` (simulation/staleAsk.ts), drawn from a stream of
   * its own: an ask whose question its target's connection holds unread
   * past the deadline and gives back after the asker's wait timed out,
   * whose asker is owed its expiry (`ask-expired-untold`). Default false.
   */
  readonly staleAsk?: boolean
  /**
   * Insert one `AnswerTakeover` (simulation/answerTakeover.ts), drawn from a
   * stream of its own: an ask answered by a new client instance of its
   * target while the taken-over connection holds the question unconfirmed
   * and closes past the deadline; its asker, answered, must not be told it
   * expired (`expired-after-answer`). Default false.
   */
  readonly answerTakeover?: boolean
  /**
   * Insert one `AnswerMailbox` (simulation/answerMailbox.ts), drawn from a
   * stream of its own: an ask whose question waits in its replier's mailbox
   * (the replier's connection closed before it confirmed it) when the
   * replier's `replace`-staged reply to it is accepted; the replier comes
   * back past the deadline. Its asker, answered, must not be told it expired
   * (`expired-after-answer`). Default false.
   */
  readonly answerMailbox?: boolean
  /**
   * Follow about CONTROL_CHANCE of the sends with a cancel or supersede of
   * the sender's latest send (`Control`, simulation/controls.ts), drawn from
   * a stream of its own after every other op is in place. Default true;
   * false gives the workloads of before.
   */
  readonly controls?: boolean
}

/** How often a session leaves by `unregister` in a workload with `unregister`. */
export const UNREGISTER_WEIGHT = 4

/**
 * In a workload with `unregister`: the index of the ephemeral session, the
 * last one (D of four), or none when that is the supervisor or the delegated
 * child of a workload with groups (their registrations carry grants that a
 * one-shot session has no use for) or the world has fewer than three.
 */
export const ephemeralIndexOf = (sessions: number, groups = false): number | undefined => {
  const last = sessions - 1
  if (sessions < 3) return undefined
  return groups && (last === SUPERVISOR_INDEX || last === childIndexOf(sessions)) ? undefined : last
}

/** Topics a workload with `topics` publishes on (`topic-0`, `topic-1`, …). */
export const TOPIC_COUNT = 2
/** How often a publication is drawn in a workload with `topics`. */
export const TOPICS_PUBLISH_WEIGHT = 12
/** How often a subscription is drawn in a workload with `topics`. */
export const TOPICS_SUBSCRIBE_WEIGHT = 6

/** Hostile sessions in a world with `WorkloadOptions.hostile`. */
export const HOSTILE_SESSIONS = 2

/** How often a hostile attack is drawn, against the other operations' weights (about one op in 25). */
export const HOSTILE_WEIGHT = 4

/** How often the child's `supervisorSend` is drawn in a workload with groups. */
export const GROUPS_SUPERVISOR_WEIGHT = 8

/** In a workload with groups: the supervisor's index (A). */
export const SUPERVISOR_INDEX = 0

/** In a workload with groups: the delegated child's index (C, or B in a world of two). */
export const childIndexOf = (sessions: number): number => sessions >= 3 ? 2 : 1

/**
 * The group of session `index` in a workload with groups: pairs alternate
 * (A, B `default`; C, D `run-1`; E, F `default`; …), so that sessions handed
 * two scopes round-robin still share a scope with a session of the other
 * group.
 */
export const groupOfIndex = (index: number): string => Math.floor(index / 2) % 2 === 0 ? "default" : "run-1"

/** The sessions of a workload with groups: A supervises the child (C), in the other group. */
export const groupSpecs = (count: number): ReadonlyArray<SessionSpec> =>
  sessionNames(count).map((name, index) => ({
    name,
    group: groupOfIndex(index),
    ...(count >= 2 && index === childIndexOf(count) ? { supervisor: sessionNames(count)[SUPERVISOR_INDEX] } : {})
  }))

/** The session count a workload needs; generated ops name sessions below it. */
export const sessionCountOf = (config: SimulationConfig, options: WorkloadOptions = {}): number =>
  config.sessions?.length ?? options.sessions ?? 4

/**
 * Operations for `seed`: the same list every time.
 *
 * @example
 * const ops = generateWorkload(42, 4, { ops: 20, weights: trafficWeights })
 * for (const op of ops) console.log(formatOp(op, sessionNames(4)))
 * const report = yield* runWorkload({ seed: 42 }, ops, { sessions: 4 })
 */
export const generateWorkload = (seed: number, sessions: number, options: WorkloadOptions = {}): ReadonlyArray<Op> => {
  const prng = Prng.derive(seed, "workload")
  const groups = options.groups === true && sessions >= 2
  const weights: OpWeights = {
    ...defaultWeights,
    ...(options.hostile === true ? { Hostile: HOSTILE_WEIGHT } : {}),
    ...(groups ? { SupervisorSend: GROUPS_SUPERVISOR_WEIGHT } : {}),
    ...(options.delivery === true ? { DeliverySend: DELIVERY_WEIGHT } : {}),
    ...(options.topics === true ? { Publish: TOPICS_PUBLISH_WEIGHT, Subscribe: TOPICS_SUBSCRIBE_WEIGHT } : {}),
    ...(options.unregister === true ? { Unregister: UNREGISTER_WEIGHT } : {}),
    ...options.weights
  }
  const count = options.ops ?? 40
  const ops: Array<Op> = []
  const session = () => prng.int(0, sessions - 1)
  /** Another session than `from`, mostly (a few self-targets exercise the refusal). */
  const target = (from: number) => {
    if (sessions < 2 || prng.chance(0.04)) return from
    const other = prng.int(0, sessions - 2)
    return other >= from ? other + 1 : other
  }
  const side = (): Side => prng.chance(0.5) ? "client" : "broker"
  /** With groups: mostly a session of the sender's own group, one time in four the other group's. */
  const groupTarget = (from: number) => {
    const mine = groupOfIndex(from)
    const same: Array<number> = []
    const others: Array<number> = []
    for (let i = 0; i < sessions; i++) if (i !== from) (groupOfIndex(i) === mine ? same : others).push(i)
    if (prng.chance(0.04)) return from
    return prng.chance(0.25) || same.length === 0 ? prng.pick(others) : prng.pick(same)
  }
  /** A send or ask: its target, and with groups, by exact id (half the time when it crosses). */
  const addressed = (from: number) => {
    if (!groups) return { from, to: target(from) }
    const to = groupTarget(from)
    return groupOfIndex(to) !== groupOfIndex(from) && prng.chance(0.5) ? { from, to, byId: true } : { from, to }
  }
  /** Lifecycle actions: with groups, never the supervisor (a new client holds no capability; see docs/testing.md). */
  const lifecycleSession = () => {
    const drawn = session()
    return groups && drawn === SUPERVISOR_INDEX ? childIndexOf(sessions) : drawn
  }
  for (let i = 0; i < count; i++) {
    // Bursts (many ops in the same few ms) and pauses.
    const after = prng.chance(0.35) ? prng.int(0, 20) : prng.int(20, 2500)
    const kind = prng.weighted(weights)
    switch (kind) {
      case "Send":
        ops.push({ _tag: "Send", after, ...addressed(session()) })
        break
      case "DeliverySend": {
        const from = session()
        ops.push({ _tag: "DeliverySend", after, from, to: target(from), ...drawDeliverySend(prng) })
        break
      }
      case "Ask":
        ops.push({ _tag: "Ask", after, ...addressed(session()), timeoutMs: prng.int(2, 20) * 1000 })
        break
      case "SupervisorSend":
        ops.push({ _tag: "SupervisorSend", after, from: childIndexOf(sessions), ask: prng.chance(0.5), timeoutMs: prng.int(2, 20) * 1000 })
        break
      case "CancelAsk":
        ops.push({ _tag: "CancelAsk", after, session: session() })
        break
      case "Reply":
        ops.push({ _tag: "Reply", after, from: session() })
        break
      case "List":
        ops.push({ _tag: "List", after, from: session() })
        break
      case "Status":
        ops.push({ _tag: "Status", after, session: session(), busy: prng.chance(0.5) })
        break
      case "Unregister":
        // Half the time it stops reading and leaves a few ops later, so mail reaches it that it leaves unread.
        ops.push({ _tag: kind, after, session: lifecycleSession(), lingerOps: prng.chance(0.5) ? 0 : prng.int(1, 4) })
        break
      case "Stop":
      case "Start":
      case "Kill":
        ops.push({ _tag: kind, after, session: lifecycleSession() })
        break
      case "ReplaceGeneration":
        ops.push({ _tag: kind, after, session: session() })
        break
      case "CrashBroker":
        ops.push({ _tag: "CrashBroker", after, downMs: prng.int(0, 6000) })
        break
      case "Drop":
        ops.push({ _tag: "Drop", after, session: session(), side: side() })
        break
      case "Stall":
        ops.push({ _tag: "Stall", after, session: session(), side: side(), ms: prng.int(100, 15_000) })
        break
      case "DelayWrites":
        ops.push({
          _tag: "DelayWrites",
          after,
          session: session(),
          side: side(),
          delayMs: prng.int(1, 800),
          forMs: prng.int(500, 10_000)
        })
        break
      case "ClockJump":
        ops.push({ _tag: "ClockJump", after, ms: prng.chance(0.7) ? prng.int(1000, 120_000) : -prng.int(1, 5000) })
        break
      case "Hostile":
        ops.push({ _tag: "Hostile", after, attacker: prng.int(0, HOSTILE_SESSIONS - 1), attack: prng.pick(HOSTILE_ATTACKS) })
        break
      case "Publish":
        ops.push({
          _tag: "Publish",
          after,
          from: session(),
          topic: prng.int(0, TOPIC_COUNT - 1),
          event: prng.pick(["update", "update", "blocker", "decision", "release"] as const)
        })
        break
      case "Subscribe":
        ops.push({ _tag: "Subscribe", after, from: session(), topic: prng.int(0, TOPIC_COUNT - 1), awaitRelease: prng.chance(0.5) })
        break
      case "Storm":
      case "Flood":
      case "ParkedFlush":
      case "HeldReturn":
      case "CustodyHold":
      case "SettleHold":
      case "SettleCustody":
      case "InstanceControl":
      case "ReaderReturn":
      case "StaleAsk":
      case "AnswerTakeover":
      case "AnswerMailbox":
      case "Control":
        // Weight 0 unless a caller's weights say otherwise; drawn as pressure or parked flushes below.
        break
    }
  }
  if (options.pressure !== false) {
    // Inserted from the last, so each index still names its place among the ordinary ops.
    const drawn = drawPressure(seed, sessions, ops.length)
    for (let i = drawn.length - 1; i >= 0; i--) {
      const [index, pressure] = drawn[i]!
      ops.splice(index, 0, pressure)
    }
  }
  if (options.parkedFlush === true) {
    const drawn = drawParkedFlush(seed, sessions, ops.length)
    for (let i = drawn.length - 1; i >= 0; i--) {
      const [index, parked] = drawn[i]!
      ops.splice(index, 0, parked)
    }
  }
  if (options.heldReturn === true) {
    // A bare `register` cannot stand for a supervisor, its child or the ephemeral session.
    const ephemeral = options.unregister === true ? ephemeralIndexOf(sessions, groups) : undefined
    const notSender = [
      ...(groups ? [SUPERVISOR_INDEX, childIndexOf(sessions)] : []),
      ...(ephemeral === undefined ? [] : [ephemeral])
    ]
    for (const [index, held] of drawHeldReturn(seed, sessions, ops.length, notSender)) ops.splice(index, 0, held)
  }
  if (options.custodyHold === true) {
    // Never stopped or started by the op, as by the lifecycle ops: the supervisor (a new client of it holds no
    // capability) and the ephemeral session (its stop ends it).
    const ephemeral = options.unregister === true ? ephemeralIndexOf(sessions, groups) : undefined
    const notSession = [...(groups ? [SUPERVISOR_INDEX] : []), ...(ephemeral === undefined ? [] : [ephemeral])]
    for (const [index, held] of drawCustodyHold(seed, sessions, ops.length, notSession)) ops.splice(index, 0, held)
  }
  if (options.settleHold === true) {
    // As for the custody hold: the op stops and starts sessions, and needs three of one group.
    const ephemeral = options.unregister === true ? ephemeralIndexOf(sessions, groups) : undefined
    const notSession = [...(groups ? [SUPERVISOR_INDEX] : []), ...(ephemeral === undefined ? [] : [ephemeral])]
    for (const [index, held] of drawSettleHold(seed, sessions, ops.length, notSession)) ops.splice(index, 0, held)
    // Its custody-hold shape (a reply kept by a takeover's hold), from a stream of its own: the draws above are unchanged.
    for (const [index, held] of drawSettleCustody(seed, sessions, ops.length, notSession)) ops.splice(index, 0, held)
  }
  if (options.instanceControl === true) {
    // As for the custody hold: the op stops and starts its receiver.
    const ephemeral = options.unregister === true ? ephemeralIndexOf(sessions, groups) : undefined
    const notSession = [...(groups ? [SUPERVISOR_INDEX] : []), ...(ephemeral === undefined ? [] : [ephemeral])]
    for (const [index, op] of drawInstanceControl(seed, sessions, ops.length, notSession)) ops.splice(index, 0, op)
  }
  if (options.readerReturn === true) {
    // As for the custody hold: the op takes its receiver's connection away.
    const ephemeral = options.unregister === true ? ephemeralIndexOf(sessions, groups) : undefined
    const notSession = [...(groups ? [SUPERVISOR_INDEX] : []), ...(ephemeral === undefined ? [] : [ephemeral])]
    for (const [index, op] of drawReaderReturn(seed, sessions, ops.length, notSession)) ops.splice(index, 0, op)
  }
  if (options.staleAsk === true) {
    // As for the custody hold: the op takes its target's connection away.
    const ephemeral = options.unregister === true ? ephemeralIndexOf(sessions, groups) : undefined
    const notSession = [...(groups ? [SUPERVISOR_INDEX] : []), ...(ephemeral === undefined ? [] : [ephemeral])]
    for (const [index, op] of drawStaleAsk(seed, sessions, ops.length, notSession)) ops.splice(index, 0, op)
  }
  if (options.answerTakeover === true) {
    // As for the custody hold: the op kills and starts its target.
    const ephemeral = options.unregister === true ? ephemeralIndexOf(sessions, groups) : undefined
    const notSession = [...(groups ? [SUPERVISOR_INDEX] : []), ...(ephemeral === undefined ? [] : [ephemeral])]
    for (const [index, op] of drawAnswerTakeover(seed, sessions, ops.length, notSession)) ops.splice(index, 0, op)
  }
  if (options.answerMailbox === true) {
    // As for the custody hold: the op kills and starts its target.
    const ephemeral = options.unregister === true ? ephemeralIndexOf(sessions, groups) : undefined
    const notSession = [...(groups ? [SUPERVISOR_INDEX] : []), ...(ephemeral === undefined ? [] : [ephemeral])]
    for (const [index, op] of drawAnswerMailbox(seed, sessions, ops.length, notSession)) ops.splice(index, 0, op)
  }
  return options.controls === false ? ops : withControls(seed, ops, (op) => op._tag === "Send" ? op.from : undefined)
}

const nameAt = (sessions: ReadonlyArray<SimSession>, index: number): SimSession | undefined => sessions[index]

/** The first running session from `index` on (wrapping round), other than the one at `except`. */
const nextRunning = (sessions: ReadonlyArray<SimSession>, index: number, except: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < sessions.length; i++) {
      const at = (index + i) % sessions.length
      const session = sessions[at]
      if (at !== except && session !== undefined && (yield* session.running)) return session
    }
    return undefined
  })

/** One line per op, like the scenario it is. */
export const formatOp = (op: Op, names: ReadonlyArray<string>): string => {
  const name = (index: number) => names[index] ?? `#${index}`
  const when = `+${op.after}ms`
  switch (op._tag) {
    case "Send":
      return `${when} ${name(op.from)} sends to ${name(op.to)}${op.byId === true ? " by id" : ""}`
    case "Ask":
      return `${when} ${name(op.from)} asks ${name(op.to)}${op.byId === true ? " by id" : ""} (timeout ${op.timeoutMs} ms)`
    case "SupervisorSend":
      return `${when} ${name(op.from)} ${op.ask ? `asks its supervisor (timeout ${op.timeoutMs} ms)` : "tells its supervisor"}`
    case "CancelAsk":
      return `${when} ${name(op.session)} cancels its ask`
    case "Reply":
      return `${when} ${name(op.from)} replies (no target named)`
    case "List":
      return `${when} ${name(op.from)} lists`
    case "Status":
      return `${when} ${name(op.session)} is ${op.busy ? "busy" : "idle"}`
    case "Stop":
      return `${when} ${name(op.session)} stops`
    case "Start":
      return `${when} ${name(op.session)} starts`
    case "Kill":
      return `${when} ${name(op.session)} is killed`
    case "Unregister":
      return `${when} ${name(op.session)} ${op.lingerOps > 0 ? `stops reading, and ${op.lingerOps} op(s) later ` : ""}leaves (unregister)`
    case "ReplaceGeneration":
      return `${when} ${name(op.session)} replaces its generation`
    case "CrashBroker":
      return `${when} the broker crashes, down for ${op.downMs} ms`
    case "Drop":
      return `${when} ${name(op.session)}'s connection drops on the ${op.side} side`
    case "Stall":
      return `${when} ${name(op.session)}'s ${op.side} stops reading for ${op.ms} ms`
    case "DelayWrites":
      return `${when} ${name(op.session)}'s ${op.side} writes take ${op.delayMs} ms for ${op.forMs} ms`
    case "ClockJump":
      return `${when} the wall clock jumps ${op.ms >= 0 ? "forward" : "back"} ${Math.abs(op.ms)} ms`
    case "Hostile":
      return `${when} hostile X${op.attacker + 1}: ${op.attack}`
    case "DeliverySend":
      return `${when} ${formatDeliverySend(op, name(op.from), name(op.to))}`
    case "Publish":
      return `${when} ${name(op.from)} publishes ${op.event} on topic-${op.topic}`
    case "Subscribe":
      return `${when} ${name(op.from)} subscribes to topic-${op.topic}${op.awaitRelease ? " (awaitRelease)" : ""}`
    case "Storm":
      return `${when} ${formatStorm(op, name)}`
    case "Flood":
      return `${when} ${formatFlood(op, name(op.from), name(op.to))}`
    case "ParkedFlush":
      return `${when} ${formatParkedFlush(op, name)}`
    case "HeldReturn":
      return `${when} ${formatHeldReturn(op, name)}`
    case "CustodyHold":
      return `${when} ${formatCustodyHold(op, name)}`
    case "SettleHold":
      return `${when} ${formatSettleHold(op, name)}`
    case "SettleCustody":
      return `${when} ${formatSettleCustody(op, name)}`
    case "InstanceControl":
      return `${when} ${formatInstanceControl(op, name)}`
    case "ReaderReturn":
      return `${when} ${formatReaderReturn(op, name)}`
    case "StaleAsk":
      return `${when} ${formatStaleAsk(op, name)}`
    case "AnswerTakeover":
      return `${when} ${formatAnswerTakeover(op, name)}`
    case "AnswerMailbox":
      return `${when} ${formatAnswerMailbox(op, name)}`
    case "Control":
      return `${when} ${formatControl(op, name(op.from))}`
  }
}

/** The script that runs `ops` in the current simulation. */
export const applyOps = (ops: ReadonlyArray<Op>): Effect.Effect<void, never, Simulation> =>
  Effect.gen(function*() {
    const sim = yield* Simulation
    const sessions = sim.sessions
    let counter = 0
    /** Sessions that stopped reading (`Unregister` with `lingerOps`) and leave before the op at `at`, `lingerOps` ops later. */
    let leaving: Array<{ readonly session: SimSession; readonly at: number }> = []
    /** Those due before the op at `upTo`, in the order they were drawn. */
    const leave = (upTo: number) =>
      Effect.gen(function*() {
        const due = leaving.filter((entry) => entry.at <= upTo)
        if (due.length === 0) return
        leaving = leaving.filter((entry) => entry.at > upTo)
        for (const entry of due) yield* entry.session.unregister
      })
    for (const [index, op] of ops.entries()) {
      yield* sim.advance(op.after)
      yield* leave(index)
      counter++
      switch (op._tag) {
        case "Send": {
          const from = nameAt(sessions, op.from)
          const to = nameAt(sessions, op.to)
          if (from !== undefined && to !== undefined) {
            yield* from.send(op.byId === true ? to.id : to.name, `msg ${counter} ${from.name}→${to.name}`)
          }
          break
        }
        case "Ask": {
          const from = nameAt(sessions, op.from)
          const to = nameAt(sessions, op.to)
          if (from !== undefined && to !== undefined) {
            yield* from.ask(op.byId === true ? to.id : to.name, `question ${counter} ${from.name}→${to.name}`, {
              timeout: op.timeoutMs
            })
          }
          break
        }
        case "SupervisorSend": {
          const from = nameAt(sessions, op.from)
          if (from !== undefined) {
            yield* from.supervisorSend(`${op.ask ? "decision" : "progress"} ${counter} ${from.name}→supervisor`, {
              ask: op.ask,
              timeout: op.timeoutMs
            })
          }
          break
        }
        case "CancelAsk":
          yield* nameAt(sessions, op.session)?.cancelAsks ?? Effect.void
          break
        case "Reply":
          yield* Effect.asVoid(nameAt(sessions, op.from)?.reply(`answer ${counter}`) ?? Effect.void)
          break
        case "List":
          yield* Effect.asVoid(nameAt(sessions, op.from)?.list ?? Effect.void)
          break
        case "Status":
          yield* nameAt(sessions, op.session)?.setStatus(op.busy ? "thinking" : "idle") ?? Effect.void
          break
        case "Stop":
          yield* nameAt(sessions, op.session)?.stop ?? Effect.void
          break
        case "Start":
          yield* nameAt(sessions, op.session)?.start ?? Effect.void
          break
        case "Kill":
          yield* nameAt(sessions, op.session)?.kill ?? Effect.void
          break
        case "Unregister": {
          const session = nameAt(sessions, op.session)
          if (session === undefined) break
          if (op.lingerOps > 0 && (yield* session.running)) {
            yield* session.stall("client")
            leaving.push({ session, at: index + op.lingerOps + 1 })
          } else {
            yield* session.unregister
          }
          break
        }
        case "ReplaceGeneration":
          yield* nameAt(sessions, op.session)?.replaceGeneration ?? Effect.void
          break
        case "CrashBroker":
          yield* sim.broker.crashFor(op.downMs)
          break
        case "Drop":
          yield* nameAt(sessions, op.session)?.drop(op.side) ?? Effect.void
          break
        case "Stall":
          yield* nameAt(sessions, op.session)?.stall(op.side, op.ms) ?? Effect.void
          break
        case "DelayWrites":
          yield* nameAt(sessions, op.session)?.delayWrites(op.side, op.delayMs, op.forMs) ?? Effect.void
          break
        case "ClockJump":
          yield* sim.jumpClock(op.ms)
          break
        case "Hostile":
          yield* sim.hostiles[op.attacker]?.attack(op.attack) ?? Effect.void
          break
        case "DeliverySend": {
          const from = nameAt(sessions, op.from)
          const to = nameAt(sessions, op.to)
          if (from !== undefined && to !== undefined) yield* runDeliverySend(sim, op, from, to, counter)
          break
        }
        case "Publish": {
          const from = nameAt(sessions, op.from)
          const release = op.event === "release" ? { resource: `res-${op.topic}`, ownership: "released" } : {}
          yield* Effect.asVoid(
            from?.topic({ action: "publish", topic: `topic-${op.topic}`, event: op.event, message: `state ${counter}`, ...release }) ??
              Effect.void
          )
          break
        }
        case "Subscribe":
          yield* Effect.asVoid(
            nameAt(sessions, op.from)?.topic({ action: "subscribe", topic: `topic-${op.topic}`, awaitRelease: op.awaitRelease }) ??
              Effect.void
          )
          break
        case "Storm":
          yield* sim.storm(op.connections, op.holdMs)
          for (const index of op.drops) yield* nameAt(sessions, index)?.drop("client") ?? Effect.void
          break
        case "Flood": {
          // The drawn sender and recipient, or the next running sessions after them (a flood between
          // sessions that are stopped would reach nothing).
          const from = yield* nextRunning(sessions, op.from, -1)
          const to = from === undefined ? undefined : yield* nextRunning(sessions, op.to, sessions.indexOf(from))
          if (from === undefined || to === undefined) {
            yield* sim.note("flood: skipped (fewer than two sessions running)")
            break
          }
          yield* to.delayWrites("broker", op.delayMs, op.delayMs * (op.count + 4))
          for (let k = 1; k <= op.count; k++) yield* from.send(to.name, floodText(counter, k, from.name, to.name, op.size))
          break
        }
        case "ParkedFlush":
          yield* runParkedFlush(sim, op, counter)
          break
        case "HeldReturn":
          yield* runHeldReturn(sim, op, counter)
          break
        case "CustodyHold":
          yield* runCustodyHold(sim, op, counter)
          break
        case "SettleHold":
          yield* runSettleHold(sim, op, counter)
          break
        case "SettleCustody":
          yield* runSettleCustody(sim, op, counter)
          break
        case "InstanceControl":
          yield* runInstanceControl(sim, op, counter)
          break
        case "ReaderReturn":
          yield* runReaderReturn(sim, op, counter)
          break
        case "StaleAsk":
          yield* runStaleAsk(sim, op, counter)
          break
        case "AnswerTakeover":
          yield* runAnswerTakeover(sim, op, counter)
          break
        case "AnswerMailbox":
          yield* runAnswerMailbox(sim, op, counter)
          break
        case "Control": {
          const from = nameAt(sessions, op.from)
          if (from !== undefined) yield* runControl(from, op.action, op.back, counter)
          break
        }
      }
    }
    yield* leave(Number.POSITIVE_INFINITY)
  })

/**
 * Runs a script in a fresh world for `config` and returns the report (the
 * script ends; `finish` heals, settles and checks).
 *
 * @example
 * const report = yield* runSimulation(
 *   { seed: 1, sessions: ["A", "B"] },
 *   Effect.gen(function*() {
 *     const sim = yield* Simulation
 *     yield* sim.session("A").send("B", "hello")
 *     yield* sim.broker.restart
 *   })
 * )
 * assert.isTrue(report.ok, report.trace.join("\n"))
 */
export const runSimulation = <E>(
  config: SimulationConfig,
  script: Effect.Effect<void, E, Simulation>
): Effect.Effect<SimReport, E> =>
  Effect.gen(function*() {
    const sim = yield* Simulation
    yield* script
    return yield* sim.finish
  }).pipe(Effect.provide(Layer.fresh(Simulation.layer(config))))

/** Sessions named A, B, C, … for a generated workload. */
export const sessionNames = (count: number): ReadonlyArray<string> =>
  Array.from({ length: count }, (_, i) => i < 26 ? String.fromCharCode(65 + i) : `S${i}`)

/** The world a seed varies into (see `WorkloadOptions.vary`); the config's own settings win. */
export const variedConfig = (config: SimulationConfig): SimulationConfig => {
  const prng = Prng.derive(config.seed, "world")
  const small = prng.chance(0.35)
  return {
    ...(prng.chance(0.3) ? { scopes: ["alpha", "beta"] } : {}),
    ...(small ? { linkCapacity: prng.pick([1, 2, 8]) } : {}),
    agent: {
      replyProbability: prng.pick([0.5, 0.85, 1]),
      replyDelayMs: [0, prng.pick([500, 3000, 12_000])],
      ...config.agent
    },
    ...config,
    broker: {
      ...(small ? { outboxCapacity: prng.pick([1, 4, 16]) } : {}),
      ...(prng.chance(0.25) ? { mailboxCapacity: prng.pick([1, 3, 8]) } : {}),
      ...config.broker
    }
  }
}

/**
 * The config a generated workload runs in: `count` sessions unless the config
 * names them (with `groups`, over two groups with a supervisor and its child:
 * `groupSpecs`; with `unregister`, the session at `ephemeralIndexOf`
 * ephemeral), varied by seed. `parkedFlush` and `heldReturn` (also given
 * for `settleHold`) make outboxes of PARKED_FLUSH_OUTBOX_CHARS characters
 * unless pressure made them smaller.
 */
export const workloadConfig = (
  config: SimulationConfig,
  count: number,
  vary = true,
  groups = false,
  pressure = true,
  unregister = false,
  parkedFlush = false,
  heldReturn = false
): SimulationConfig => {
  const specs: ReadonlyArray<string | SessionSpec> = groups && count >= 2 ? groupSpecs(count) : sessionNames(count)
  const ephemeral = unregister ? ephemeralIndexOf(count, groups && count >= 2) : undefined
  const named = config.sessions === undefined
    ? {
      ...config,
      sessions: ephemeral === undefined ? specs : specs.map((entry, index) => {
        const spec = typeof entry === "string" ? { name: entry } : entry
        return index === ephemeral ? { ...spec, ephemeral: true } : entry
      })
    }
    : config
  const varied = vary ? variedConfig(named) : named
  const pressed = pressure ? { ...varied, broker: { ...pressureBroker(config.seed), ...varied.broker } } : varied
  return (parkedFlush || heldReturn) && pressed.broker?.outboxChars === undefined
    ? { ...pressed, broker: { ...pressed.broker, outboxChars: PARKED_FLUSH_OUTBOX_CHARS } }
    : pressed
}

/** Runs `ops` (by default the workload generated from `config.seed`). */
export const runWorkload = (
  config: SimulationConfig,
  ops?: ReadonlyArray<Op>,
  options: WorkloadOptions = {}
): Effect.Effect<SimReport> => {
  const count = sessionCountOf(config, options)
  const world = workloadConfig(
    config,
    count,
    options.vary ?? true,
    options.groups === true,
    options.pressure !== false,
    options.unregister === true,
    options.parkedFlush === true,
    // A settle hold needs the same small outboxes as a held return: B's mail to C must not fit C's.
    options.heldReturn === true || options.settleHold === true
  )
  return runSimulation(
    options.hostile === true && world.hostile === undefined ? { ...world, hostile: HOSTILE_SESSIONS } : world,
    applyOps(ops ?? generateWorkload(config.seed, count, options))
  )
}
