/**
 * Size: one concept — the wiring, about 870 lines. Its length is the constructor, a few lines
 * per concern (sixteen of them), and the thin methods the broker's fibers call
 * into (batch dispatch, write and detach bookkeeping — settling an abandoned
 * write, `abandonWrites`, came with `rejoin-v1` — timers); no rule lives
 * here, so splitting it would only move the list of concerns elsewhere.
 *
 * The Router: every client frame's effect on broker state, as plain
 * synchronous code (hot-path.md), assembled from one module per concern:
 *
 * | concern | module |
 * |---|---|
 * | registration and the registry | Registration.ts, Registry.ts |
 * | the send pipeline (resolve → replay → stages → deliver or queue → ack) | Send.ts, SendTargets.ts, SendReplays.ts, SendAnswers.ts, DeliveryRecords.ts |
 * | asks and replies | Asks.ts, AskEdges.ts |
 * | the mailbox | MailDelivery.ts, Mailbox.ts |
 * | the membership feed | Membership.ts, MembershipFeed.ts |
 * | discovery (list, presence) | Discovery.ts |
 * | receipts, cancel and supersede | Receipts.ts, Cancels.ts, SupersedeStage.ts |
 * | groups (`groups-v1`) | Groups.ts |
 * | the supervisor channel (`supervisor-v1`) | Supervisor.ts, Capabilities.ts |
 * | delivery modes, replace coalescing (`delivery-v1`) | DeliveryModes.ts, ReplaceStaging.ts |
 * | peer health (`health-v1`) | Health.ts |
 * | topics (`topics-v1`) | Topics.ts |
 * | the result archive (`results-v1`) | Results.ts (its fiber: Broker.ts) |
 * | durable supervisor questions (`questions-v1`) | Questions.ts (its fiber: QuestionWorker.ts) |
 * | the live view (`observe-v1`) | Observe.ts, Traffic.ts (its fiber: Broker.ts) |
 * | output and backpressure | Output.ts |
 * | routing spans (`trace-v1`) | RoutingSpans.ts (made only when the broker traces) |
 * | statistics (`stats-v1`) and the metrics they feed | Stats.ts, RouteCounts.ts, StoreCommits.ts |
 *
 * This file only wires them: it builds the shared `RouterContext`, hands each
 * concern what it needs, collects their frame handlers into one dispatch
 * table, and dispatches a connection's batch of frames. A new concern is one
 * new module plus a few lines here (its frames, its send stage, its hooks).
 *
 * Single owner: the Router and everything it holds are touched only by
 * synchronous code running between two yields of some broker fiber; Node runs
 * every fiber on one thread, so no two handlers interleave.
 */
import { Effect, Queue } from "effect"
import { randomUUID } from "node:crypto"
import { ASK_EXPIRY_V1, QUESTIONS_V1 } from "../protocol/features.ts"
import { REPLAY_WINDOW_MS } from "../protocol/constants.ts"
import { decodeClientFrame, isFrameDecodeError, parseFrameText } from "../protocol/decode.ts"
import { DeliveryCode, Reason } from "../protocol/delivery.ts"
import { shownValue } from "../protocol/shownValue.ts"
import { Asks } from "./Asks.ts"
import { BrokerStamps, MAX_FLOOR_AHEAD_MS } from "./BrokerStamps.ts"
import { Custody } from "./Custody.ts"
import { boundedAsk } from "./AskEdges.ts"
import { DeliveryRecords, type Outcome, recordKeyOf } from "./DeliveryRecords.ts"
import { Discovery } from "./Discovery.ts"
import { Groups } from "./Groups.ts"
import { healthStage } from "./Health.ts"
import * as Encode from "./encode.ts"
import { type HeldMail, MailDelivery } from "./MailDelivery.ts"
import { Membership } from "./Membership.ts"
import type { ResolvedCoreOptions } from "./options.ts"
import { Observe } from "./Observe.ts"
import { Output } from "./Output.ts"
import type { OutboundItem, Peer, Written } from "./Peer.ts"
import type { ReaderObserverService } from "./ReaderObserver.ts"
import { replyErrorStage } from "./ReplyErrors.ts"
import { Receipts } from "./Receipts.ts"
import { type ResultJob, Results } from "./Results.ts"
import { Registration } from "./Registration.ts"
import { Registry } from "./Registry.ts"
import { ReplaceStaging } from "./ReplaceStaging.ts"
import { acceptInSeqOrder, nextSeqPastMarks, restoreOrder } from "./RestoreOrder.ts"
import { type BrokerEvent, closePeer, type FrameHandlers, logLine, type RouterContext, signal } from "./RouterContext.ts"
import { Send } from "./Send.ts"
import type { OutFrame } from "../protocol/framing.ts"
import type { BrokerStatsSnapshot } from "../protocol/stats.ts"
import type { RoutingSpans } from "./RoutingSpans.ts"
import { Stats } from "./Stats.ts"
import type { StoreCommits } from "./StoreCommits.ts"
import type { StoreJournal } from "./StoreJournal.ts"
import type { Recovered } from "../store/MailStore.ts"
import type { WriteBatch } from "./WriteBatch.ts"
import { Questions, type QuestionWork } from "./Questions.ts"
import { Supervisor } from "./Supervisor.ts"
import { Topics } from "./Topics.ts"

/** How long replay records are kept at most (also in the durable store). */
export const REPLAY_RETENTION_MS = 3_600_000

/** Sizes of the routing tables, for diagnostics and invariant checks. */
export interface RouterStats {
  readonly sessions: number
  readonly unregistered: number
  readonly mailbox: number
  readonly asks: number
  /** Scopes the broker keeps (with live or recently departed sessions). */
  readonly scopes: number
  /** Departed sessions remembered (P34), over all scopes. */
  readonly departed: number
  /** Characters of frame text queued in every connection's outbox together. */
  readonly queuedChars: number
  /** `replace` messages staged for coalescing (`delivery-v1`). */
  readonly staged: number
  /** Topic records and subscriptions kept (`topics-v1`), over all groups. */
  readonly topicEntries: number
  /** Topic records kept over all groups (bounded by `topicRecords`). */
  readonly topicRecords: number
  /** Estimated bytes of those records (bounded by `topicBytes`; `topicRecordBytes` in Topics.ts). */
  readonly topicBytes: number
  /** Topic names in live publishers' lists (at most their records kept). */
  readonly topicPublished: number
  /** Batches that parked mail for their own reader, since the start: a registration's mailbox flush that did not fit (Output.ts). */
  readonly ownParks: number
  /** Messages parked at the end of a recipient's own parked list, behind older mail of their sender there (ForcedOutput.ts). */
  readonly parkedBehindOwn: number
  /** Drainer offers that waited behind older mail of their sender in the recipient's own parked list (ParkedDrain.ts). */
  readonly waitsBehindOwn: number
  /** Items for a reader itself offered ahead of the head of its parked list, which waited (ParkedDrain.offerOwnAhead). */
  readonly offeredAhead: number
  /** `ask-expiry-v1` settling `list` answers held behind a reply to their asker still parked elsewhere (Output.enqueueSettleAnswer, ParkedReplies.ts). */
  readonly answersBehindReplies: number
  /** Of those, answers released once their last parked reply was offered by its drainer (ParkedReplies.offered). */
  readonly answersReleasedOffered: number
  /** Of those, answers released when a close forced or took back the parked lists that held the reply (ParkedReplies.recheck). */
  readonly answersReleasedForced: number
  /** Of those, answers dropped with their asker's connection (ParkedReplies.drop, or released to a closing connection). */
  readonly answersDropped: number
  /** Of those, answers released when the takeover custody hold that kept their reply ended (ParkedReplies.custodyEnded). */
  readonly answersReleasedCustody: number
  /** Departures withheld from a recipient behind the departed sender's mail in its own parked list (DepartureHolds.ts). */
  readonly departuresHeld: number
  /** Returns while a departure was held: a session back while its old connection's output was parked, its departure and return withheld from that output's recipients (WithheldDepartures.ts). */
  readonly returnsHeld: number
  /** Takeover custody holds taken: a `received-v1` session taken over with mail unconfirmed in the old connection's custody (CustodyHold.ts). */
  readonly custodyHoldsTaken: number
  /** Custody holds carried over to the next connection by a further takeover before the old close. */
  readonly custodyHoldsCarried: number
  /** Custody holds adopted by a new registration of the session, its holder closed or gone from it. */
  readonly custodyHoldsAdopted: number
  /** Messages kept on a custody hold until it ended (forced to the holder, its own parked flush, an awaited close's custody). */
  readonly custodyHeldMessages: number
  /** Drainer offers that waited for a custody hold to end (a held sender slowed). */
  readonly custodyHeldWaits: number
  /** Departures of held senders withheld from a hold's holder until the hold ended. */
  readonly custodyHeldDepartures: number
  /** Returns of held senders withheld with their departure behind a custody hold (the pair owed at its end). */
  readonly custodyHeldReturns: number
  /**
   * Custody holds on which an `ask-expiry-v1` settling answer waited for a reply written to a
   * connection the hold waits for and not confirmed there, which its close gives back (CustodyHolds.keepsReply; once per hold).
   */
  readonly custodyAwaitedReplies: number
  /** Mailbox copies cancelled after a client instance read them, kept for its return (WithdrawnCopies.ts). */
  readonly withdrawnCopiesKept: number
  /** Of those, given to a reader (at its return, or live at the cancel): the message and its cancel right behind it (once per reader). */
  readonly withdrawnCopiesGiven: number
  /**
   * Of the mailbox's messages now (`mailbox`), cancelled copies kept for the client instances that read
   * them and have not come back for them: a session live as another instance leaves them there (review
   * revm M2, M3), until a reader returns or the mailbox's retention passes.
   */
  readonly withdrawnCopiesHeld: number
  /**
   * Controls given back alone with their session away (their message confirmed), kept for the instance given it
   * (KeptControls.ts): how many were kept since the broker started, not how many it holds now.
   */
  readonly controlsKept: number
  /** Of those, given at that instance's return, since the broker started. */
  readonly controlsKeptGiven: number
}

/** The queues through which the Router wakes the broker's service fibers. */
export interface RouterSignals {
  readonly feed: Queue.Queue<void>
  /** Wakes the output fiber: output was queued outside a reader's batch (Output.ts). */
  readonly output: Queue.Queue<void>
  readonly idle: Queue.Queue<void>
  readonly registration: Queue.Queue<void>
  /** Wakes the staging fiber: a first `replace` message was staged (ReplaceStaging.ts). */
  readonly staging: Queue.Queue<void>
  /** Wakes the ask expiry fiber: an ask whose asker is told of its expiry opened, due sooner (Asks.ts). */
  readonly asks: Queue.Queue<void>
  /** Wakes the store writer: the journal has changes to commit (StoreJournal.ts). */
  readonly store: Queue.Queue<void>
  readonly events: Queue.Queue<BrokerEvent>
  /** Result archive requests for the results fiber (Results.ts). */
  readonly results: Queue.Queue<ResultJob>
  /** Wakes the observe fiber: a watch was added (Observe.ts). */
  readonly observe: Queue.Queue<void>
  /** Question work for the question fiber (QuestionWorker.ts); absent when the broker keeps no questions. */
  readonly questions?: Queue.Queue<QuestionWork> | undefined
}

/**
 * A fresh set of the Router's signals: a sliding queue of one for each wake-up
 * (a wake-up already pending makes a second one a no-op), unbounded queues for
 * events and results, and a question queue only when the broker keeps
 * questions (`withQuestions`).
 *
 * @example
 * ```ts
 * const router = new Router(resolveCoreOptions({ idleExit: null }), () => 0, yield* makeRouterSignals(false))
 * ```
 */
export const makeRouterSignals = Effect.fnUntraced(function*(withQuestions: boolean) {
  const signals: RouterSignals = {
    questions: withQuestions ? yield* Queue.unbounded<QuestionWork>() : undefined,
    feed: yield* Queue.sliding<void>(1),
    output: yield* Queue.sliding<void>(1),
    idle: yield* Queue.sliding<void>(1),
    registration: yield* Queue.sliding<void>(1),
    staging: yield* Queue.sliding<void>(1),
    asks: yield* Queue.sliding<void>(1),
    observe: yield* Queue.sliding<void>(1),
    store: yield* Queue.sliding<void>(1),
    events: yield* Queue.unbounded<BrokerEvent>(),
    results: yield* Queue.unbounded<ResultJob>()
  }
  return signals
})

/** What the broker observes about itself, when it does (Broker.ts builds it). */
export interface RouterTelemetry {
  /** Routing spans (`trace-v1`), when the broker's program installed a tracer. */
  readonly spans?: RoutingSpans | undefined
  /** The durable store's commit counters, when the broker has a store. */
  readonly storeCommits?: StoreCommits | undefined
  /** Who is told when readers handle or drop frames (the simulation's ledger), when the program provides one. */
  readonly readers?: ReaderObserverService | undefined
}

/** The broker's routing state and frame dispatch; see the module header. */
export class Router {
  readonly registration: Registration
  readonly membership: Membership
  readonly output: Output
  /** Staged `replace` messages; the broker's staging fiber flushes them when due. */
  readonly staging: ReplaceStaging
  /** The durable store's journal, when the broker has a store. */
  readonly journal: StoreJournal | undefined
  /** Result archive requests and answers (`results-v1`); the broker's results fiber answers through it. */
  readonly results: Results
  /**
   * Readers held back behind parked output (PeerReader.ts): the text one
   * holds before it stops reading (`heldLimit`), and how many times one
   * stopped since the broker started (`BrokerStats.readPauses`).
   */
  readonly heldBack: { readonly limit: number; pauses: number }
  /** Told when readers handle or drop frames (ReaderObserver.ts), when the broker's program provides one. */
  readonly readerObserver: ReaderObserverService | undefined
  private readonly ctx: RouterContext
  private readonly mail: MailDelivery
  private readonly send: Send
  private readonly asks: Asks
  private readonly frames: FrameHandlers
  private readonly custody: Custody
  private readonly topics: Topics
  /** Durable supervisor questions, when the broker keeps them (`signals.questions`). */
  readonly questions: Questions | undefined
  /** Statistics (`stats-v1`): the metrics snapshot. */
  readonly statistics: Stats
  /** The live view (`observe-v1`); the broker's observe fiber sends its watches their ticks. */
  readonly observe: Observe

  /**
   * @param journal the durable store's journal; without one the broker keeps its state in memory only.
   * @param telemetry routing spans, store commit counters and a reader observer, when the broker has them.
   * @param stateEpoch the id of the routing state (`state-epoch-v1`): the store's, or a fresh one without a store.
   */
  constructor(
    options: ResolvedCoreOptions,
    now: () => number,
    signals: RouterSignals,
    journal?: StoreJournal,
    telemetry: RouterTelemetry = {},
    stateEpoch: string = randomUUID()
  ) {
    const registry = new Registry()
    // Late-bound: the output needs the mailbox and the membership feed, which need the output.
    const output = new Output((item, refusedBy, cameBack) => mail.takeBack(item, refusedBy, cameBack), {
      collect: (peer, items, out, departures, rejoins) => membership.collect(peer, items, out, departures, rejoins),
      taken: (peer) => membership.taken(peer),
      parkedOut: (reader) => membership.holds.parkedOut(reader),
      releaseDeparture: (recipient, senderId) => membership.holds.releaseDeparture(recipient, senderId),
      releaseBehindCustody: (recipient, senderId) => membership.holds.releaseBehindCustody(recipient, senderId)
    }, {
      frames: options.outboxCapacity,
      perOutbox: options.outboxChars,
      total: options.outboxCharsTotal
    }, (level, message) => ctx.log(level, message), () => signal(signals.output), (peer) => staging.roomFor(peer))
    const stamps = new BrokerStamps(now)
    const ctx: RouterContext = {
      options,
      now,
      stamps,
      log: (level, message) => {
        Queue.offerUnsafe(signals.events, { level, message: logLine(message) })
      },
      registry,
      output,
      stateEpoch,
      // Features a broker without their backing never grants: questions without a question store.
      withheldFeatures: new Set(signals.questions === undefined ? [QUESTIONS_V1] : []),
      records: new DeliveryRecords({
        windowMs: REPLAY_WINDOW_MS,
        retentionMs: REPLAY_RETENTION_MS,
        maxRecords: options.replayRecords,
        maxBytes: options.replayBytes
      }, journal === undefined ? undefined : {
        set: (record, outcome, at) => journal.recordSent(record, outcome, at),
        rewrite: (sender, id, outcome, record, targetKey) => {
          // An outcome that is a failure ends the message: it will never be written (its sender is told), and its
          // row goes — its own, for the session the caller names; another message's under the id, for another
          // session, stays stored (Mailbox.ts).
          if (!outcome.ok) journal.mailGone(sender, id, targetKey)
          if (record !== undefined) journal.record(sender, recordKeyOf(sender, id), record.fingerprint, outcome, record.at)
        }
      }, (line) => ctx.log("warning", line), (at) => stamps.at(at)),
      journal,
      protocolError: (peer, detail) => {
        // One line per connection: a closing one still reads its `received` frames (known issue 20),
        // and a client that sends bad ones then must not write a line per frame.
        if (!peer.isClosing) ctx.log("warning", `Socket error: connection ${peer.connection.id} closed: ${detail}`)
        closePeer(peer, "destroy")
      },
      refuse: (peer, error) => {
        ctx.log("warning", `Refused connection ${peer.connection.id}: ${error}`)
        output.enqueue(peer, Encode.errorFrame(error))
        closePeer(peer, "end")
      }
    }
    // Late-bound: the staging is made below, and a takeover moves its departure holds (WithheldDepartures.takenOver).
    const membership = new Membership(signals.feed, output, output.departureSide, {
      moveHold: (previous, next, senderKey, recipientKey) => staging.moveDepartureHold(previous, next, senderKey, recipientKey)
    })
    // Late-bound: `abandoned` uses the writer and the custody, which is made below.
    const registration = new Registration(ctx, membership, signals, (peer) => this.abandoned(peer), (items, leftBy) => mail.giveBack(items, leftBy))
    const asks = new Asks(
      ctx,
      (senderKey, messageId) => staging.withdraw(senderKey, messageId, true) !== undefined,
      (messageKey, at, answeredBy) => mail.askClosed(messageKey, at, answeredBy),
      (askerKey, frame) => mail.tellLive(askerKey, frame, ASK_EXPIRY_V1),
      () => signal(signals.asks),
      REPLAY_RETENTION_MS,
      // Read only while an ask's edge would open again; `questions` is made below, before any frame is read.
      (senderKey, messageId) => questions?.holdOf(senderKey, messageId)
    )
    const mail: MailDelivery = new MailDelivery(ctx, {
      // Whether or not its sender is registered now: the route must name the instance given it (review revp P1).
      flushed: (queued, receiver, at) => receipts.addRoute(queued, queued.senderKey, receiver, at),
      lost: (senderKey, messageId) => receipts.dropRoute(senderKey, messageId),
      given: (given, receiver) => receipts.given(given, receiver),
      lostUnread: (senderKey, messageId) => receipts.dropRoute(senderKey, messageId, true),
      droppedUnread: (senderKey, messageId) => receipts.droppedUnread(senderKey, messageId),
      givenMessageOf: (control, receiver) => receipts.givenMessageOf(control, receiver),
      givenTo: (senderKey, messageId) => receipts.givenTo(senderKey, messageId),
      handedOn: (handed, receiver) => receipts.handedOn(handed, receiver)
    }, {
      answerLost: (edge, at) => asks.answerLost(edge, at),
      isOpen: (messageKey, at, question) => asks.isOpen(messageKey, at, question),
      openStaged: (staged, at) => asks.openStaged(staged, at),
      withdrawnEarly: (stale) => asks.withdrawnEarly(stale),
      answeredCopy: (stale) => asks.answeredCopy(stale),
      askLost: (messageKey, deadline, at) => asks.askLost(messageKey, deadline, at)
    }, (key, instance) => registration.mayReturn(key, instance))
    const receipts = new Receipts(
      ctx,
      mail,
      (messageKey) => asks.cancelled(messageKey, ctx.now()),
      {
        find: (senderKey, messageId) => staging.stagedMessage(senderKey, messageId)?.mail,
        withdraw: (senderKey, messageId) => staging.withdraw(senderKey, messageId, false) !== undefined
      },
      (scopeKey, id) => groups.liveHolder(scopeKey, id),
      (messageKey, at) => asks.isOpen(messageKey, at)
    )
    const discovery = new Discovery(ctx, membership, (now) => asks.prune(now))
    const send = new Send(ctx, mail, (replyKey) => asks.edges.get(replyKey), asks.answered)
    const groups = new Groups(ctx)
    const topics = new Topics(ctx)
    const results = new Results(ctx, signals.results, (session) => supervisor.supervisorKeyOf(session))
    const supervisor = new Supervisor(ctx, send, (childKey, messageId, supervisorKey) => {
      const edge = asks.edges.get(recordKeyOf(childKey, messageId))
      return edge !== undefined && edge.askerKey === childKey && edge.targetKey === supervisorKey
    })

    const questions = signals.questions === undefined
      ? undefined
      : new Questions(
        ctx,
        asks.edges,
        signals.questions,
        (session) => supervisor.supervisorOf(session),
        (senderKey, messageId) => staging.stagedAsk(senderKey, messageId)?.mail.targetKey
      )

    // Order matters where two rules could refuse the same send (P45's precedence).
    send.use(groups.stage)
    send.use(supervisor.stage)
    send.use(replyErrorStage)
    send.use(asks.replies)
    // After `asks.replies`: a failed turn's reply reopens the edge that stage just closed (C-DQ-8).
    if (questions !== undefined) send.use(questions.stage)
    send.use(receipts.supersedes)
    send.use(asks.asks)
    send.use(healthStage)
    // Last, as a send's own size check follows the stages: a reply's other refusals (a bad `supersedes`) first; also
    // refuses a reply along a question's edge with no notice here (`Questions.unnotified`).
    if (questions !== undefined) send.use(questions.replySize)
    send.onPrune((at) => asks.prune(at))
    send.onPrune((at) => ctx.records.prune(at))
    send.onPrune((at) => receipts.prune(at))
    send.onPrune((at) => mail.prune(at))
    send.onPrune((at) => registry.recent.expire(at))
    send.onPrune((at) => supervisor.prune(at))
    const staging = new ReplaceStaging(
      ctx,
      (staged, target, leaving) => send.deliverStaged(staged, target, leaving),
      (senderKey, notice) => mail.notify(senderKey, notice),
      () => signal(signals.staging),
      {
        withhold: (recipient, senderId) => membership.holds.withholdDeparture(recipient, senderId),
        release: (recipient, senderId) => membership.holds.releaseDeparture(recipient, senderId)
      }
    )
    send.stageWith(staging)
    send.onPrune((at) => topics.prune(at))
    registration.observe(mail.hooks)
    registration.observe(receipts.hooks)
    registration.observe(groups.hooks)
    registration.observe(supervisor.hooks)
    registration.observe(staging.hooks)
    registration.observe(topics.hooks)
    if (questions !== undefined) registration.observe(questions.hooks)
    const custody = new Custody(ctx, (items, custody) => mail.unconfirmed(items, custody), {
      giveBack: (items) => mail.giveBack(items, () => "unregister"),
      controlsHandedBack: (controls, items) => mail.controlsHandedBack(controls, items)
    })
    registration.observe(custody.hooks)
    // Last: after the mailbox's flush and whatever else a registration gives the connection, a reply given it
    // names its instance, and is not told of as answered elsewhere (reply-elsewhere-v1).
    registration.observe(asks.hooks)
    if (telemetry.spans !== undefined) send.traceWith(telemetry.spans)
    const statistics = new Stats(ctx, {
      registry,
      unregistered: () => registration.unregisteredCount,
      routed: send.counts,
      mailboxDepth: () => mail.size,
      stagingDepth: () => staging.size,
      queuedChars: () => output.queuedChars,
      backpressureWaits: () => output.backpressureWaits,
      asks: asks.edges,
      storeCommits: telemetry.storeCommits
    })
    const observe = new Observe(ctx, {
      traffic: send.traffic,
      edges: asks.edges,
      mailbox: () => mail.size,
      staged: () => staging.size,
      unregistered: () => registration.unregisteredCount
    }, () => signal(signals.observe))

    this.ctx = ctx
    this.heldBack = { limit: options.heldLimit, pauses: 0 }
    this.readerObserver = telemetry.readers
    this.journal = journal
    this.output = output
    this.membership = membership
    this.registration = registration
    this.mail = mail
    this.send = send
    this.asks = asks
    this.staging = staging
    this.frames = {
      health: {
        unregistered: true,
        handle: (peer, raw) => {
          const frame = decodeClientFrame.health(raw)
          if (isFrameDecodeError(frame)) return ctx.protocolError(peer, frame.message)
          output.enqueue(peer, Encode.healthOkFrame(frame.requestId))
        }
      },
      ...registration.frames,
      ...discovery.frames,
      ...send.frames,
      ...asks.frames,
      ...receipts.frames,
      ...supervisor.frames,
      ...topics.frames,
      ...results.frames,
      ...questions?.frames,
      ...custody.frames,
      ...statistics.frames,
      ...observe.frames
    }
    this.statistics = statistics
    this.observe = observe
    this.custody = custody
    this.topics = topics
    this.results = results
    this.questions = questions
  }

  /** Live registered sessions. */
  get sessionCount(): number {
    return this.ctx.registry.live
  }

  /**
   * Mail queued for sessions that are away and lost-mail notices owed to
   * absent senders (MailDelivery.held): what a broker without a store would
   * lose by exiting. Undefined when it holds none.
   */
  heldMail(): HeldMail | undefined {
    return this.mail.held()
  }

  /**
   * Runs the time-based clean-ups a send runs first (mail past its
   * retention expires, its sender told or owed a notice): the idle
   * watcher's, when no session is there to send.
   */
  prune(now: number): void {
    this.send.prune(now)
    this.output.wakeTouched()
  }

  /**
   * The answer a replay record (P46) gives a `send` of session `senderKey`'s
   * that `peer`'s reader held and never handled, or undefined when none
   * does (SendReplays.recordedAnswer; PeerReader.refuseHeldSends at a takeover).
   */
  recordedAnswer(peer: Peer, senderKey: string, frame: { readonly [key: string]: unknown }): OutFrame | undefined {
    return this.send.replays.recordedAnswer(peer, senderKey, frame)
  }

  /**
   * When an ask edge whose asker is told of its expiry (`ask-expiry-v1`) is
   * next due, or undefined while none is open: the broker's ask expiry fiber
   * sleeps until then (or `signals.asks`) and calls `expireAsks`.
   */
  nextAskExpiry(): number | undefined {
    return this.asks.nextExpiry()
  }

  /**
   * Closes the ask edges past their deadline at `now` (their askers told,
   * `ask-expiry-v1`): the ask expiry fiber's step when `nextAskExpiry` is
   * due. Not `prune`, which runs at most once per millisecond: an edge that
   * opened already past its deadline (a staged ask delivered late) in a
   * millisecond a send had pruned would stay due, and the fiber would spin
   * until the clock moved.
   */
  expireAsks(now: number): void {
    this.asks.prune(now)
    this.output.wakeTouched()
  }

  /**
   * The broker's own shutdown begins (AdoptedConnections.closeAll, before it closes the connections): the sessions
   * those closes end leave their durable waits stored as a crash would — a question's edge stays open
   * (Questions.brokerStopping; C-DQ-6, review rvw72 probe 1), and a `replace`-staged message stays staged, neither
   * dropped nor handed over (ReplaceStaging.brokerStopping).
   */
  stopping(): void {
    this.questions?.brokerStopping()
    this.staging.brokerStopping()
  }

  /** The broker clock, in milliseconds. */
  currentTime(): number {
    return this.ctx.now()
  }

  /** A new connection (see `Registration.attach`). */
  attach(peer: Peer): void {
    this.registration.attach(peer)
  }

  /**
   * `peer`'s writing is over (it closes, or its client left it for another
   * connection: `rejoin-v1`): the write in progress, if any, is settled — the
   * part its socket took is recorded as written (into custody, for a
   * `received-v1` client), and the part it never took is kept on the peer
   * (`Peer.untakenRest`), in order, to go back like unwritten output with
   * whichever comes first: the client's rejoin (`abandoned`) or the close
   * (`detach`). Once: a second call changes nothing.
   */
  abandonWrites(peer: Peer): void {
    const batch = peer.writer.abandon()
    if (batch === undefined) return
    const written = peer.connection.unfinishedWrite() ?? batch.frames.length
    this.written(peer, batch, written)
    const rest = this.output.writes.unwrittenOf(batch, written)
    if (rest.length > 0) peer.untakenRest = rest
  }

  /**
   * `peer`'s client registered its session again on another connection
   * (`rejoin-v1`): it left this one, which will not be written again — also
   * when its close already began (its `finish` may be waiting in the
   * transport's destroy). What the client was given here and never confirmed
   * reading (custody), then what the socket never took of the write in
   * progress, oldest first — the new connection gets these first
   * (Registration); the close finds them gone.
   */
  abandoned(peer: Peer): ReadonlyArray<Written> {
    this.abandonWrites(peer)
    return this.takeBack(peer, [])
  }

  /**
   * The connection is gone; `unwritten` is what its outbox still held. Before
   * it goes back: what its client never confirmed, then the untaken rest of
   * its last write (`abandonWrites`) — unless a rejoin took them already.
   */
  detach(peer: Peer, unwritten: ReadonlyArray<OutboundItem>): void {
    this.observe.detached(peer)
    // A takeover's hold behind this connection's custody (CustodyHold.ts) ends first, so what comes back
    // here is not held; what the hold kept goes back after it, then the senders it held offer again.
    // A carried hold that still waits for another close keeps this one's held senders' mail at its front.
    const hold = this.output.holds.endHold(peer)
    const back = this.takeBack(peer, unwritten)
    if (hold !== undefined && hold.pending > 0) return this.registration.detach(peer, this.output.holds.keepReturned(hold, back))
    // Mail the held senders sent the session while it was away went to its mailbox at once: what comes back
    // now (with the session still away, requeued there) is older, and goes ahead of it.
    const sentWhileAway = hold === undefined ? undefined : this.mail.sentWhileHeld(hold.key, hold.senders)
    this.registration.detach(peer, hold === undefined || hold.items.length === 0 ? back : [...back, ...hold.items])
    if (sentWhileAway !== undefined) this.mail.queueBehind(sentWhileAway)
    if (hold === undefined) return
    this.output.holds.heldReleased(hold)
    // `ask-expiry-v1`: a settling answer held behind a reply the hold kept follows it now (ParkedReplies.ts).
    if (this.output.replies.holding) this.output.replies.custodyEnded()
    // Cancels put off until now (CustodyHolds.deferCancel): what went to the session's connection is known.
    for (const again of hold.cancels) again()
  }

  /**
   * Mail written and never confirmed read, then the untaken rest of the write in progress, then the
   * control frames a takeover left waiting for that write (`Peer.controlsAtClose`), then `after`:
   * oldest first. Each is taken once (a rejoin, then the close, each get what the other has not).
   */
  private takeBack<A>(peer: Peer, after: ReadonlyArray<A>): ReadonlyArray<Written | A> {
    const unread = this.custody.detached(peer)
    const rest = peer.untakenRest
    peer.untakenRest = undefined
    const controls = peer.controlsAtClose
    peer.controlsAtClose = undefined
    if (rest === undefined && controls === undefined) return unread.length === 0 ? after : [...unread, ...after]
    return [...unread, ...(rest ?? []), ...(controls ?? []), ...after]
  }

  /**
   * Handles a batch of frames from one connection (those from `from` up to
   * `to`), stopping if it gets closed; returns where it stopped (`to` when it
   * handled them all). A registered session's `lastSeen` (C-HLT-4) is
   * stamped once per batch: one clock read and one number write, whatever
   * the batch holds.
   */
  handleBatch(peer: Peer, frames: ReadonlyArray<string>, from = 0, to = frames.length): number {
    this.seen(peer)
    let i = from
    while (i < to && !peer.isClosing) this.handleFrame(peer, frames[i++]!)
    return i
  }

  /** Stamps `lastSeen` (C-HLT-4) of the session `peer` owns: a clock read and a number write. */
  seen(peer: Peer): void {
    const session = peer.session
    if (session !== undefined) session.health.lastSeen = this.ctx.now()
  }

  /** Dispatches one frame text (P03: garbage closes the connection, without a reply). */
  handleFrame(peer: Peer, text: string): void {
    const frame = parseFrameText(text)
    if (isFrameDecodeError(frame)) return this.ctx.protocolError(peer, frame.message)
    const handler = Object.hasOwn(this.frames, frame.type) ? this.frames[frame.type] : undefined
    if (handler === undefined) return this.ctx.protocolError(peer, `unknown frame type ${shownValue(frame.type)}`)
    if (
      peer.state !== "registered" && handler.unregistered !== true &&
      !(peer.state === "observing" && handler.observer === true)
    ) {
      return this.ctx.protocolError(
        peer,
        peer.state === "observing" ? `${shownValue(frame.type)} frame from an observer` : `${shownValue(frame.type)} frame before registration`
      )
    }
    try {
      handler.handle(peer, frame)
    } catch (defect) {
      this.defect(peer, frame.type, defect)
    }
  }

  /**
   * A frame handler threw: a broker bug, or a value no check foresaw (a
   * `String()` of a deeply nested array once overflowed the stack). Thrown
   * from the socket's `data` listener it would end the process and every
   * session with it; instead the connection that sent the frame is closed
   * (what its frame had changed by then stays) and the error is logged with
   * its stack, so it can be reported. Everyone else is served on.
   */
  private defect(peer: Peer, type: string, defect: unknown): void {
    const shown = defect instanceof Error ? (defect.stack ?? defect.message) : shownValue(defect)
    this.ctx.log(
      "warning",
      `Broker bug: handling a ${shownValue(type)} frame from connection ${peer.connection.id} threw; ` +
        `the connection is closed, other sessions are unaffected. Please report this with the error: ${shown}`
    )
    closePeer(peer, "destroy")
  }

  /** Drops a connection for a protocol error found outside frame handling (an oversize frame). */
  reportProtocolError(peer: Peer, detail: string): void {
    this.ctx.protocolError(peer, detail)
  }

  /**
   * The first `count` frames of `batch` were written to `peer`'s socket: the
   * mail they carried leaves the durable store, at once or when the client
   * confirms it read it (Custody.ts).
   */
  written(peer: Peer, batch: WriteBatch, count: number): void {
    this.custody.written(peer, batch, count)
  }

  /**
   * Restores what the durable store kept (at startup, before any connection):
   * replay records, open ask edges, asks withdrawn after their reply closed
   * them, the failure notices owed to senders (in the order they were
   * issued), the `expired` owed for asks that went silently as answered,
   * and the mail not yet written, queued again for its recipients
   * in the order it was accepted — each reply among it making the ask it
   * answered known answered again (Asks.restoreAnswered).
   */
  restore(recovered: Recovered): void {
    const now = this.ctx.now()
    const journal = this.ctx.journal
    this.restoreStamps(recovered, now)
    // Past every given-back row's mark too: a seq of this run never equals one, so a row accepted after the
    // restart is never taken for one accepted before that return (`restoreOrder`).
    journal?.restoreSeq(nextSeqPastMarks(recovered.mail, recovered.nextSeq))
    journal?.restoreNoticeSeq(recovered.nextNoticeSeq)
    for (const r of recovered.records) this.ctx.records.restore(r.sender, r.key, r.fingerprint, r.outcome, r.at)
    // Each fires at the due time it was stored with, on the last run's clock, but no later than its own timeout from
    // now: a clock set back across the restart must not stretch it by the step (review revbz bz1; docs/store.md). A
    // row without one (this stop's earlier builds): a question's edge at its deadline (on the clock), an ask's at
    // its deadline (a stamp) less how far the stored stamps lead this clock.
    const lead = this.ctx.stamps.restoredLead
    for (const edge of recovered.edges) {
      const stored = edge.dueAt ?? (edge.question === true ? edge.deadline : edge.deadline - lead)
      const dueAt = edge.openedAt === undefined ? stored : Math.min(stored, now + (edge.deadline - edge.openedAt))
      if (dueAt > now) this.asks.edges.restore({ ...edge, dueAt })
    }
    for (const w of recovered.withdrawals) this.asks.restoreWithdrawn(w.messageKey, w.at, now)
    for (const notice of recovered.notices) this.mail.restoreNotice(notice, now)
    // Before the mail: a restored reply takes up the debt stored for it (MailDelivery.restoreSilenced, StaleAsks.ts).
    for (const silenced of recovered.silenced) this.mail.restoreSilenced(silenced)
    // Every stored message known to the journal before any is restored: a question dropped as it is restored
    // (stale: its edge closed) has its debt stored with the reply that closed that edge, restored after it
    // (StoreJournal.askSilencedFor, as before the restart; review revz Z4).
    if (journal !== undefined) for (const stored of recovered.mail) journal.restoredMail(stored)
    // Each its place in this run's acceptance order, in the order the last run accepted it, before any send of this
    // run takes one (`acceptInSeqOrder`); queued in the order the mailbox had it: mail given back before the
    // restart at its return (`restoreOrder`).
    for (const stored of restoreOrder(acceptInSeqOrder(recovered.mail, this.ctx.stamps))) {
      // A reply carries the edge it closed: its ask is known answered again, so a withdrawal now is remembered.
      const mail = boundedAsk(stored.mail, now)
      this.asks.restoreAnswered(mail, now)
      this.mail.restore(mail)
    }
    this.mail.restoreDone()
  }

  /**
   * No stamp of this run below one the last run gave (its clock may have been ahead of this host's): the
   * stamps start at the highest it stored, or (a store written before it stored one) at its restored mail's
   * latest `brokerReceivedAt` — but at most `MAX_FLOOR_AHEAD_MS` past the clock, so that a store written under
   * a far-future clock does not freeze them: then they start there, it is logged, and the lower highest is
   * stored over the far one. How far that highest, uncapped, leads the clock is what a restored ask stored
   * without its due time falls back on (BrokerStamps.restoredLead).
   */
  private restoreStamps(recovered: Recovered, now: number): void {
    let floor = recovered.stampHigh ?? Number.NEGATIVE_INFINITY
    for (const stored of recovered.mail) if (stored.mail.brokerReceivedAt > floor) floor = stored.mail.brokerReceivedAt
    this.ctx.stamps.restoredFrom(floor, now)
    const cap = now + MAX_FLOOR_AHEAD_MS
    const capped = floor > cap
    if (capped) {
      this.ctx.log(
        "warning",
        `The store's stamps reach ${new Date(floor).toISOString()}, more than a day past this host's clock: stamps start at ${
          new Date(cap).toISOString()
        } instead, and a client may see a stamp below one the last run gave`
      )
      floor = cap
    }
    this.ctx.stamps.floor(floor)
    this.ctx.journal?.restoreStamps(this.ctx.stamps, capped ? Number.NEGATIVE_INFINITY : recovered.stampHigh ?? Number.NEGATIVE_INFINITY)
  }

  /**
   * A send whose acknowledgement waited for a commit that failed
   * (JournalAcks.refuseHeld) is refused with the store's failure `reason`,
   * as a send made now would be. With `dropFor`, only when its mail for that
   * session is still queued and never stored: it is dropped, never to be
   * delivered; without, it was dropped already (another acknowledgement of
   * the same send). True when it was refused.
   */
  refuseUnstored(peer: Peer, senderKey: string, messageId: string, reason: string, dropFor: string | undefined): boolean {
    const refusal: Outcome = {
      ok: false,
      code: DeliveryCode.DeliveryFailed,
      reason: Reason.storeFailed(reason),
      retryable: true
    }
    if (dropFor !== undefined && !this.mail.refuseUnstored(senderKey, messageId, dropFor, refusal)) return false
    this.output.forceEnqueue(peer, Encode.deliveryFailedFrame(messageId, refusal.code, refusal.reason, true))
    return true
  }

  /** The broker's metrics now (`stats-v1`, OTLP metrics). */
  metrics(): BrokerStatsSnapshot {
    return this.statistics.snapshot()
  }

  /** For diagnostics and tests. */
  stats(): RouterStats {
    const holds = this.ctx.output.holds.counts
    const readers = this.mail.readerCounts
    return {
      sessions: this.ctx.registry.live,
      unregistered: this.registration.unregisteredCount,
      mailbox: this.mail.size,
      asks: this.asks.edges.size,
      scopes: this.ctx.registry.scopeCount(),
      departed: this.ctx.registry.recent.size,
      queuedChars: this.ctx.output.queuedChars,
      staged: this.staging.size,
      topicEntries: this.topics.size,
      topicRecords: this.topics.recordCount,
      topicBytes: this.topics.recordBytes,
      topicPublished: this.topics.publishedCount,
      ownParks: this.ctx.output.ownParks,
      parkedBehindOwn: this.ctx.output.parkedBehindOwn,
      waitsBehindOwn: this.ctx.output.waitsBehindOwn,
      offeredAhead: this.ctx.output.drain.offeredAhead,
      answersBehindReplies: this.ctx.output.replies.answersHeld,
      answersReleasedOffered: this.ctx.output.replies.answersOffered,
      answersReleasedForced: this.ctx.output.replies.answersForced,
      answersDropped: this.ctx.output.replies.answersDropped,
      answersReleasedCustody: this.ctx.output.replies.answersCustody,
      departuresHeld: this.ctx.output.departureSide.departuresHeld,
      returnsHeld: this.membership.holds.returnsHeld,
      custodyHoldsTaken: holds.taken,
      custodyHoldsCarried: holds.carried,
      custodyHoldsAdopted: holds.adopted,
      custodyHeldMessages: holds.kept,
      custodyHeldWaits: holds.waits,
      custodyHeldDepartures: holds.departures,
      custodyHeldReturns: holds.returns,
      custodyAwaitedReplies: holds.awaitedReplies,
      withdrawnCopiesKept: readers.copiesKept,
      withdrawnCopiesGiven: readers.copiesGiven,
      withdrawnCopiesHeld: readers.copiesHeld,
      controlsKept: readers.controlsKept,
      controlsKeptGiven: readers.controlsGiven
    }
  }
}
