/**
 * `IntercomClient`: the programmatic entry point for Effect programs.
 *
 * - Lazy: nothing connects until the first operation; concurrent first uses
 *   share one attempt (C-TOOL-14).
 * - Auto-spawns the broker when none answers (P93).
 * - Reconnects after a drop with capped exponential backoff and jitter,
 *   re-registering the same session id with what the session had announced
 *   (name, status, model, requested features); a liveness probe (P96) turns a
 *   silent broker into a reconnect. The owner's `shouldReconnect` is asked
 *   before each attempt the client makes by itself.
 * - Except after a takeover (`taken_over`, `takeover-v1`): the client stays
 *   unconnected, every operation and `whenTakenOver` fail with
 *   `IntercomNotConnected` saying so, and where the broker granted
 *   `reclaim-v1` the client takes its id back only once it is free or given
 *   up (ClientTakeover.ts).
 * - Each reconnect is announced on `reconnects` once the new connection is
 *   live: the broker may be a new one that never knew the sessions of the
 *   last, and a session waiting on one of them checks it is still there.
 *   When the broker says which state it holds (`state-epoch-v1`) and it is
 *   not the one before (a memory-mode broker restarted), `stateLost` says so
 *   first, with the asks and queued mail of this client that went with it
 *   (StateEpochs.ts), and a warning is logged; nothing is sent again.
 * - Once `rejoinGraceMs` after a reconnect is over, the client lists the
 *   sessions and publishes on `presenceEvents` the departures and joins the
 *   broker's feed could not tell the new connection (ClientMembership.ts,
 *   MembershipView.ts).
 * - A send in flight when the connection drops is sent again, with the same
 *   message id, once the client has reconnected, first thing on the new
 *   connection; it fails with `ConnectionLost` (outcome unknown) only if no
 *   connection comes back within `REPLAY_WINDOW_MS`, never silently. Just
 *   after a reconnect, a send whose target is not found is retried for
 *   `rejoinGraceMs` before the failure stands (Resending.ts).
 * - A message delivered twice (a durable broker killed between writing it
 *   and forgetting it, docs/store.md; or sent again after a reconnect because
 *   it was not confirmed) reaches `messages` once.
 *
 * The connection state is a few plain variables inside the service, touched
 * only by synchronous code (design.md's hot-path rule of single ownership);
 * a module that needs to read it is handed a small interface over it
 * (`ResendSide`, `ReclaimSide`), never the variables.
 *
 * Size: one concept — the lifetime of the client's connection (attempt,
 * adopt, reconnect, disconnect) over that state, and the wiring of each
 * concern into it: when its connections may confirm what they read is
 * ConfirmationPolicy.ts's, the models are in models.ts, supervisor grants in
 * SupervisorGrants.ts, topics in ClientTopics.ts, the result archive in
 * ClientResults.ts, durable questions in ClientQuestions.ts, health in
 * health.ts, the takeover and its take-back in ClientTakeover.ts, re-sending
 * what a connection lost in Resending.ts, the departures read and the
 * membership view's reconciliation in ClientMembership.ts (the view itself
 * in MembershipView.ts), what the broker's state epoch says after a
 * reconnect in StateEpochs.ts; the per-connection tables are
 * ClientConnection.ts's, the unanswered sends PendingSends.ts's, the
 * unhandled messages UnhandledMessages.ts's, the receipts kept for the next
 * connection KeptReceipts.ts's. About 700 lines, a third of them the service
 * object's operations and the JSDoc examples of the class; the attempt,
 * adoption and reconnect with the state they share is the next split if it
 * grows (a connection-lifetime module owning that state, the service
 * object reading it through getters).
 */
import { Clock, Context, Deferred, Duration, Effect, Exit, Layer, PubSub, Schedule, Scope, Stream } from "effect"
import type { SessionRegistration } from "../protocol/frames.ts"
import { clampPresence, clampRegistration } from "../protocol/limits.ts"
import { normalizeGroup } from "../config/group.ts"
import { type ClientConnection, openClientConnection } from "./ClientConnection.ts"
import { Resending } from "./Resending.ts"
import type { ControlEvent, InboundMessage, PresenceEvent, QuestionEvent } from "./events.ts"
import * as path from "node:path"
import { randomUUID } from "node:crypto"
import { isProcessAlive, readPidFile } from "../config/pidFile.ts"
import { IntercomNotConnected, type IntercomOptionError, RequestTimeout } from "./errors.ts"
import { RecentMessages } from "./RecentMessages.ts"
import { RECLAIM_RELEASED_V1, RECLAIM_V1 } from "../protocol/features.ts"
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
import { ClientMembership } from "./ClientMembership.ts"
import { dropsReleasedRegistration, TakeoverState, UNGRANTED_RELEASED } from "./ClientTakeover.ts"

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

/** After a takeover, how often the client asks to take its id back (ClientTakeover.ts); re-exported for existing importers. */
export { RECLAIM_INTERVAL_MS } from "./ClientTakeover.ts"

/**
 * The reason of `IntercomNotConnected` once `shouldReconnect` said no: the
 * client stays off until it is closed.
 */
export const RECONNECT_DECLINED = "the connection dropped and the client's owner said not to reconnect (shouldReconnect)"

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
    /** The departures read, and the membership view reconciled after each reconnect (ClientMembership.ts). */
    const membership = new ClientMembership(presenceHub, listTimeoutMs, rejoinGraceMs)
    const sinks = {
      confirmBound,
      bounded: () => confirmations.waitsForHandling,
      message: (message: InboundMessage) => {
        if (!recent.firstTime(message.from.id, message.message.id, confirmBound)) return
        // A reply ends its ask: a later state loss does not list it (StateEpochs.ts).
        if (message.message.replyTo !== undefined) epochs.answered(message.message.replyTo)
        // Counted while withheld; past `withholdLimit` it releases, and this batch's confirmation covers it.
        confirmations.read()
        unhandled.offer(membership.isDeparted(message.from.id) ? { ...message, senderLeft: true } : message)
      },
      presence: (event: PresenceEvent) => membership.read(event),
      control: (event: ControlEvent) => void PubSub.publishUnsafe(controlHub, event),
      topic: (entry: TopicEntry) => void PubSub.publishUnsafe(topicHub, entry),
      question: (event: QuestionEvent) => void PubSub.publishUnsafe(questionHub, event)
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
    /** Whether another connection took this session over, and `whenTakenOver` (ClientTakeover.ts). */
    const takeover = new TakeoverState(
      options.takenOverHint ?? "Connect a new client with this session id to take it back."
    )
    const grants = new SupervisorGrants(options.issuedGrants)
    const topics = new ClientTopics()
    const questions = new ClientQuestions()
    /** Capabilities the last attempt could not restore: shown as `lastError` once connected. */
    let restoreProblems: string | undefined
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
    /** Sends lost with a connection, and sends refused just after a reconnect, sent again (Resending.ts). */
    const resend = new Resending({
      withConnection: (use) => withConnection(use),
      retirementOf: (connection) => connection === live ? liveRetired : undefined,
      ended: () => stopped || takeover.error !== undefined,
      rejoining: (now) => connections >= 2 && now - connectedAt < rejoinGraceMs
    }, epochs, sendTimeoutMs)

    const noLongerActive = () => new IntercomNotConnected({ reason: "the client was disconnected" })

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
      membership.newConnection()
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
      if (only === "ifReleased" && dropsReleasedRegistration(connection.features)) {
        // Dropped without `unregister`, so the broker gives back the mail this connection did not
        // confirm, as on any drop (ClientTakeover.ts says why it is dropped).
        ungranted?.()
        yield* connection.destroy.pipe(Effect.andThen(Scope.close(scope, Exit.void)))
        return yield* new IntercomNotConnected({ reason: UNGRANTED_RELEASED, sessionHeld: true })
      }
      // C-SUP-15: capabilities are restored before anything else uses the connection.
      const unrestored = yield* grants.restore(connection, connectTimeoutMs)
      // C-BRK-28: the health published before the drop (a broker restart forgets it).
      if (health !== undefined) yield* connection.post(presenceFrame(health, connection.features)).pipe(Effect.ignore)
      // C-BRK-28, C-TOP-15: subscriptions and own latest publications are sent again.
      const unrestoredTopics = yield* topics.restore(connection, connectTimeoutMs)
      // C-DQ-6: a child's durable questions are asked again; the broker answers with their saved state.
      const unaskedQuestions = yield* questions.restore(connection, connectTimeoutMs)
      // What the last connection lost on the way goes first, in the order it was first sent (Resending.ts).
      yield* resend.writeAgain(connection)
      const problems = [...unrestored, ...unrestoredTopics, ...unaskedQuestions]
      restoreProblems = problems.length === 0 ? undefined : problems.join("; ")
      return { connection, scope }
    }).pipe(Effect.tapError((error) =>
      Effect.sync(() => {
        // While taken over, `lastError` keeps saying so: a refused take-back is the expected answer.
        if (takeover.error === undefined) lastError = error.reason
      })
    ))
    const attempt = attemptWith(undefined)

    const retire = (retired: Deferred.Deferred<void>) => Deferred.done(retired, Exit.void)

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
        if (connections >= 2) yield* Effect.forkIn(membership.resync(connection), scope)
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
              resend.lost(connection.unanswered())
              if (stopped) return retire(retired)
              const over = connection.takenOver()
              if (over !== undefined) {
                // Another process holds the id now: no reconnect, which would take it back (and it, back again).
                const error = takeover.takenOver(over)
                lastError = error.reason
                // Said at once: a wait on this connection (an ask's reply) would otherwise run to its timeout.
                takeover.tell(error)
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

    /** A take-back after a takeover (`reclaim-v1`, ClientTakeover.ts), run in the connections' Scope. */
    const reclaim = (over: IntercomNotConnected, released: boolean): Effect.Effect<void> =>
      takeover.reclaim(over, released, options.sessionId, new IntercomNotConnected({ reason: RECONNECT_DECLINED }), {
        stopped: () => stopped,
        attempt: attemptWith,
        unlessDeclined,
        adoptTakenBack: ({ connection, scope }, announce) => {
          const back = Deferred.makeUnsafe<ClientConnection, IntercomNotConnected>()
          current = back
          return adopt(connection, scope).pipe(
            Effect.andThen(Deferred.succeed(back, connection)),
            Effect.andThen(announce),
            Effect.catch((error) => Deferred.fail(back, error)),
            Effect.asVoid
          )
        }
      })

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
      list: withConnection((c) => membership.list(c)).pipe(
        Effect.catchTag("RequestTimeout", namingBroker)
      ),
      peek: (group) => withConnection((c) => c.list(listTimeoutMs, group)).pipe(Effect.catchTag("RequestTimeout", namingBroker)),
      send: (request) =>
        tracedSend(request, "send", (traced) => resend.send(traced)).pipe(Effect.catchTag("RequestTimeout", namingBroker)),
      supervisorSend: (request) =>
        tracedSend({ ...request, to: "supervisor" }, "supervisor_send", (traced) =>
          resend.retrying((c) =>
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
      messages: unhandled.stream,
      handled: (message) =>
        Effect.suspend(() => {
          unhandled.handled(message)
          // What came before the oldest unhandled message can be confirmed now (`confirmWhenHandled`).
          return confirmations.waitsForHandling && live !== undefined ? live.confirmRead : Effect.void
        }),
      keep: (message) => Effect.sync(() => unhandled.keep(message)),
      caughtUp: unhandled.caughtUp,
      isDeparted: (sessionId) => Effect.sync(() => membership.isDeparted(sessionId)),
      presenceMark: Effect.sync(() => membership.mark),
      leftSince: (sessionId, mark) => Effect.sync(() => membership.leftSince(sessionId, mark)),
      presenceEvents: Stream.fromPubSub(presenceHub),
      reconnects: Stream.fromPubSub(reconnectHub),
      stateLost: Stream.fromPubSub(stateLostHub),
      whenTakenOver: takeover.whenTakenOver,
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
        ...(takeover.error?.takenOver === undefined ? {} : { takenOver: takeover.error.takenOver })
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
