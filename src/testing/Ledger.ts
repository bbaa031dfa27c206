/**
 * Size: about 495 lines, almost all of it short methods that hand a
 * call on to those modules or set one field of the state (one per event or
 * check the simulation reports); the next concern added should bring a
 * face of its own rather than grow this one.
 *
 * The simulation's observer: it sees every frame on every in-memory link (as
 * each side writes and reads it), what each simulated host is handed, and what
 * each `ask` returns; it keeps the trace and checks the invariants as events
 * happen and once more at the end of a run (see docs/testing.md for the
 * precise definitions).
 *
 * Plain synchronous code owned by one world: the link wrappers, hosts and the
 * driver call into it between two yields, like the broker's Router. This
 * class is the ledger's face; its memory is `ledger/state.ts`, and each
 * concern is a module of `ledger/`: the trace, the wire taps, order, hosts
 * and asks, departures (ledger/departure.ts), a join with no departure
 * before it (ledger/joins.ts), a control read by a client instance that
 * never got its message (ledger/instances.ts), frames a client took after
 * its own drop (ledger/dropped.ts), and the fates at the end of a
 * run.
 */
import { Cause, Exit } from "effect"
import type { Message } from "../protocol/frames.ts"
import { replyStagedAt } from "./ledger/delivery.ts"
import { DepartureLedger } from "./ledger/departure.ts"
import { takenAfterDrop } from "./ledger/dropped.ts"
import { checkControlInstances, checkControlsReachReaders, InstanceLedger } from "./ledger/instances.ts"
import { readByClientOf, type ReaderStage } from "./ledger/readers.ts"
import { JoinLedger } from "./ledger/joins.ts"
import {
  answeredElsewhereFalsely,
  answersAfterTimeout,
  askEnded,
  askStarted,
  askTally,
  hostDelivered,
  hostRestored,
  questionOf,
  refusedAsTimeout,
  unsettledAsks
} from "./ledger/asks.ts"
import { finish, groupTally, recordSaid, unexplained } from "./ledger/fates.ts"
import { setRescue } from "./ledger/order.ts"
import { type AskClient, type LedgerState, makeLedgerState, nameOf } from "./ledger/state.ts"
import { alias, check, note, violate } from "./ledger/trace.ts"
import type {
  AskOutcome,
  AskTally,
  GroupTally,
  LedgerOptions,
  MessageTally,
  SessionMeta,
  Side,
  Violation,
  ViolationKind
} from "./ledger/types.ts"
import { TopicLedger } from "./ledger/topics.ts"
import { registrationsHandled } from "./ledger/takeovers.ts"
import { brokerRead, brokerUnwrote, brokerWriteStarted, brokerWrote, brokerWriteCut, clientRead, clientWrote, discarded, heldDropped } from "./ledger/wire.ts"

/** The ledger's vocabulary: violation kinds, tallies, session names (ledger/types.ts). */
export type * from "./ledger/types.ts"

/** An ask whose question was sent and that has not settled (`Ledger.openQuestions`). */
export interface OpenQuestion {
  readonly questionId: string
  /** The asker's session id. */
  readonly asker: string
  /** The target's session id, when the ask named a session the ledger knows. */
  readonly target: string | undefined
  /** The broker has written the question to a connection (any). */
  readonly written: boolean
}

/**
 * One world's ledger. The `Simulation` makes it and feeds it; a scenario
 * reads it through `sim.ledger` (the trace, the violations) or adds to it.
 *
 * @example
 * const sim = yield* Simulation
 * sim.ledger.note("the planner starts its second stage")
 * // … at the end:
 * const report = yield* sim.finish
 * for (const violation of report.violations) console.log(violation.kind, violation.message)
 */
export class Ledger {
  private readonly state: LedgerState
  private readonly topics = new TopicLedger()
  private readonly departures = new DepartureLedger()
  private readonly joins = new JoinLedger()
  private readonly instances = new InstanceLedger()

  constructor(options: LedgerOptions) {
    this.state = makeLedgerState(options)
  }

  // -------------------------------------------------------------------------
  // Trace and violations
  // -------------------------------------------------------------------------

  /** Appends a trace line stamped with the simulated time. */
  note(line: string): void {
    note(this.state, line)
  }

  /** The world's wall clock jumped by `millis`: times before and after a jump back are not compared. */
  clockJumped(millis: number): void {
    if (millis < 0) this.state.clockWentBack = true
  }

  /** Every trace line so far. */
  get trace(): ReadonlyArray<string> {
    return this.state.lines
  }

  /** Every violation so far. */
  get violations(): ReadonlyArray<Violation> {
    return this.state.found
  }

  /** Invariant checks made so far. */
  get checks(): number {
    return this.state.checkCount
  }

  /** Frames seen on the in-memory network so far. */
  get frames(): number {
    return this.state.frameCount
  }

  /** Counts one invariant check; records a violation when `ok` is false. */
  check(ok: boolean, kind: ViolationKind, message: () => string): boolean {
    return check(this.state, ok, kind, message)
  }

  /** Records a violation (and its trace line). */
  violate(kind: ViolationKind, message: string): void {
    violate(this.state, kind, message)
  }

  /** Records a `defect` when `exit` (of what `what` names) died; typed failures and interruption are outcomes, not defects. */
  defectOf<A, E>(what: string, exit: Exit.Exit<A, E>): void {
    if (Exit.isFailure(exit) && Cause.hasDies(exit.cause)) violate(this.state, "defect", `${what} died: ${Cause.pretty(exit.cause)}`)
  }

  /** A short stable name for an id (message ids are random UUIDs; aliases follow first appearance). */
  alias(id: string): string {
    return alias(this.state, id)
  }

  // -------------------------------------------------------------------------
  // The world
  // -------------------------------------------------------------------------

  /** A session of the world (before it connects). */
  addSession(meta: SessionMeta): void {
    this.state.sessions.set(meta.id, meta)
    this.state.byName.set(meta.name.toLowerCase(), meta.id)
  }

  /**
   * Session `id` moved to `group`: a client instance of it registered there (simulation/groupMove.ts). It
   * is judged in that group from now on, and as sharing every group it was in before (`SessionMeta.movedFrom`).
   */
  sessionMoved(id: string, group: string | undefined): void {
    const meta = this.state.sessions.get(id)
    if (meta === undefined) return
    const from = meta.group?.trim() || "default"
    const movedFrom = [...(meta.movedFrom ?? []), from].filter((name, index, all) => all.indexOf(name) === index)
    this.state.sessions.set(id, { ...meta, group, movedFrom })
  }

  /** The groups session `id` moved from (`sessionMoved`), none for one that never moved. */
  movedFrom(id: string): ReadonlyArray<string> {
    return this.state.sessions.get(id)?.movedFrom ?? []
  }

  /** The display name of session `id` (the id itself if unknown). */
  nameOf(id: string): string {
    return nameOf(this.state, id)
  }

  /** Broker incarnation `epoch` started with the messages `messageIds` in its store (a durable world's disk). */
  brokerRestored(epoch: number, messageIds: Iterable<string>): void {
    for (const id of messageIds) {
      const epochs = this.state.restoredBy.get(id)
      if (epochs === undefined) this.state.restoredBy.set(id, [epoch])
      else epochs.push(epoch)
    }
  }

  /**
   * Broker incarnation `epoch` crashed: what it acknowledged and never wrote is lost to a crash, and what
   * it was writing to a connection still live then was cut short (`LinkRecord.cutByCrash`).
   */
  brokerCrashed(epoch: number): void {
    this.state.crashedEpochs.add(epoch)
    for (const link of this.state.links.values()) {
      if (link.brokerEpoch === epoch && !link.brokerEnded && !link.closed) link.cutByCrash = true
    }
  }

  /** The client with key `client` closed: what it had read and not handed over is lost in flight. */
  clientClosed(client: string): void {
    this.state.closedClients.add(client)
  }

  /**
   * A new process resumes client `client` (the same instance, its key kept: a pi process resuming its session
   * file): the links it dials from now on are that process's, which remembers nothing an earlier one read.
   */
  clientResumed(client: string): void {
    this.state.resumedClients.set(client, (this.state.resumedClients.get(client) ?? 0) + 1)
  }

  /** Session `owner`'s client `client` dialled link `id` to broker incarnation `brokerEpoch`. */
  linkOpened(id: number, owner: string, client: string, brokerEpoch: number): void {
    const resumed = this.state.resumedClients.get(client) ?? 0
    this.state.links.set(id, { id, owner, client, process: resumed, brokerEpoch, registered: false, closed: false, brokerEnded: false, endedAt: undefined, cutByCrash: false, framesRead: 0, confirmed: 0, confirmationWritten: 0, registeredAt: undefined, framesUnread: 0, writesUnsent: 0, registerReadAt: undefined, brokerHolds: false, refused: false, replacedAt: undefined, replacedWithoutRejoin: undefined, rejoin: undefined, receivedV1: false, heldAtRegister: undefined, endedAtRegister: [], settlesUnanswered: new Set(), settleAnsweredAt: undefined })
  }

  /** The broker's side of link `id` saw it end. */
  brokerEnded(id: number): void {
    const link = this.state.links.get(id)
    if (link === undefined) return
    link.brokerEnded = true
    this.departures.brokerEnded(this.state, id)
    // The broker's end wins: while a connection lingers (its client closed first), the broker still takes it as live.
    link.endedAt = this.state.now()
  }

  /** Link `id` is closed on both sides. */
  linkClosed(id: number): void {
    const link = this.state.links.get(id)
    if (link === undefined) return
    link.closed = true
    if (!link.brokerEnded) link.endedAt ??= this.state.now()
  }

  /** Sessions whose connection is open and registered right now, by link. */
  registeredOwners(): ReadonlyArray<string> {
    const out: Array<string> = []
    for (const link of this.state.links.values()) if (link.registered && !link.closed) out.push(link.owner)
    return out
  }

  // -------------------------------------------------------------------------
  // Wire taps
  // -------------------------------------------------------------------------

  /** A client wrote frames toward the broker. */
  clientWrote(linkId: number, frames: ReadonlyArray<string>): void {
    clientWrote(this.state, linkId, frames)
  }

  /** The broker read frames from a client on link `linkId`. */
  brokerRead(linkId: number, frames: ReadonlyArray<string>): void {
    brokerRead(this.state, linkId, frames)
  }

  /**
   * The broker handles `frames[from]` up to `frames[to]` (not included), read
   * on link `linkId` (the broker's `ReaderObserver`, just before it does): at
   * once as it read them, or later, when its reader had held them behind
   * parked output. Departures
   * and the sends a registration made count from here (ledger/departure.ts).
   */
  brokerHandled(linkId: number, frames: ReadonlyArray<string>, from: number, to: number): void {
    this.departures.brokerHandled(this.state, linkId, frames, from, to)
    this.instances.handled(this.state, linkId, frames, from, to)
    registrationsHandled(this.state, linkId, frames, from, to)
  }

  /** The broker's reader of link `linkId` dropped frames it held behind parked output: its connection closed first. */
  heldDropped(linkId: number, frames: ReadonlyArray<string>): void {
    heldDropped(this.state, linkId, frames)
  }

  /** The broker began a write toward the client on link `linkId` (one `OutputWrites.takeForWrite`; ledger/departure.ts). */
  brokerWriteStarted(linkId: number, frames: ReadonlyArray<string>): void {
    brokerWriteStarted(this.state, linkId, frames)
    this.departures.writeStarted(this.state, linkId, frames)
    this.joins.writeStarted(this.state, this.departures, linkId, frames)
  }

  /** The broker wrote frames toward a client. */
  brokerWrote(linkId: number, frames: ReadonlyArray<string>): void {
    brokerWrote(this.state, linkId, frames)
    this.departures.brokerWrote(this.state, linkId, frames)
  }

  /**
   * Frames a side began to write but never handed over (its write was
   * interrupted or failed first): they were never on the wire.
   */
  unwritten(linkId: number, from: Side, frames: ReadonlyArray<string>): void {
    if (from === "broker") brokerUnwrote(this.state, linkId, frames)
  }

  /**
   * The broker's write on link `linkId`, begun at `startedAt`, ended (failed,
   * or was interrupted) before the transport took these frames (whether or
   * not it had begun to hand them over): the broker takes them back when the
   * connection closes.
   */
  brokerWriteCut(linkId: number, frames: ReadonlyArray<string>, startedAt: number): void {
    brokerWriteCut(this.state, linkId, frames, startedAt)
  }

  /** The simulated time now (ms), as the ledger's records keep it. */
  now(): number {
    return this.state.now()
  }

  /** Frames lost with a dropped connection, before the side they travelled toward read them. */
  discarded(linkId: number, toward: Side, frames: ReadonlyArray<string>): void {
    discarded(this.state, linkId, toward, frames)
  }

  /** A client read frames from the broker. */
  clientRead(linkId: number, frames: ReadonlyArray<string>): void {
    clientRead(this.state, linkId, frames)
    this.departures.clientRead(this.state, linkId, frames)
    this.joins.clientRead(this.state, this.departures, linkId, frames)
    const owner = this.state.links.get(linkId)?.owner
    if (owner !== undefined) this.topics.read(this.state, linkId, owner, frames)
  }

  /**
   * The client of link `linkId` got `frames` from its reader after it had
   * dropped that connection itself: not read, but remembered, so a session
   * handed one of their messages is caught (`handed-after-drop`, ledger/dropped.ts).
   */
  clientTookAfterDrop(linkId: number, frames: ReadonlyArray<string>): void {
    takenAfterDrop(this.state, linkId, frames)
  }

  // -------------------------------------------------------------------------
  // Hosts and asks
  // -------------------------------------------------------------------------

  /**
   * A simulated host was handed an inbound message; `generation`, the session
   * generation whose host it was (a host without a topic store remembers
   * which publications interrupted it for one generation).
   */
  hostDelivered(receiver: string, fromId: string, message: Message, intent: string, generation?: string): void {
    hostDelivered(this.state, receiver, fromId, message, intent)
    this.topics.handed(this.state, receiver, fromId, message, generation)
  }

  /** A host's own journal restored an inbound message to a new generation, which hands it over again (see `hostRestored`, ledger/asks.ts). */
  hostRestored(receiver: string, fromId: string, message: Message, intent: string, generation?: string): void {
    if (hostRestored(this.state, receiver, fromId, message, intent)) {
      this.topics.handed(this.state, receiver, fromId, message, generation)
    }
  }

  /**
   * An ask was started, through `client` when the caller names it (the
   * ledger then holds it to the wait its client owes it after a drop,
   * `AskRecord.owedWait`); returns its alias.
   */
  askStarted(asker: string, target: string, client?: AskClient): string {
    return askStarted(this.state, asker, target, client)
  }

  /** The question id of an ask, once its send was written (undefined before, or if it never was). */
  questionOf(askAlias: string): string | undefined {
    return questionOf(this.state, askAlias)
  }

  /**
   * An ask ended. A `Replied` outcome carries the reply: it must answer this
   * ask's question, come from its target, and count as that reply's delivery.
   */
  askEnded(
    askAlias: string,
    outcome: AskOutcome,
    reply?: { readonly questionId: string; readonly fromId: string; readonly message: Message }
  ): void {
    askEnded(this.state, askAlias, outcome, reply)
  }

  /** Marks the end-of-run phase that makes every session register again (see `stranded-mail`). */
  setRescue(on: boolean): void {
    setRescue(this.state, on)
  }

  /** Asks that have not settled. */
  unsettledAsks(): ReadonlyArray<string> {
    return unsettledAsks(this.state)
  }

  /**
   * Asks that timed out, or ended `DeliveryUnknown` with a live connection that then read it, though the broker
   * accepted a reply to them (`answer-after-timeout`), one line each.
   */
  answersAfterTimeout(): ReadonlyArray<string> {
    return answersAfterTimeout(this.state)
  }

  /** Asks that ended `ReplyTimeout` after their client read the broker's refusal of their question (`refused-as-timeout`). */
  refusedAsTimeout(): ReadonlyArray<string> {
    return refusedAsTimeout(this.state)
  }

  /** Asks that ended `AskAnsweredElsewhere` with no reply handed to another client of the session (`answered-elsewhere-false`). */
  answeredElsewhereFalsely(): ReadonlyArray<string> {
    return answeredElsewhereFalsely(this.state)
  }

  /** The sessions of the world that are not hostile. */
  healthySessions(): ReadonlyArray<SessionMeta> {
    return [...this.state.sessions.values()].filter((meta) => meta.hostile !== true)
  }

  /** The ids of the last `count` messages the (healthy) sessions sent: what a hostile session collides with. */
  recentMessageIds(count: number): ReadonlyArray<string> {
    return [...this.state.messages.keys()].slice(-count)
  }

  /**
   * Asks whose question was sent and that have not settled: their question ids, askers and targets, and
   * whether the broker has written the question to a connection yet.
   */
  openQuestions(): ReadonlyArray<OpenQuestion> {
    const open: Array<OpenQuestion> = []
    for (const ask of this.state.asks) {
      if (ask.outcome === undefined && ask.questionId !== undefined) {
        const written = (this.state.messages.get(ask.questionId)?.writtenTo.length ?? 0) > 0
        open.push({ questionId: ask.questionId, asker: ask.asker, target: ask.targetId, written })
      }
    }
    return open
  }

  /** Whether `sender`'s reply to `questionId` was still staged at `at` (ledger/delivery.ts, `replyStagedAt`). */
  replyStagedAt(sender: string, questionId: string, at: number): boolean {
    return replyStagedAt(this.state, sender, questionId, at)
  }

  /**
   * Whether a client of session `owner` read the message whose text is `text` (for `confirmation written`,
   * and wrote its confirmation of it): ledger/readers.ts, what an inserted op waits on.
   */
  readByClientOf(owner: string, text: string, stage: ReaderStage): boolean {
    return readByClientOf(this.state, owner, text, stage)
  }

  // -------------------------------------------------------------------------
  // End of run
  // -------------------------------------------------------------------------

  /**
   * Acknowledged messages that were never delivered, never written anywhere,
   * with no failure notice and no broker crash to explain them: the world asks
   * the broker's replay record about each (a resend from the sender with the
   * same id) before `finish` classifies them.
   */
  unexplained(): ReadonlyArray<
    { readonly sender: string; readonly target: string; readonly message: Message; readonly channel: "supervisor" | undefined }
  > {
    return unexplained(this.state)
  }

  /** What the replay record answered for a resend of `messageId` (a delivery code, or "delivered"). */
  recordSaid(messageId: string, answer: string): void {
    recordSaid(this.state, messageId, answer)
  }

  /**
   * Classifies every acknowledged message (call after the world quiesced,
   * with every session connected again) and records silent losses.
   */
  finish(): MessageTally {
    const tally = finish(this.state, (record) => this.departures.endedOneShot(this.state, record))
    checkControlInstances(this.state, this.instances)
    checkControlsReachReaders(this.state, this.instances)
    this.joins.finish(this.state, this.departures)
    return tally
  }

  /** How every ask of the run ended, counted. */
  askTally(): AskTally {
    return askTally(this.state)
  }

  /** Traffic between groups of one scope: attempts and how they were refused, supervisor traffic. */
  groupTally(): GroupTally {
    return groupTally(this.state)
  }
}
