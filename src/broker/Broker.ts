/**
 * `Broker`: the broker as a service, without a transport. It owns the Router,
 * its service fibers (event logger, membership notifier, registration
 * watcher, idle watcher, the ask expiry fiber (`ask-expiry-v1`), the result
 * archive's fiber, and — when a
 * `QuestionStore` is provided — the question fiber) and `accept`, which runs
 * one connection's actor.
 * The Unix-socket broker (`runBroker`) and the in-memory simulation both
 * build on it; closing the Scope it was made in shuts it down. A
 * `ResultArchive` in its context keeps the reports of `results-v1` (durable
 * with the SQLite layer); without one, a memory-only archive does. With
 * `options.store` (a `MailStore`) it restores its routing state at startup
 * and commits every change before revealing it (StoreJournal.ts,
 * StoreWriter.ts): durable mode, docs/store.md. Under a tracer other than
 * effect's default it makes routing spans for traced sends (RoutingSpans.ts);
 * with `TelemetryEnabled.metrics` it registers its OTLP metric series
 * (MetricSeries.ts); `metrics` is its snapshot (docs/observability.md). A
 * `ReaderObserver` in its context is told which frames its readers handle
 * and which held ones they drop (ReaderObserver.ts; the simulation's ledger).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Broker } from "effect-intercom/broker"
 * import { makeInMemoryNetwork } from "effect-intercom/transport"
 *
 * const program = Effect.gen(function*() {
 *   const network = yield* makeInMemoryNetwork()
 *   const broker = yield* Broker.make({ idleExit: null })
 *   yield* network.listen("mem://broker", broker.accept)
 *   // clients dial it with IntercomClient.make({ socketPath: "mem://broker", dial: dialInMemory(network), ... })
 * })
 * ```
 */
import { Clock, Context, Deferred, Effect, Layer, Option, Queue, type Scope, Tracer } from "effect"
import { TelemetryEnabled } from "../observability/Telemetry.ts"
import type { BrokerStatsSnapshot } from "../protocol/stats.ts"
import { registerBrokerMetrics } from "./MetricSeries.ts"
import { RoutingSpans } from "./RoutingSpans.ts"
import { StoreCommits } from "./StoreCommits.ts"
import { ResultArchive } from "../store/ResultArchive.ts"
import { QuestionStore } from "../store/QuestionStore.ts"
import type { Connection } from "../transport/Connection.ts"
import { AdoptedConnections } from "./Adopted.ts"
import { runConnection } from "./ConnectionActor.ts"
import { type BrokerCoreOptions, checkCoreOptions, resolveCoreOptions } from "./options.ts"
import type { BrokerOptionError } from "./errors.ts"
import { AdmissionGate } from "./AdmissionGate.ts"
import type { HeldMail } from "./MailDelivery.ts"
import { runResults } from "./Results.ts"
import { makeRouterSignals, REPLAY_RETENTION_MS, Router, type RouterStats } from "./Router.ts"
import { ReaderObserver } from "./ReaderObserver.ts"
import { type BrokerEvent, logLine, signal } from "./RouterContext.ts"
import type { MailStoreError } from "../store/MailStore.ts"
import { StoreJournal } from "./StoreJournal.ts"
import { commitPending, runStoreWriter } from "./StoreWriter.ts"
import { runQuestionWorker } from "./QuestionWorker.ts"

/** What a running broker offers its transport and its owner. */
export interface BrokerService {
  /** Runs one connection's actor until the connection closes. */
  readonly accept: (connection: Connection) => Effect.Effect<void, never, Scope.Scope>
  /**
   * Takes one connection over with no fiber or Scope of its own (Adopted.ts):
   * the Unix-socket listener's way (`serveUnix(path, broker)`). The broker
   * closes it when it ends, and at shutdown (`closeConnections`).
   */
  readonly adopt: (connection: Connection) => void
  /**
   * Closes every adopted connection and waits until each has given back
   * what it never wrote; run it before the listener destroys their sockets.
   * The broker's own shutdown runs it too.
   */
  readonly closeConnections: Effect.Effect<void>
  /** Completes when the broker has been idle long enough to exit (P92). */
  readonly idleExit: Effect.Effect<void>
  /** Live registered sessions right now. */
  readonly sessionCount: Effect.Effect<number>
  /** Sizes of the routing tables, for diagnostics and invariant checks. */
  readonly stats: Effect.Effect<BrokerStats>
  /** The broker's metrics now: what `stats-v1` answers and the OTLP metric series read. */
  readonly metrics: Effect.Effect<BrokerStatsSnapshot>
}

/** Sizes of the routing tables, and how many connections wait for admission. */
export interface BrokerStats extends RouterStats {
  /** Connections accepted and waiting for a place to register (AdmissionGate, Waiting.ts). */
  readonly waiting: number
  /** Connections taken over with `adopt` (no fiber of their own), admitted and not yet closed (Adopted.ts). */
  readonly adopted: number
  /** Connections that have had to wait for admission since the broker started (AdmissionGate). */
  readonly admissionWaits: number
  /** Of those, the ones that ended (or were dropped) before a place passed to them, unregistered (Waiting.ts). */
  readonly waitsWithdrawn: number
  /** Times a reader held back behind parked output stopped reading, past `heldLimit` of held text, since the broker started (PeerReader.ts). */
  readonly readPauses: number
}

/**
 * How often connections are checked for frames begun and not finished: one
 * begun is closed if it is still unfinished at the next-but-one check, so
 * within twice this (5 s, docs/security.md).
 */
const STALL_CHECK_MS = 2_500

/**
 * Sleeps `ms` (a deadline less the clock's reading) rounded up to whole
 * milliseconds: what the timer fibers below sleep toward their deadlines.
 * Clock readings are floats and a Duration counts nanoseconds, so a deadline
 * less than half a nanosecond past the reading — a float's rounding, or a
 * deadline set a fraction of a millisecond after another — asked for a sleep
 * of no length, which does not move the clock: the fiber woke at once and
 * spun until something else moved it (under TestClock, a simulation's soak
 * spun for a minute of CPU so; test/broker/sleep-fraction.test.ts). A wake
 * up to a millisecond late is the price.
 */
const sleepWhole = (ms: number): Effect.Effect<void> => Effect.sleep(Math.ceil(ms))

/** The log line of an idle exit put off because mail for absent sessions is held only in memory. */
const idleDeferredLine = (held: HeldMail): string =>
  `Idle: no sessions left, but not exiting: ${held.messages} queued message(s) for absent sessions, ` +
  `${held.notices} lost-mail notice(s) owed to absent senders and ${held.controls} cancel or supersede ` +
  `control(s) kept for absent clients are held only in memory (--durability memory) ` +
  `until delivered or expired (the first expires at ${new Date(held.until).toISOString()})`

const logEvent = (event: BrokerEvent) =>
  event.level === "info" ? Effect.logInfo(event.message) : Effect.logWarning(event.message)

const make = (
  options: BrokerCoreOptions = {}
): Effect.Effect<BrokerService, MailStoreError | BrokerOptionError, Scope.Scope> =>
  Effect.gen(function*() {
    // An option it cannot hold (NaN, negative, fractional, infinite) fails here, before anything starts.
    yield* checkCoreOptions(options)
    const resolved = resolveCoreOptions(options)
    const clock = yield* Clock.Clock
    // Durable supervisor questions (`questions-v1`) only with a store to keep them in.
    const questionStore = yield* Effect.serviceOption(QuestionStore)
    const signals = {
      ...(yield* makeRouterSignals(Option.isSome(questionStore))),
      // The store writer's second wake-up: changes no output waits for, committed LAZY_FLUSH later (StoreWriter.ts).
      storeLazy: yield* Queue.sliding<void>(1)
    }
    const now = () => clock.currentTimeMillisUnsafe()
    const store = options.store
    const journal = store === undefined ? undefined : new StoreJournal(
      () => signal(signals.store),
      REPLAY_RETENTION_MS,
      () => signal(signals.storeLazy),
      // Released acknowledgements go after what their connections hold: flushed with the batch that
      // released them (a read's), or by the output fiber (a commit's; Output asks it to).
      (ready) => {
        for (const held of ready) {
          router.output.forceEnqueue(held.peer, held.frame())
          // A notice that must go right behind it (HeldAckWithNotice: a replayed ask's answered-elsewhere).
          const trailing = held.trailing()
          if (trailing !== undefined) router.output.forceEnqueue(held.peer, trailing)
        }
      },
      // After a failed commit, a held send whose mail never left the mailbox is refused, not left waiting.
      (held, reason, dropFor) => router.refuseUnstored(held.peer, held.senderKey, held.id, reason, dropFor)
    )
    const nanos = () => clock.currentTimeNanosUnsafe()
    // Observability: routing spans only under a tracer that goes somewhere (trace-v1), commit timing with a store.
    const tracer = yield* Effect.tracer
    const storeCommits = store === undefined ? undefined : new StoreCommits()
    // What the last run stored, read before the Router is made: its state epoch is the Router's (`state-epoch-v1`).
    const recovered = store === undefined ? undefined : yield* store.load(now() - REPLAY_RETENTION_MS)
    // Told when readers handle or drop frames, when the program provides one (the simulation's ledger).
    const readers = Option.getOrUndefined(yield* Effect.serviceOption(ReaderObserver))
    const router = new Router(resolved, now, signals, journal, {
      spans: tracer === Tracer.nativeTracer ? undefined : new RoutingSpans(tracer, nanos),
      storeCommits,
      readers
    }, recovered?.stateEpoch)
    const timing = storeCommits === undefined ? undefined : { commits: storeCommits, nanos }
    if (store !== undefined && journal !== undefined && recovered !== undefined) {
      // What the last run stored comes back before the first connection is accepted.
      router.restore(recovered)
      const log = (level: BrokerEvent["level"], message: string) =>
        Queue.offerUnsafe(signals.events, { level, message: logLine(message) })
      yield* Effect.forkScoped(runStoreWriter(journal, store, signals.store, signals.storeLazy, now, log, timing))
      // At shutdown (after the connections closed and gave back what they never wrote): one last commit.
      yield* Effect.addFinalizer(() => commitPending(journal, store, now, log, timing))
    }
    const admission = new AdmissionGate(resolved.maxUnregistered)
    const adopted = new AdoptedConnections(router, admission, Effect.runForkWith(yield* Effect.context<never>()))
    // OTLP metric series read the metrics snapshot when collected, and only when metrics are exported.
    if ((yield* TelemetryEnabled).metrics) yield* registerBrokerMetrics(() => router.metrics(), now)
    const idleExit = yield* Deferred.make<void>()

    // The result archive (`results-v1`): the one provided (durable or not), else a memory-only one.
    // Its fiber is the archive's only user; the Router bounds what waits in its queue (Results.ts).
    const archive = Option.getOrElse(yield* Effect.serviceOption(ResultArchive), () => ResultArchive.makeMemory())
    yield* Effect.forkScoped(runResults(archive, signals.results, () => router.results))
    // The one fiber that changes saved questions (C-DQ-3); the Router only queues work for it.
    if (router.questions !== undefined && signals.questions !== undefined && Option.isSome(questionStore)) {
      yield* Effect.forkScoped(runQuestionWorker(router.questions, questionStore.value, signals.questions))
    }

    yield* Effect.forkScoped(Effect.forever(
      Effect.flatMap(Queue.takeAll(signals.events), (events) => Effect.forEach(events, logEvent, { discard: true })),
      { disableYield: true }
    ))

    // Output queued outside a reader's batch (timers, the notifier, a drainer) is written from here.
    yield* Effect.forkScoped(Effect.forever(
      Queue.take(signals.output).pipe(Effect.andThen(Effect.sync(() => router.output.wakeTouched()))),
      { disableYield: true }
    ))

    // Membership changes are announced once per batch of changes, not once per change: by the
    // reader at the end of its batch, else here; a round that woke many writers is followed by a
    // short pause (Membership.ts, "Pacing" and "When").
    yield* Effect.forkScoped(Effect.forever(
      Queue.take(signals.feed).pipe(
        Effect.andThen(Effect.yieldNow),
        Effect.andThen(Effect.suspend(() => {
          const membership = router.membership
          const pause = membership.pause > 0 ? membership.pause : membership.notify()
          return pause > 0 ? Effect.andThen(Effect.sleep(pause), Effect.sync(() => membership.paused())) : Effect.void
        }))
      ),
      { disableYield: true }
    ))

    // Registration timeout (P15): sleep until the oldest unregistered connection's deadline.
    yield* Effect.forkScoped(Effect.forever(
      Effect.suspend(() => {
        const oldest = router.registration.oldestUnregistered()
        if (oldest === undefined) return Queue.take(signals.registration)
        const wait = oldest.unregisteredSince + resolved.registrationTimeoutMs - clock.currentTimeMillisUnsafe()
        return wait > 0 ? sleepWhole(wait) : Effect.sync(() => router.registration.registrationTimedOut(oldest))
      }),
      { disableYield: true }
    ))

    // Replace coalescing (`delivery-v1`): sleep until the oldest staged message is due, then hand
    // over every due one. Deadlines only grow, so a newly staged message never needs an earlier wake.
    // A due message whose recipient's outbox is full leaves the deadline order (ReplaceStaging.roomFor
    // hands it over when there is room): it never brings this fiber back before the next deadline.
    yield* Effect.forkScoped(Effect.forever(
      Effect.suspend(() => {
        const due = router.staging.nextDeadline()
        if (due === undefined) return Queue.take(signals.staging)
        const now = clock.currentTimeMillisUnsafe()
        return due > now ? sleepWhole(due - now) : Effect.sync(() => router.staging.flushDue(now))
      }),
      { disableYield: true }
    ))

    // Ask expiry notices (`ask-expiry-v1`): while an ask whose asker is told of its expiry is open,
    // sleep until the earliest edge deadline (or until such an ask opens due sooner), then prune — the
    // broker's clock ends the ask, and its asker reads the notice behind any reply accepted before it.
    yield* Effect.forkScoped(Effect.forever(
      Effect.suspend(() => {
        const due = router.nextAskExpiry()
        if (due === undefined) return Queue.take(signals.asks)
        const now = clock.currentTimeMillisUnsafe()
        if (due > now) return Effect.raceFirst(sleepWhole(due - now), Queue.take(signals.asks))
        return Effect.sync(() => router.expireAsks(now))
      }),
      { disableYield: true }
    ))

    // The live view (`observe-v1`): sleep until the earliest watch is due, or until a watch is added
    // (it may be due sooner), then send every due one its frame.
    yield* Effect.forkScoped(Effect.forever(
      Effect.suspend(() => {
        const due = router.observe.nextDue()
        if (due === undefined) return Queue.take(signals.observe)
        const now = clock.currentTimeMillisUnsafe()
        if (due > now) return Effect.raceFirst(sleepWhole(due - now), Queue.take(signals.observe))
        return Effect.sync(() => {
          router.observe.tick(now)
          router.output.wakeTouched()
        })
      }),
      { disableYield: true }
    ))

    // A frame begun and not finished between two checks is a stalled writer, or a slowloris.
    yield* Effect.forkScoped(Effect.forever(
      Effect.sleep(STALL_CHECK_MS).pipe(Effect.andThen(Effect.sync(() => router.registration.closeStalledFrames(STALL_CHECK_MS)))),
      { disableYield: true }
    ))

    // Idle exit (P92): measured from the last leave — or, while no session has come yet,
    // from startup, so that a broker nobody uses does not run forever — and re-checked
    // after every wait. Without a store, mail queued for absent sessions and lost-mail
    // notices owed to absent senders live only in this process (P49): while it holds any,
    // the broker does not exit, and the idle period starts once the last of it is gone
    // (delivered, or expired and pruned here, as no send comes to prune it).
    const idleExitMs = resolved.idleExitMs
    if (idleExitMs !== null) {
      const startedAt = now()
      const mailOnlyInMemory = store === undefined
      // This fiber's own: whether it is waiting out held mail (logged once per wait), and
      // when held mail last ran out with no session live.
      let holding = false
      let clearedAt = startedAt
      yield* Effect.forkScoped(Effect.forever(
        Effect.suspend(() => {
          if (router.sessionCount > 0) {
            // A session's leave is later than anything it received: the idle period starts there.
            holding = false
            return Queue.take(signals.idle)
          }
          const time = now()
          let held = mailOnlyInMemory ? router.heldMail() : undefined
          if (held !== undefined && held.until <= time) {
            router.prune(time)
            held = router.heldMail()
          }
          if (held !== undefined) {
            const deferred = holding ? Effect.void : Effect.logInfo(idleDeferredLine(held))
            holding = true
            // Until some of it expires, or a session comes and goes (it may have taken the mail).
            return Effect.andThen(
              deferred,
              Effect.raceFirst(sleepWhole(Math.max(1, held.until - time)), Queue.take(signals.idle))
            )
          }
          if (holding) {
            holding = false
            clearedAt = time
          }
          const idleSince = Math.max(router.registration.lastLeftAt ?? startedAt, clearedAt)
          const wait = idleSince + idleExitMs - time
          return wait > 0 ? sleepWhole(wait) : Deferred.succeed(idleExit, undefined).pipe(Effect.andThen(Effect.never))
        }),
        { disableYield: true }
      ))
    }

    // Before the final commit (finalizers run last first): adopted connections give back what they never wrote.
    yield* Effect.addFinalizer(() => adopted.closeAll)

    return {
      accept: (connection) => runConnection(router, connection, admission),
      adopt: (connection) => adopted.adopt(connection),
      closeConnections: adopted.closeAll,
      idleExit: Deferred.await(idleExit),
      sessionCount: Effect.sync(() => router.sessionCount),
      stats: Effect.sync(() => ({
        ...router.stats(),
        waiting: admission.waiting,
        adopted: adopted.size,
        admissionWaits: admission.waited,
        waitsWithdrawn: admission.withdrawn,
        readPauses: router.heldBack.pauses
      })),
      metrics: Effect.sync(() => router.metrics())
    } satisfies BrokerService
  })

/**
 * The broker service. `Broker.make` starts one in the current Scope;
 * `Broker.layer` does the same as a Layer.
 */
export class Broker extends Context.Service<Broker, BrokerService>()("effect-intercom/broker/Broker") {
  /** Starts a broker (its Router and service fibers) in the current Scope. */
  static readonly make: (
    options?: BrokerCoreOptions
  ) => Effect.Effect<BrokerService, MailStoreError | BrokerOptionError, Scope.Scope> = make
  /** A Layer that starts a broker for the lifetime of the Layer. */
  static readonly layer = (options: BrokerCoreOptions = {}): Layer.Layer<Broker, MailStoreError | BrokerOptionError> =>
    Layer.effect(Broker, make(options))
}
