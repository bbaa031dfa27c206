/**
 * `IntercomClient`: the programmatic entry point for Effect programs.
 *
 * - Lazy: nothing connects until the first operation; concurrent first uses
 *   share one attempt (C-TOOL-14).
 * - Auto-spawns the broker when none answers (P93).
 * - Reconnects after a drop with capped exponential backoff and jitter,
 *   re-registering the same session id with what the session had announced
 *   (name, status, model, requested features); a liveness probe (P96) turns a
 *   silent broker into a reconnect.
 * - Except after a takeover: when the broker says another connection
 *   registered this session id (`taken_over`, `takeover-v1`), reconnecting
 *   would take the id back from that process, which would take it back in
 *   turn. The client stays unconnected (`status.takenOver`), every
 *   operation fails with `IntercomNotConnected` saying so, and so does
 *   `whenTakenOver` (a session's ask waiting for its reply ends then, not at
 *   its timeout). When the broker granted `reclaim-v1`, once the process
 *   that took the id over has exited (its pid, from `taken_over`), it asks
 *   every `RECLAIM_INTERVAL_MS` to register again only if the id is free
 *   (`ifFree`): after a short-lived `pi -c -p`, it takes its session back
 *   and carries on; while that process lives, only if its holder gave it
 *   up on the broker (`ifReleased`, `reclaim-released-v1`: the taker moved
 *   on); never from a live holder, not even while that one reconnects to a
 *   restarted broker. A broker without `reclaim-v1` would
 *   ignore `ifFree` and hand the id over, so there the client stays off.
 * - Each reconnect is announced on `reconnects` once the new connection is
 *   live: the broker may be a new one that never knew the sessions of the
 *   last, and a session waiting on one of them checks it is still there.
 *   When the broker says which state it holds (`state-epoch-v1`) and it is
 *   not the one before (a memory-mode broker restarted), `stateLost` says so
 *   first, with the asks and queued mail of this client that went with it
 *   (StateEpochs.ts), and a warning is logged; nothing is sent again.
 * - Once `rejoinGraceMs` after a reconnect is over, the client lists the
 *   sessions and publishes on `presenceEvents` the departures and joins the
 *   broker's feed could not tell the new connection (MembershipView.ts).
 * - Just after a reconnect (a broker restart empties the registry), a send
 *   whose target is not found is retried for `rejoinGraceMs` (10 s) before
 *   the failure stands: its target may not have registered again yet.
 * - A send in flight when the connection drops is sent again, with the same
 *   message id, once the client has reconnected: the broker answers a retry
 *   from its record and never delivers it twice. Only if no connection comes
 *   back within `REPLAY_WINDOW_MS` (2 minutes), or the client is closed, does
 *   it fail with `ConnectionLost` (outcome unknown) — never silently.
 *   Sends lost with one connection are written again first on the next, as
 *   one batch in the order they were first sent (PendingSends.ts, `unsent`);
 *   each caller's retry takes that re-send's answer instead of writing again.
 * - A message delivered twice (a durable broker killed between writing it
 *   and forgetting it, docs/store.md; or sent again after a reconnect because
 *   it was not confirmed) reaches `messages` once.
 *
 * The connection state is a few plain variables inside the service, touched
 * only by synchronous code (design.md's hot-path rule of single ownership).
 *
 * Size: one concept — the lifetime of the client's connection (attempt,
 * adopt, reconnect, disconnect) over that state; when its connections
 * may confirm what they read is ConfirmationPolicy.ts's, the models are in
 * models.ts, supervisor grants in SupervisorGrants.ts, topics in ClientTopics.ts, the
 * result archive in ClientResults.ts, durable questions in ClientQuestions.ts
 * and health in health.ts; what stays here is the wiring of each into the
 * connection's lifetime, and re-sending a send lost with its connection or
 * refused just after a reconnect (`resending`, `sendRejoining`, and the
 * batch of sends a closed connection left unanswered, `unsent`, and when a
 * closed connection is retired, `liveRetired`): they read the connection
 * counters and state this module owns, so they stay beside them; so does a
 * takeover (`taken_over`, then `reclaim`), which decides whether the client
 * reconnects at all (what the broker's state epoch says after a reconnect
 * is StateEpochs.ts's). About 960 lines (the takeover's `whenTakenOver`, the reclaim's pid check
 * and the `ifReleased` take-back with its grant check added some, the owner's `shouldReconnect` asked
 * before each attempt and the instance id of `rejoin-v1` a little more, and the membership
 * reconciliation's wiring — `viewListing`, `resyncMembership`, about 40 lines — which reads the
 * live connection and the grace this module owns); the per-connection tables are ClientConnection.ts's, the
 * unanswered sends and the re-sent answers kept for a retry
 * PendingSends.ts's, the unhandled messages UnhandledMessages.ts's, the
 * receipts kept for the next connection KeptReceipts.ts's, the membership
 * view reconciled after a reconnect MembershipView.ts's.
 */
import { Clock, Context, Deferred, Duration, Effect, Exit, Layer, PubSub, Schedule, Scope, Stream } from "effect"
import type { SessionInfo, SessionRegistration } from "../protocol/frames.ts"
import { clampPresence, clampRegistration } from "../protocol/limits.ts"
import { normalizeGroup } from "../config/group.ts"
import { type ClientConnection, openClientConnection } from "./ClientConnection.ts"
import type { UnansweredSend } from "./PendingSends.ts"
import type { ControlEvent, InboundMessage, PresenceEvent, QuestionEvent } from "./events.ts"
import * as path from "node:path"
import { randomUUID } from "node:crypto"
import { isProcessAlive, readPidFile } from "../config/pidFile.ts"
import { ConnectionLost, IntercomNotConnected, type IntercomOptionError, RequestTimeout, takenOverReason } from "./errors.ts"
import { RecentMessages } from "./RecentMessages.ts"
import { REPLAY_WINDOW_MS } from "../protocol/constants.ts"
import { RECLAIM_RELEASED_V1, RECLAIM_V1, RELEASE_GRACE_MS, TAKEOVER_V1 } from "../protocol/features.ts"
import { Reason } from "../protocol/delivery.ts"
import { SupervisorGrants } from "./SupervisorGrants.ts"
import { ClientQuestions } from "./ClientQuestions.ts"
import { ClientTopics } from "./ClientTopics.ts"
import { listResults, readResult, storeResult } from "./ClientResults.ts"
import type { TopicEntry } from "../protocol/topics.ts"
import { checkClientOptions, type IntercomClientOptions } from "./options.ts"
import { ensureBroker } from "./spawn.ts"
import { tracedSend } from "./tracing.ts"
import { makeUnhandledMessages } from "./UnhandledMessages.ts"
import { ConfirmationPolicy } from "./ConfirmationPolicy.ts"
import { KeptReceipts } from "./KeptReceipts.ts"
import { type BrokerStateLost, describeStateLost, StateEpochs } from "./StateEpochs.ts"
import { MembershipView, type Touched } from "./MembershipView.ts"

import { type HealthFields, healthOf, mergeHealth, presenceFrame } from "./health.ts"
import type { IntercomClientService, PresenceUpdate } from "./models.ts"

/** The service interface and its models live in `models.ts`; re-exported for existing importers. */
export type { ClientError, ClientStatus, IntercomClientService, PresenceUpdate, WithheldConfirmations } from "./models.ts"

const applyPresence = (registration: SessionRegistration, update: PresenceUpdate): SessionRegistration => ({
  ...registration,
  ...(update.name === undefined ? {} : { name: update.name }),
  ...(update.runtimeFallbackAlias === undefined ? {} : { runtimeFallbackAlias: update.runtimeFallbackAlias }),
  ...(update.status === undefined ? {} : { status: update.status }),
  ...(update.model === undefined ? {} : { model: update.model })
})

/**
 * How long a send that lost its connection waits, at most, for the client to
 * retire that connection, and how long it backs off when no connection comes.
 */
const LOST_BACKOFF_MS = 250
/**
 * After a takeover, how often the client asks to register its id again if it is free (`ifFree`,
 * `reclaim-v1`): slow, since a live holder keeps refusing it.
 */
export const RECLAIM_INTERVAL_MS = 5_000

/**
 * The reason of `IntercomNotConnected` once `shouldReconnect` said no: the
 * client stays off until it is closed.
 */
export const RECONNECT_DECLINED = "the connection dropped and the client's owner said not to reconnect (shouldReconnect)"

/** Departed sessions a client remembers for `InboundMessage.senderLeft` (the newest). */
const DEPARTED_LIMIT = 1_000
const backOff = Effect.sleep(Duration.millis(LOST_BACKOFF_MS))

/** Sends lost unanswered by two connections in turn, oldest first, each message once. */
const mergeUnsent = (
  older: ReadonlyArray<UnansweredSend>,
  newer: ReadonlyArray<UnansweredSend>
): ReadonlyArray<UnansweredSend> => {
  if (older.length === 0) return newer
  const seen = new Set(older.map((lost) => lost.request.message.id))
  return [...older, ...newer.filter((lost) => !seen.has(lost.request.message.id))]
}

const make = (
  options: IntercomClientOptions
): Effect.Effect<IntercomClientService, IntercomOptionError, Scope.Scope> =>
  Effect.gen(function*() {
    // What the broker would refuse at every connect is refused here, once, before any dial or spawn.
    yield* checkClientOptions(options)
    const clientScope = yield* Effect.scope
    // Connections and their fibers live in a child Scope forked before the `disconnect`
    // finalizer is added, so closing the client runs `disconnect` (unregister) first.
    const connectionsScope = yield* Scope.fork(clientScope)
    const connectTimeoutMs = options.connectTimeoutMs ?? 10_000
    const sendTimeoutMs = options.sendTimeoutMs ?? 10_000
    const listTimeoutMs = options.listTimeoutMs ?? 5_000
    const livenessIntervalMs = options.livenessIntervalMs ?? 30_000
    const livenessTimeoutMs = Math.min(options.livenessTimeoutMs ?? 5_000, livenessIntervalMs)
    const reconnectMaxMs = options.reconnectMaxMs ?? 30_000
    const rejoinGraceMs = options.rejoinGraceMs ?? 10_000
    // `rejoin-v1`: one id for every connection of this instance, so the broker knows its own rejoin. An empty
    // one is no id (the broker refuses ""): a random one, as when none is given.
    const instanceId = options.instanceId === undefined || options.instanceId === "" ? randomUUID() : options.instanceId
    const reconnectSchedule = Schedule.exponential(Duration.millis(options.reconnectBaseMs ?? 1_000)).pipe(
      Schedule.jittered,
      Schedule.modifyDelay(({ duration }) =>
        Effect.succeed(Duration.min(duration, Duration.millis(reconnectMaxMs)))
      )
    )

    // Read and not yet handled; a consumer interrupted mid-message leaves it to the next (known issue 15).
    const unhandled = yield* makeUnhandledMessages
    const presenceHub = yield* PubSub.unbounded<PresenceEvent>()
    const controlHub = yield* PubSub.unbounded<ControlEvent>()
    const topicHub = yield* PubSub.unbounded<TopicEntry>()
    // A durable broker killed between writing a message and forgetting it delivers it again after its restart,
    // and a reconnect brings again everything not confirmed: the client remembers all of that (RecentMessages.ts).
    const recent = new RecentMessages()
    const questionHub = yield* PubSub.unbounded<QuestionEvent>()
    /** The ids of this session's asks the broker said expired unanswered (`askExpiry`, `ask-expiry-v1`). */
    const askExpiryHub = yield* PubSub.unbounded<string>()
    /** The connection count of each reconnect, once adopted (`reconnects`). */
    const reconnectHub = yield* PubSub.unbounded<number>()
    /** A reconnect that reached a broker holding another state than the last (`stateLost`, `state-epoch-v1`). */
    const stateLostHub = yield* PubSub.unbounded<BrokerStateLost>()
    /** Each connection's state epoch and what this client left in it (StateEpochs.ts). */
    const epochs = new StateEpochs()
    /** When what was read may be confirmed (held, withheld, or only once handled); read by the connections. */
    const confirmations = new ConfirmationPolicy(
      options.confirmWhenHandled === true,
      options.withholdConfirmations === true,
      options.withholdLimit
    )
    const confirmBound = () => confirmations.bound(unhandled.oldest())
    /**
     * Sessions whose `session_left` this connection read, and no `session_joined` since, the newest
     * DEPARTED_LIMIT: a message from one of them was sent before it left (`InboundMessage.senderLeft`).
     * Reset for each connection (one that registers afresh is told of no earlier departure or join).
     */
    const departed = new Set<string>()
    /** Presence events read over the client's life (`presenceMark`); never reset. */
    let presenceRead = 0
    /**
     * The `presenceRead` number of each session's latest `session_left`, the newest DEPARTED_LIMIT
     * sessions (`leftSince`). Kept across connections: a departure read is one whatever the connection.
     */
    const lastLeft = new Map<string, number>()
    /** Who this client believes is on the intercom, reconciled after each reconnect (MembershipView.ts). */
    const view = new MembershipView()
    const sinks = {
      confirmBound,
      bounded: () => confirmations.waitsForHandling,
      message: (message: InboundMessage) => {
        if (!recent.firstTime(message.from.id, message.message.id, confirmBound)) return
        // A reply ends its ask: a later state loss does not list it (StateEpochs.ts).
        if (message.message.replyTo !== undefined) epochs.answered(message.message.replyTo)
        // Counted while withheld; past `withholdLimit` it releases, and this batch's confirmation covers it.
        confirmations.read()
        unhandled.offer(departed.has(message.from.id) ? { ...message, senderLeft: true } : message)
      },
      // A departure the last reconciliation already announced is not published again; a missed join is (MembershipView.read).
      presence: (event: PresenceEvent) => {
        const news = view.read(event)
        if (news !== undefined) publishPresence(news)
      },
      control: (event: ControlEvent) => void PubSub.publishUnsafe(controlHub, event),
      topic: (entry: TopicEntry) => void PubSub.publishUnsafe(topicHub, entry),
      question: (event: QuestionEvent) => void PubSub.publishUnsafe(questionHub, event),
      askExpired: (messageId: string) => void PubSub.publishUnsafe(askExpiryHub, messageId)
    }
    /** Publishes a presence event, read or made up by a reconciliation, after noting departures and joins. */
    const publishPresence = (event: PresenceEvent): void => {
      presenceRead++
      if (event._tag === "Left") {
        departed.delete(event.sessionId)
        departed.add(event.sessionId)
        if (departed.size > DEPARTED_LIMIT) departed.delete(departed.values().next().value ?? "")
        lastLeft.delete(event.sessionId)
        lastLeft.set(event.sessionId, presenceRead)
        if (lastLeft.size > DEPARTED_LIMIT) lastLeft.delete(lastLeft.keys().next().value ?? "")
      } else if (event._tag === "Joined") {
        departed.delete(event.session.id)
      }
      PubSub.publishUnsafe(presenceHub, event)
    }

    // Connection state: owned by this service, touched only synchronously.
    // Identity fields are cut to the broker's limits rather than refused (limits.ts).
    let registration = clampRegistration(options.registration)
    let current: Deferred.Deferred<ClientConnection, IntercomNotConnected> | undefined
    let live: ClientConnection | undefined
    let connections = 0
    /** When the live connection was adopted (broker clock). */
    let connectedAt = 0
    let lastError: string | undefined
    let stopped = false
    /** Set once the broker said another connection took this session over: the client never reconnects after. */
    let takenOver: IntercomNotConnected | undefined
    /** Failed with `takenOver` when it is set (`whenTakenOver`); a fresh one once the session is taken back. */
    let takenOverSignal = Deferred.makeUnsafe<never, IntercomNotConnected>()
    const takenOverHint = options.takenOverHint ?? "Connect a new client with this session id to take it back."
    const grants = new SupervisorGrants(options.issuedGrants)
    const topics = new ClientTopics()
    const questions = new ClientQuestions()
    /** Capabilities the last attempt could not restore: shown as `lastError` once connected. */
    let restoreProblems: string | undefined
    /** Sends the last connection lost unanswered, oldest first: the next connection writes them before anything else. */
    let unsent: ReadonlyArray<UnansweredSend> = []
    /** Receipts posted while no connection was live, for the next one (P70, KeptReceipts.ts). */
    const keptReceipts = new KeptReceipts()
    /** The health this client last published (`health-v1`): re-sent on every new connection. */
    let health: HealthFields | undefined
    /**
     * Completes once `live` has been retired after its close: `live` cleared, its unanswered sends
     * taken for the next connection and the reconnect begun (`adopt`'s watcher). A send that lost
     * its connection waits for this before it tries again, not for a fixed back-off.
     */
    let liveRetired: Deferred.Deferred<void> | undefined

    const noLongerActive = () => new IntercomNotConnected({ reason: "the client was disconnected" })

    /** Why an `ifReleased` take-back was dropped: the broker registered it as free, not asking whether it was given up. */
    const ungrantedReleased =
      "the broker did not grant reclaim-released-v1: it registered the session as free without asking whether the taker gave it up (the taker may be reconnecting), so the registration was dropped"

    /**
     * A request the broker did not answer, with the broker named — its pid
     * when `broker.pid` names a live process — and what to try: a broker that
     * keeps its connection open but answers nothing is frozen or overloaded.
     */
    const namingBroker = (timeout: RequestTimeout): Effect.Effect<never, RequestTimeout> =>
      Effect.gen(function*() {
        const pid = yield* readPidFile(path.join(options.intercomDir, "broker.pid"))
        const alive = pid !== undefined && (yield* isProcessAlive(pid))
        return yield* new RequestTimeout({
          operation: timeout.operation,
          timeoutMs: timeout.timeoutMs,
          broker: { socketPath: options.socketPath, pid: alive ? pid : undefined }
        })
      })

    /**
     * One attempt: make sure a broker runs, then dial and register in a Scope of its own; after a
     * takeover (`takeover-v1`), `ifFree` only if no live connection holds the id, `ifReleased` only if
     * besides its last holder gave it up on this broker. A broker that grants `reclaim-v1` but not
     * `reclaim-released-v1` honoured `ifFree` only: the id was free, but its taker may be only
     * reconnecting, so that registration is dropped at once, before anything uses it, and `ungranted`
     * is called. One without `reclaim-v1` ignored both: the takeover is done (the taker was told
     * `taken_over` and stops), so that connection is kept — dropping it would leave nobody the id.
     */
    const attemptWith = (only: "ifFree" | "ifReleased" | undefined, ungranted?: () => void) => Effect.gen(function*() {
      if (stopped) return yield* noLongerActive()
      departed.clear()
      // Not for `ifReleased`: a broker started now never saw the id given up and would refuse it (and a
      // taken-over client asking every 5 s would start one each time the last exited idle).
      if (options.launch !== false && only !== "ifReleased") {
        yield* ensureBroker({
          agentDir: options.agentDir,
          intercomDir: options.intercomDir,
          socketPath: options.socketPath,
          launch: options.launch
        }).pipe(Effect.mapError((error) => new IntercomNotConnected({ reason: error.message })))
      }
      const scope = yield* Scope.fork(connectionsScope)
      const connection = yield* openClientConnection(
        {
          socketPath: options.socketPath,
          sessionId: options.sessionId,
          scopeId: options.scopeId,
          group: options.group,
          ephemeral: options.ephemeral,
          session: registration,
          features: options.features ?? [],
          instanceId,
          supervisor: { ownerToken: options.ownerToken, grant: options.supervisorGrant },
          connectTimeoutMs,
          ...(only === undefined ? {} : { ifFree: true }),
          ...(only === "ifReleased" ? { ifReleased: true } : {}),
          ...(options.dial === undefined ? {} : { dial: options.dial })
        },
        sinks
      ).pipe(
        Scope.provide(scope),
        Effect.onError(() => Scope.close(scope, Exit.void))
      )
      if (
        only === "ifReleased" && !connection.features.has(RECLAIM_RELEASED_V1) &&
        (connection.features.has(RECLAIM_V1) || !connection.features.has(TAKEOVER_V1))
      ) {
        // This broker (a restarted one, older) did not ask whether the id was given up. With `reclaim-v1`
        // it found the id free: the taker, alive, may be only reconnecting. Without `takeover-v1` either,
        // it ended the taker without telling it, so the taker will take the id back, and keeping this one
        // would make the two take it from each other for ever. Dropped without `unregister`, so the broker
        // gives back the mail this connection did not confirm, as on any drop. (With `takeover-v1` alone
        // it took the id from the taker, which was told and stops: kept, or nobody would hold it.)
        ungranted?.()
        yield* connection.destroy.pipe(Effect.andThen(Scope.close(scope, Exit.void)))
        return yield* new IntercomNotConnected({ reason: ungrantedReleased, sessionHeld: true })
      }
      // C-SUP-15: capabilities are restored before anything else uses the connection.
      const unrestored = yield* grants.restore(connection, connectTimeoutMs)
      // C-BRK-28: the health published before the drop (a broker restart forgets it).
      if (health !== undefined) yield* connection.post(presenceFrame(health, connection.features)).pipe(Effect.ignore)
      // C-BRK-28, C-TOP-15: subscriptions and own latest publications are sent again.
      const unrestoredTopics = yield* topics.restore(connection, connectTimeoutMs)
      // C-DQ-6: a child's durable questions are asked again; the broker answers with their saved state.
      const unaskedQuestions = yield* questions.restore(connection, connectTimeoutMs)
      // What the last connection lost on the way goes first, in the order it was first sent (PendingSends.ts).
      const now = yield* Clock.currentTimeMillis
      const due = unsent.filter((lost) => now - lost.since < REPLAY_WINDOW_MS)
      // Refused or cut short, the batch stays here and with this connection's close (merged by id). An
      // answer that comes before its caller is back waits for it as long as the caller would have waited.
      const resent = yield* connection.resend(due, sendTimeoutMs).pipe(Effect.as(true), Effect.orElseSucceed(() => false))
      if (resent) unsent = []
      const problems = [...unrestored, ...unrestoredTopics, ...unaskedQuestions]
      restoreProblems = problems.length === 0 ? undefined : problems.join("; ")
      return { connection, scope }
    }).pipe(Effect.tapError((error) =>
      Effect.sync(() => {
        // While taken over, `lastError` keeps saying so: a refused take-back is the expected answer.
        if (takenOver === undefined) lastError = error.reason
      })
    ))
    const attempt = attemptWith(undefined)

    const retire = (retired: Deferred.Deferred<void>) => Deferred.done(retired, Exit.void)

    /**
     * A `list` on `connection` whose answer `use` applies to the membership view in the same
     * synchronous step that ends noting the real events read while it was in flight.
     */
    const viewListing = (
      connection: ClientConnection,
      use: (listed: ReadonlyArray<SessionInfo>, touched: Touched) => void
    ) =>
      Effect.suspend(() => {
        const touched = view.track()
        return connection.list(listTimeoutMs).pipe(
          Effect.tap((listed) =>
            Effect.sync(() => {
              use(listed, touched)
              view.untrack(touched)
            })
          ),
          Effect.ensuring(Effect.sync(() => view.untrack(touched)))
        )
      })

    /**
     * After a reconnect, once the rejoin grace is over (a session on its way back to a restarted
     * broker has registered again by then): lists the sessions and publishes what the view missed
     * while away — departures, joins, a session replaced by another process (MembershipView.ts).
     * Runs in the connection's Scope: a connection that drops first leaves it to the next one; a
     * failed list (an older broker, a dropped connection) leaves the view as it is, and says nothing.
     */
    const resyncMembership = (connection: ClientConnection): Effect.Effect<void> =>
      Effect.sleep(Duration.millis(rejoinGraceMs)).pipe(
        Effect.andThen(viewListing(connection, (listed, touched) => {
          for (const event of view.resync(listed, touched, connection.sessionId)) publishPresence(event)
        })),
        Effect.ignore
      )

    /**
     * `attempt` (or any attempt the client makes by itself) unless the owner says no first
     * (`shouldReconnect`): then `declined`, before anything is dialled or spawned.
     */
    const unlessDeclined = <A>(
      attempt: Effect.Effect<A, IntercomNotConnected>,
      declined: IntercomNotConnected
    ): Effect.Effect<A, IntercomNotConnected> =>
      options.shouldReconnect === undefined ? attempt : Effect.flatMap(options.shouldReconnect, (go) =>
        go ? attempt : Effect.sync(() => {
          lastError = declined.reason
        }).pipe(Effect.andThen(Effect.fail(declined))))

    /**
     * Adopts a registered connection: liveness probe, and a watcher that reconnects when it drops.
     * An attempt that completes after `disconnect` is closed at once, never adopted (C-BRK-29).
     */
    const adopt = (connection: ClientConnection, scope: Scope.Closeable): Effect.Effect<void, IntercomNotConnected> =>
      Effect.gen(function*() {
        if (stopped) {
          yield* connection.close.pipe(Effect.andThen(Scope.close(scope, Exit.void)))
          return yield* noLongerActive()
        }
        const retired = Deferred.makeUnsafe<void>()
        live = connection
        liveRetired = retired
        connections++
        keptReceipts.flush(connection.postLater)
        // What the consumer handled while this connection registered and restored (no `live` to tell then).
        yield* connection.confirmRead
        connectedAt = yield* Clock.currentTimeMillis
        lastError = restoreProblems
        // A broker whose state epoch is not the last one's lost what that one held (`state-epoch-v1`):
        // said before the reconnect is, so that waits on that state end at once, not after the grace.
        const lost = epochs.adopt(connection.stateEpoch, connections)
        if (lost !== undefined) {
          PubSub.publishUnsafe(stateLostHub, lost)
          yield* Effect.logWarning(describeStateLost(lost))
        }
        // The broker may be a new one that lost the sessions of the last: waits check their peer (`reconnects`).
        if (connections >= 2) PubSub.publishUnsafe(reconnectHub, connections)
        // What the feed could not say while this client was away is said once the grace is over (MembershipView.ts).
        if (connections >= 2) yield* Effect.forkIn(resyncMembership(connection), scope)
        yield* Effect.forkIn(
          Effect.forever(
            Effect.sleep(Duration.millis(livenessIntervalMs)).pipe(
              Effect.andThen(connection.probe(livenessTimeoutMs)),
              // P96: a broker that does not answer is dropped at once (no unregister), then reconnected.
              Effect.catchTag("RequestTimeout", () =>
                Effect.sync(() => lastError = "liveness probe timed out").pipe(
                  Effect.andThen(connection.destroy)
                ))
            ),
            { disableYield: true }
          ).pipe(Effect.ignore),
          scope
        )
        yield* Effect.forkIn(
          connection.closed.pipe(
            Effect.andThen(Effect.suspend(() => {
              if (live === connection) {
                live = undefined
                liveRetired = undefined
              }
              unsent = mergeUnsent(unsent, connection.unanswered())
              if (stopped) return retire(retired)
              const over = connection.takenOver()
              if (over !== undefined) {
                // Another process holds the id now: no reconnect, which would take it back (and it, back again).
                const error = new IntercomNotConnected({ reason: takenOverReason(over, takenOverHint), takenOver: over })
                takenOver = error
                lastError = error.reason
                // Said at once: a wait on this connection (an ask's reply) would otherwise run to its timeout.
                Deferred.doneUnsafe(takenOverSignal, Exit.fail(error))
                const refused = Deferred.makeUnsafe<ClientConnection, IntercomNotConnected>()
                current = refused
                // Only a broker that granted reclaim-v1 honours `ifFree`; from another, a retry would take over.
                const reclaims = connection.features.has(RECLAIM_V1)
                const released = connection.features.has(RECLAIM_RELEASED_V1)
                return retire(retired).pipe(
                  Effect.andThen(Deferred.fail(refused, error)),
                  Effect.andThen(reclaims ? Effect.forkIn(reclaim(error, released), connectionsScope) : Effect.void),
                  Effect.asVoid
                )
              }
              const next = Deferred.makeUnsafe<ClientConnection, IntercomNotConnected>()
              current = next
              return Effect.andThen(retire(retired), reconnect(next))
            })),
            Effect.ensuring(Effect.andThen(retire(retired), Scope.close(scope, Exit.void)))
          ),
          connectionsScope
        )
      })

    /**
     * One take-back attempt. While the taker's process lives, only if the id was given up
     * (`ifReleased`, while `asking.released`: the broker granted `reclaim-released-v1`; refused here,
     * without asking the broker, otherwise); once it has exited, if the id is free (`ifFree`). A broker
     * that then finds the id free without granting the extension (a restarted, older one with
     * `reclaim-v1`) has its registration dropped, and `asking.released` turns false for good: no more
     * `ifReleased`, to this broker or a later one, until the taker's process exits (then `ifFree`).
     * Succeeds with the connection and how the taker lost the id (left, gave it up, or taken from it
     * by a broker without `reclaim-v1`).
     */
    const reclaimAttempt = (over: IntercomNotConnected, asking: { released: boolean }, declined: IntercomNotConnected) => {
      const pid = over.takenOver?.pid
      const takerAlive = pid === undefined ? Effect.succeed(false) : isProcessAlive(pid)
      return unlessDeclined(Effect.flatMap(takerAlive, (alive) =>
        !alive
          ? Effect.map(attemptWith("ifFree"), (back) => ({ ...back, how: "has left" }))
          : asking.released
          ? Effect.map(attemptWith("ifReleased", () => (asking.released = false)), (back) => ({
            ...back,
            how: back.connection.features.has(RECLAIM_RELEASED_V1)
              ? "gave it up"
              : "lost it to this register: the broker (an older version, without reclaim-v1) ignored ifReleased"
          }))
          : Effect.fail(over)), declined)
    }

    /**
     * After a takeover (`taken_over`): every `RECLAIM_INTERVAL_MS`, once the process that took the id
     * over has exited (its pid from `taken_over`; an unknown pid counts as exited), registers again
     * only if the id is free (`ifFree`, `reclaim-v1`); while it lives, with `released` (the broker
     * granted `reclaim-released-v1`), only if its last holder gave it up there (`ifReleased`: the
     * taker moved on). The broker refuses while another live connection holds it; the pid check, or
     * the broker's record of an `unregister`, covers what the broker cannot see: after a broker
     * restart the live holder is only reconnecting, and the new broker would see the id free. Once
     * back, what was queued for the session meanwhile is delivered as on any re-register, and
     * `takenOver` is cleared. Ends when the client is closed, or when `shouldReconnect` says no.
     */
    const reclaim = (over: IntercomNotConnected, released: boolean): Effect.Effect<void> => {
      const asking = { released }
      const declined = new IntercomNotConnected({ reason: RECONNECT_DECLINED })
      const pid = over.takenOver?.pid === undefined ? "" : ` (pid ${over.takenOver.pid})`
      // Every interval; sooner after a refusal because the id was given up only just now (its grace).
      const attempts: Effect.Effect<
        Effect.Success<ReturnType<typeof reclaimAttempt>>,
        IntercomNotConnected
      > = reclaimAttempt(over, asking, declined).pipe(
        Effect.catch((error) =>
          stopped || error === declined ? Effect.fail(error) : Effect.sleep(Duration.millis(
            error.releasedRecently === true ? RELEASE_GRACE_MS : RECLAIM_INTERVAL_MS
          )).pipe(Effect.andThen(Effect.suspend(() => attempts)))
        )
      )
      return Effect.sleep(Duration.millis(RECLAIM_INTERVAL_MS)).pipe(
        Effect.andThen(attempts),
        Effect.flatMap(({ connection, scope, how }) =>
          Effect.suspend(() => {
            takenOver = undefined
            takenOverSignal = Deferred.makeUnsafe<never, IntercomNotConnected>()
            const back = Deferred.makeUnsafe<ClientConnection, IntercomNotConnected>()
            current = back
            return adopt(connection, scope).pipe(
              Effect.andThen(Deferred.succeed(back, connection)),
              Effect.andThen(Effect.logInfo(
                `Intercom: took session ${options.sessionId} back; the process that took it over${pid} ${how}`
              )),
              Effect.catch((error) => Deferred.fail(back, error))
            )
          })
        ),
        Effect.ignore
      )
    }

    /**
     * Retries with backoff until connected, the client stops, or `shouldReconnect` (asked before each
     * attempt) says no; waiting operations see the result.
     */
    const reconnect = (next: Deferred.Deferred<ClientConnection, IntercomNotConnected>): Effect.Effect<void> => {
      const declined = new IntercomNotConnected({ reason: RECONNECT_DECLINED })
      return Effect.sleep(Duration.millis(options.reconnectBaseMs ?? 1_000)).pipe(
        Effect.andThen(Effect.retry(unlessDeclined(attempt, declined), {
          schedule: reconnectSchedule,
          while: (error) => !stopped && error !== declined
        })),
        Effect.flatMap(({ connection, scope }) =>
          adopt(connection, scope).pipe(Effect.andThen(Deferred.succeed(next, connection)))
        ),
        Effect.catch((error) => Deferred.fail(next, error))
      )
    }

    const connection: Effect.Effect<ClientConnection, IntercomNotConnected> = Effect.suspend(() => {
      if (stopped) return Effect.fail(noLongerActive())
      if (current !== undefined) return Deferred.await(current)
      const first = Deferred.makeUnsafe<ClientConnection, IntercomNotConnected>()
      current = first
      // Forked into the client's Scope: one caller's interruption does not cancel the shared attempt.
      return Effect.forkIn(
        attempt.pipe(
          Effect.flatMap(({ connection, scope }) =>
            adopt(connection, scope).pipe(Effect.andThen(Deferred.succeed(first, connection)))
          ),
          Effect.catch((error) =>
            Effect.sync(() => {
              if (current === first) current = undefined // the next use tries again
            }).pipe(Effect.andThen(Deferred.fail(first, error)))
          )
        ),
        connectionsScope
      ).pipe(Effect.andThen(Deferred.await(first)))
    })

    /**
     * Uses the live connection at once; without one, waits for a connection at most `connectTimeoutMs`
     * (a reconnect may be in progress), then uses it. Connected, no timer is set: the wait is over.
     */
    const withConnection = <A, E>(
      use: (connection: ClientConnection) => Effect.Effect<A, E>
    ): Effect.Effect<A, E | IntercomNotConnected> =>
      Effect.suspend(() => !stopped && live !== undefined ? use(live) : waitForConnection(use))

    const waitForConnection = <A, E>(use: (connection: ClientConnection) => Effect.Effect<A, E>) =>
      connection.pipe(
        Effect.timeoutOrElse({
          duration: Duration.millis(connectTimeoutMs),
          orElse: () =>
            Effect.fail(
              new IntercomNotConnected({
                reason: `no connection within ${connectTimeoutMs} ms${lastError === undefined ? "" : ` (last error: ${lastError})`}`
              })
            )
        }),
        Effect.flatMap(use)
      )

    /**
     * A send. Just after a reconnect, "not found" may mean "not back yet" (a
     * broker restart empties its registry), and a reply's "no pending ask"
     * may mean "not asked again yet" (a durable broker killed before it
     * stored an ask it had already delivered: the asker re-sends it once it
     * is back, docs/store.md): the send is retried with the same id until the
     * grace ends, then the failure stands.
     */
    const send: IntercomClientService["send"] = (request) =>
      tracedSend(request, "send", (traced) => sendRejoining(traced, 0, { lost: undefined })).pipe(
        Effect.catchTag("RequestTimeout", namingBroker)
      )
    /**
     * Retries those failures after a reconnect every 25, 50, 100, 200, then
     * 250 ms, until the grace ends. If the send was lost with a connection on
     * the way, a failure that stands says only what the broker it reached
     * next knows, not what became of the first attempt (a broker killed after
     * delivering it and before storing it forgot it): the outcome is unknown,
     * `ConnectionLost`.
     */
    const sendRejoining = (
      request: Parameters<IntercomClientService["send"]>[0],
      attempt: number,
      lostOnTheWay: { lost: ConnectionLost | undefined }
    ): ReturnType<IntercomClientService["send"]> =>
      resending((c) =>
        c.send(request, sendTimeoutMs).pipe(
          Effect.tap((delivery) => Effect.sync(() => epochs.acknowledged(c.stateEpoch, request, delivery))),
          Effect.tapErrorTag("ConnectionLost", (lost) => Effect.sync(() => (lostOnTheWay.lost = lost)))
        )
      ).pipe(
        Effect.catchIf(
          (error) => error._tag === "TargetNotFound" || (error._tag === "ReplyTargetMismatch" && error.reason === Reason.replyNoAsk),
          (error) =>
            Effect.gen(function*() {
              const now = yield* Clock.currentTimeMillis
              if (connections < 2 || now - connectedAt >= rejoinGraceMs) {
                return yield* Effect.fail(lostOnTheWay.lost ?? error)
              }
              yield* Effect.sleep(Duration.millis(Math.min(250, 25 * 2 ** attempt)))
              return yield* sendRejoining(request, attempt + 1, lostOnTheWay)
            })
        )
      )

    /**
     * A send whose connection dropped before its answer came is sent again,
     * with the same message id, once a connection is back: the broker answers
     * a retry from its record (P46) and never delivers it twice. Within the
     * replay window (REPLAY_WINDOW_MS) of the first attempt; after it, or once
     * the client is closed, `ConnectionLost` stands (outcome unknown).
     *
     * A send (a child's `supervisorSend` too) is usually sent again by the client itself, first thing on
     * the next connection (`unsent`); the retry then joins that re-send, or
     * gets its answer if it came first (PendingSends.ts), and writes nothing.
     * After a loss the retry waits only until the client has retired the
     * dead connection (so that it waits for the next one instead of trying
     * the dead one again), at most `LOST_BACKOFF_MS`; with no connection to
     * be had, it backs off `LOST_BACKOFF_MS` between waits.
     */
    const resending = <A, E>(
      attempt: (connection: ClientConnection) => Effect.Effect<A, E | ConnectionLost>
    ): Effect.Effect<A, E | ConnectionLost | IntercomNotConnected> =>
      Effect.flatMap(Clock.currentTimeMillis, (startedAt) => {
        /** The retirement of the connection the last try used, while it was the live one. */
        let usedRetired: Deferred.Deferred<void> | undefined
        const tryOn = (connection: ClientConnection) => {
          usedRetired = connection === live ? liveRetired : undefined
          return attempt(connection)
        }
        // After a loss, a connection that does not come back in time is not the end: the window is.
        const again = (lost: ConnectionLost): Effect.Effect<A, E | ConnectionLost | IntercomNotConnected> =>
          Effect.flatMap(Clock.currentTimeMillis, (now) =>
            stopped || takenOver !== undefined || now - startedAt >= REPLAY_WINDOW_MS
              ? Effect.fail(lost)
              : withConnection(tryOn).pipe(
                Effect.catchIf(
                  (error): error is ConnectionLost | IntercomNotConnected =>
                    error instanceof ConnectionLost || error instanceof IntercomNotConnected,
                  (error) => Effect.andThen(error instanceof ConnectionLost ? afterLoss() : backOff, again(lost))
                )
              ))
        const afterLoss = () => {
          const retired = usedRetired
          return retired === undefined ? Effect.void : Effect.timeoutOption(Deferred.await(retired), LOST_BACKOFF_MS)
        }
        return withConnection(tryOn).pipe(
          Effect.catchIf(
            (error): error is ConnectionLost => error instanceof ConnectionLost,
            (lost) => Effect.andThen(afterLoss(), again(lost))
          )
        )
      })

    const disconnect = Effect.gen(function*() {
      if (stopped) return
      stopped = true
      const pending = current
      current = undefined
      // C-BRK-30: join an attempt in flight, then unregister and close.
      if (pending !== undefined) {
        const exit = yield* Deferred.await(pending).pipe(Effect.exit, Effect.timeoutOption(Duration.seconds(2)))
        if (exit._tag === "Some" && Exit.isSuccess(exit.value)) yield* exit.value.value.close
      }
      live = undefined
    })

    yield* Effect.addFinalizer(() => disconnect)

    return {
      sessionId: options.sessionId,
      group: normalizeGroup(options.group),
      connect: withConnection(() => Effect.void),
      list: withConnection((c) => viewListing(c, (listed, touched) => view.seed(listed, touched, c.sessionId))).pipe(
        Effect.catchTag("RequestTimeout", namingBroker)
      ),
      peek: (group) => withConnection((c) => c.list(listTimeoutMs, group)).pipe(Effect.catchTag("RequestTimeout", namingBroker)),
      send,
      supervisorSend: (request) =>
        tracedSend({ ...request, to: "supervisor" }, "supervisor_send", (traced) =>
          resending((c) =>
            c.send(
              { ...traced, to: c.supervisorSessionId ?? options.supervisorGrant?.supervisorSessionId ?? "" },
              sendTimeoutMs,
              "supervisor_send"
            ).pipe(Effect.tap((delivery) => Effect.sync(() => epochs.acknowledged(c.stateEpoch, traced, delivery))))
          )),
      authorizeChild: (childName) => withConnection((c) => grants.authorize(c, childName, sendTimeoutMs)),
      cancel: (messageId) => withConnection((c) => c.cancel(messageId, sendTimeoutMs)),
      cancelAsk: (messageId) =>
        withConnection((c) => c.post({ type: "cancel_ask", messageId })).pipe(
          // The wait is over whether or not the broker heard it: a later state loss does not list the ask.
          Effect.ensuring(Effect.sync(() => epochs.askEnded(messageId)))
        ),
      presence: (update) =>
        Effect.suspend(() => {
          update = clampPresence(update)
          registration = applyPresence(registration, update)
          health = mergeHealth(health, healthOf(update))
          return withConnection((c) => c.post(presenceFrame(update, c.features)))
        }),
      // Queued on the live connection without a fiber; without one, kept for the next (P70).
      receipt: (receipt) =>
        Effect.sync(() => {
          const frame = { type: "message_receipt", receipt }
          if (stopped || (live !== undefined && live.postLater(frame))) return
          keptReceipts.keep(frame)
        }),
      publish: (request) =>
        withConnection((c) =>
          Effect.flatMap(Clock.currentTimeMillis, (now) => topics.publish(c, request, now, sendTimeoutMs))
        ),
      subscribe: (topic, subscribeOptions) =>
        withConnection((c) => topics.subscribe(c, topic, subscribeOptions?.awaitRelease === true, sendTimeoutMs)),
      unsubscribe: (topic) => withConnection((c) => topics.unsubscribe(c, topic, sendTimeoutMs)),
      topics: (topic) => withConnection((c) => topics.query(c, topic, listTimeoutMs)),
      storeResult: (request) => withConnection((c) => storeResult(c, request, sendTimeoutMs)),
      results: (request) => withConnection((c) => listResults(c, request ?? {}, listTimeoutMs)),
      result: (request) => withConnection((c) => readResult(c, request, listTimeoutMs)),
      savedTopics: Effect.sync(() => topics.saved),
      seedTopics: (saved) =>
        Effect.suspend(() => {
          topics.seed(saved)
          // Already connected: send them now; otherwise the next connection does (C-TOP-15).
          return live === undefined ? Effect.void : Effect.asVoid(topics.restore(live, sendTimeoutMs))
        }),
      topicRecords: Stream.fromPubSub(topicHub),
      ...questions.operations(withConnection, sendTimeoutMs),
      questionEvents: Stream.fromPubSub(questionHub),
      askExpiry: (questionId) =>
        Effect.map(PubSub.subscribe(askExpiryHub), (subscription) => {
          const expired: Effect.Effect<void> = Effect.flatMap(
            PubSub.take(subscription),
            (id) => id === questionId ? Effect.void : expired
          )
          // The notice came after every reply accepted before it: those are routed before the wait is judged.
          return Effect.andThen(expired, unhandled.caughtUp)
        }),
      messages: unhandled.stream,
      handled: (message) =>
        Effect.suspend(() => {
          unhandled.handled(message)
          // What came before the oldest unhandled message can be confirmed now (`confirmWhenHandled`).
          return confirmations.waitsForHandling && live !== undefined ? live.confirmRead : Effect.void
        }),
      keep: (message) => Effect.sync(() => unhandled.keep(message)),
      caughtUp: unhandled.caughtUp,
      isDeparted: (sessionId) => Effect.sync(() => departed.has(sessionId)),
      presenceMark: Effect.sync(() => presenceRead),
      leftSince: (sessionId, mark) => Effect.sync(() => (lastLeft.get(sessionId) ?? 0) > mark),
      presenceEvents: Stream.fromPubSub(presenceHub),
      reconnects: Stream.fromPubSub(reconnectHub),
      stateLost: Stream.fromPubSub(stateLostHub),
      whenTakenOver: Effect.suspend(() => Deferred.await(takenOverSignal)),
      rejoinGraceMs,
      controls: Stream.fromPubSub(controlHub),
      status: Effect.sync(() => ({
        connected: live !== undefined,
        sessionId: options.sessionId,
        socketPath: options.socketPath,
        features: live === undefined ? [] : [...live.features],
        connections,
        lastError,
        supervisorSessionId: live?.supervisorSessionId,
        stateEpoch: epochs.epoch,
        ...(takenOver?.takenOver === undefined ? {} : { takenOver: takenOver.takenOver })
      })),
      holdConfirmations: Effect.sync(() => confirmations.hold()),
      resumeConfirmations: Effect.suspend(() => {
        confirmations.resume()
        return live === undefined ? Effect.void : live.confirmRead
      }),
      confirmWhenHandled: Effect.sync(() => confirmations.confirmWhenHandled()),
      releaseConfirmations: Effect.suspend(() => {
        confirmations.release()
        return live === undefined ? Effect.void : live.confirmRead
      }),
      withheld: Effect.sync(() => confirmations.state),
      disconnect
    } satisfies IntercomClientService
  })

/**
 * The client service: one session's connection to the broker. It connects
 * lazily, spawns the broker when none answers, and reconnects after a drop.
 * Build it with `IntercomClient.make` (in a Scope you hold) or
 * `IntercomClient.layer`; closing the Scope unregisters and disconnects. A
 * program that acts as an agent usually wants `IntercomSession`
 * (`effect-intercom/session`) on top of it.
 *
 * @example
 * ```ts
 * import { NodeServices } from "@effect/platform-node"
 * import { Effect, Layer } from "effect"
 * import { randomUUID } from "node:crypto"
 * import { IntercomClient } from "effect-intercom/client"
 * import { loadIntercomSettings } from "effect-intercom/config"
 * import { sessionRegistration } from "effect-intercom/session"
 *
 * // Options from the user's agent dir, config.json and environment.
 * const ClientLive = Layer.unwrap(Effect.gen(function*() {
 *   const settings = yield* loadIntercomSettings()
 *   const sessionId = settings.stableId ?? randomUUID()
 *   const identity = { name: "planner", cwd: process.cwd(), model: "my-model" }
 *   return IntercomClient.layer({
 *     agentDir: settings.paths.agentDir,
 *     intercomDir: settings.paths.intercomDir,
 *     socketPath: settings.paths.socketPath,
 *     sessionId,
 *     scopeId: settings.scopeId,
 *     registration: sessionRegistration({ sessionId, identity, pid: process.pid, startedAt: 0, statusSuffix: settings.status }),
 *     launch: settings.broker, // spawn a broker when none answers
 *     sendTimeoutMs: settings.sendTimeoutMs,
 *     listTimeoutMs: settings.listTimeoutMs,
 *     livenessIntervalMs: settings.liveness.intervalMs,
 *     livenessTimeoutMs: settings.liveness.timeoutMs
 *   })
 * })).pipe(Layer.provide(NodeServices.layer))
 *
 * const program = Effect.gen(function*() {
 *   const client = yield* IntercomClient
 *   const sessions = yield* client.list // the first operation connects: spawn if needed, register
 *   yield* Effect.log(`${sessions.length} sessions`)
 * })
 *
 * program.pipe(Effect.provide(ClientLive), Effect.runPromise)
 * ```
 */
export class IntercomClient extends Context.Service<IntercomClient, IntercomClientService>()(
  "effect-intercom/IntercomClient"
) {
  /**
   * Builds a client in the current Scope; nothing connects until the first
   * operation, and closing the Scope unregisters and disconnects.
   *
   * @example
   * ```ts
   * import { NodeServices } from "@effect/platform-node"
   * import { Effect } from "effect"
   * import { randomUUID } from "node:crypto"
   * import { IntercomClient } from "effect-intercom/client"
   * import { loadIntercomSettings } from "effect-intercom/config"
   *
   * const program = Effect.gen(function*() {
   *   const settings = yield* loadIntercomSettings()
   *   const client = yield* IntercomClient.make({
   *     agentDir: settings.paths.agentDir,
   *     intercomDir: settings.paths.intercomDir,
   *     socketPath: settings.paths.socketPath,
   *     sessionId: settings.stableId ?? randomUUID(),
   *     scopeId: settings.scopeId,
   *     registration: { cwd: process.cwd(), model: "my-model", pid: process.pid, startedAt: 0, lastActivity: 0 },
   *     launch: settings.broker
   *   })
   *   const outcome = yield* client.send({
   *     to: "reviewer",
   *     message: { id: randomUUID(), timestamp: 0, content: { text: "PR #12 is ready" } }
   *   }).pipe(
   *     Effect.map((delivery) => delivery.delivery), // "socket_delivered", or "queued" for a session that is away
   *     Effect.catchTag("TargetNotFound", (error) => Effect.succeed(error.message)) // "Session not found"
   *   )
   *   yield* Effect.log(outcome)
   * })
   *
   * program.pipe(Effect.scoped, Effect.provide(NodeServices.layer), Effect.runPromise)
   * ```
   */
  static readonly make: (
    options: IntercomClientOptions
  ) => Effect.Effect<IntercomClientService, IntercomOptionError, Scope.Scope> = make
  /**
   * A Layer holding one client for the Layer's lifetime; for an example, see
   * `IntercomClient`. Fails to build with `IntercomOptionError` when an option
   * cannot be used as given (`checkClientOptions`).
   */
  static readonly layer = (options: IntercomClientOptions): Layer.Layer<IntercomClient, IntercomOptionError> =>
    Layer.effect(IntercomClient, make(options))
}
