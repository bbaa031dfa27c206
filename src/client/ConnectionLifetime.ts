/**
 * Size: about 595 lines, over a third of them comments; one concept (the
 * attempt, adoption and reconnect share every variable above, and split
 * apart each would need the others' state); the concerns restored on each
 * connection are their own modules, this one only calls them in order.
 *
 * The lifetime of an `IntercomClient`'s connection: the first attempt (shared
 * by concurrent first uses, C-TOOL-14), adopting a registered connection
 * (liveness probe, P96; the close watcher), reconnecting after a drop with
 * capped exponential backoff and jitter (the owner's `shouldReconnect` asked
 * before each attempt the client makes by itself), the take-back after a
 * takeover (ClientTakeover.ts), and `disconnect`.
 *
 * Each attempt makes sure a broker runs (P93), dials and registers with
 * what the session announced (`announce`: name, status, model; the health it
 * published, `health-v1`), then restores, before anything else uses the
 * connection, what a new broker would not know: supervisor grants, health,
 * topics, durable questions, and the sends the last connection lost
 * (Resending.ts). Adopting it says a reconnect on `reconnects`, a lost
 * broker state on `stateLost` first (StateEpochs.ts), and starts the
 * membership reconciliation once the rejoin grace is over
 * (ClientMembership.ts).
 *
 * Owns the connection state: the attempt in flight or its result
 * (`current`), the live connection and its retirement, the connection
 * count, when the live one was adopted, the last error, whether the client
 * stopped, what it announced, and what the last attempt could not restore.
 * It is a few plain variables touched only by synchronous code (design.md's
 * rule of single ownership); IntercomClient.ts reads them through
 * `ConnectionLifetime`, and the modules it drives through `ResendSide` and
 * `ReclaimSide` — never the variables.
 */
import { Clock, Deferred, Duration, Effect, Exit, Option, PubSub, Schedule, Scope } from "effect"
import { randomUUID } from "node:crypto"
import type { SessionRegistration } from "../protocol/frames.ts"
import { clampRegistration } from "../protocol/limits.ts"
import { RECLAIM_RELEASED_V1, RECLAIM_V1 } from "../protocol/features.ts"
import { type ClientConnection, openClientConnection } from "./ClientConnection.ts"
import type { ClientMembership } from "./ClientMembership.ts"
import type { ClientQuestions } from "./ClientQuestions.ts"
import { dropsReleasedRegistration, TakeoverState, UNGRANTED_RELEASED } from "./ClientTakeover.ts"
import type { ClientTopics } from "./ClientTopics.ts"
import { IntercomNotConnected } from "./errors.ts"
import type { ClientSinks } from "./events.ts"
import { type HealthFields, healthOf, mergeHealth, presenceFrame } from "./health.ts"
import type { KeptReceipts } from "./KeptReceipts.ts"
import type { PresenceUpdate } from "./models.ts"
import type { IntercomClientOptions } from "./options.ts"
import { Resending } from "./Resending.ts"
import { ensureBroker } from "./spawn.ts"
import { type BrokerStateLost, describeStateLost, type StateEpochs } from "./StateEpochs.ts"
import type { SupervisorGrants } from "./SupervisorGrants.ts"

/**
 * The reason of `IntercomNotConnected` once `shouldReconnect` said no: the
 * client stays off until it is closed.
 *
 * @category constants
 * @since 0.1.0
 */
export const RECONNECT_DECLINED = "the connection dropped and the client's owner said not to reconnect (shouldReconnect)"

const applyPresence = (registration: SessionRegistration, update: PresenceUpdate): SessionRegistration => ({
  ...registration,
  ...(update.name === undefined ? {} : { name: update.name }),
  ...(update.runtimeFallbackAlias === undefined ? {} : { runtimeFallbackAlias: update.runtimeFallbackAlias }),
  ...(update.status === undefined ? {} : { status: update.status }),
  ...(update.model === undefined ? {} : { model: update.model })
})

/**
 * What the lifetime is built from: the client's options and timings, and the
 * concerns it restores on, or tells of, each connection (each owned by
 * `IntercomClient`).
 *
 * @category models
 * @since 0.1.0
 */
export interface LifetimeConfig {
  readonly options: IntercomClientOptions
  /** Where connections and their fibers live: closed after `disconnect`. */
  readonly connectionsScope: Scope.Scope
  /** Where each connection's reader puts what it reads. */
  readonly sinks: ClientSinks
  readonly membership: ClientMembership
  readonly grants: SupervisorGrants
  readonly topics: ClientTopics
  readonly questions: ClientQuestions
  readonly keptReceipts: KeptReceipts
  readonly epochs: StateEpochs
  /** The connection count of each reconnect, once adopted (`reconnects`). */
  readonly reconnectHub: PubSub.PubSub<number>
  /** A reconnect that reached a broker holding another state than the last (`stateLost`). */
  readonly stateLostHub: PubSub.PubSub<BrokerStateLost>
  readonly connectTimeoutMs: number
  readonly sendTimeoutMs: number
  readonly livenessIntervalMs: number
  readonly livenessTimeoutMs: number
  readonly rejoinGraceMs: number
  /**
   * Whether an ask settling with the broker still needs the verdict on `messageId` (`LateVerdicts.watches`):
   * a send abandoned by its callers is written again after a drop only then.
   */
  readonly awaitsVerdict: (messageId: string) => boolean
}

/**
 * The connection's lifetime as the client's operations see it (see the module header).
 *
 * @category models
 * @since 0.1.0
 */
export interface ConnectionLifetime {
  /**
   * Uses the live connection at once; without one, waits for a connection at most `connectTimeoutMs`
   * (a reconnect may be in progress), then uses it; `disconnect` ends that wait at once.
   */
  readonly withConnection: <A, E>(
    use: (connection: ClientConnection) => Effect.Effect<A, E>
  ) => Effect.Effect<A, E | IntercomNotConnected>
  /**
   * The live connection, or the next one a reconnect in progress adopts, waited for at most `ms` —
   * the caller's bound, not `connectTimeoutMs`. None when that time runs out, when no reconnect is in
   * progress or the one in progress fails (reconnecting declined), at once while the session is
   * taken over (a take-back in progress included: its connection is not current until adopted), and
   * at once when the client is closed, before or during the wait. It never starts an attempt.
   */
  readonly nextConnection: (ms: number) => Effect.Effect<Option.Option<ClientConnection>>
  /** The live connection, if any. */
  readonly live: () => ClientConnection | undefined
  /**
   * While `connection` is the live one, what completes once the client has retired it after its
   * close (`live` cleared, the reconnect begun); otherwise undefined.
   */
  readonly retirementOf: (connection: ClientConnection) => Deferred.Deferred<void> | undefined
  /**
   * Drops `connection` at once, without `unregister`, as a failed liveness probe does (P96): its broker
   * left a round trip unanswered past the liveness timeout. The reconnect follows, as after any drop;
   * `reason` becomes `lastError` while it is the live connection.
   */
  readonly unanswered: (connection: ClientConnection, reason: string) => Effect.Effect<void>
  /** Whether `disconnect` ran. */
  readonly stopped: () => boolean
  /** Completes once `disconnect` runs: a wait raced with it ends then. */
  readonly whenStopped: Effect.Effect<void>
  /** How many connections were adopted. */
  readonly connections: () => number
  /** The last attempt's error, or what the last connection could not restore. */
  readonly lastError: () => string | undefined
  /** Notes a presence update (already clamped) for every later `register`, and its health for every later connection. */
  readonly announce: (update: PresenceUpdate) => void
  /** Sends lost with a connection, and sends refused just after a reconnect, sent again. */
  readonly resend: Resending
  /** Whether another connection took this session over, and `whenTakenOver`. */
  readonly takeover: TakeoverState
  /** Joins an attempt in flight, then unregisters and closes (C-BRK-29, C-BRK-30); once. */
  readonly disconnect: Effect.Effect<void>
}

/**
 * Builds the lifetime; nothing connects until the first `withConnection`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeConnectionLifetime = (config: LifetimeConfig): ConnectionLifetime => {
  const {
    connectionsScope,
    connectTimeoutMs,
    epochs,
    grants,
    keptReceipts,
    livenessIntervalMs,
    livenessTimeoutMs,
    membership,
    options,
    questions,
    reconnectHub,
    rejoinGraceMs,
    sendTimeoutMs,
    sinks,
    stateLostHub,
    topics
  } = config
  const reconnectMaxMs = options.reconnectMaxMs ?? 30_000
  // `rejoin-v1`: one id for every connection of this instance, so the broker knows its own rejoin. An empty
  // one is no id (the broker refuses ""): a random one, as when none is given.
  const instanceId = options.instanceId === undefined || options.instanceId === "" ? randomUUID() : options.instanceId
  const reconnectSchedule = Schedule.exponential(Duration.millis(options.reconnectBaseMs ?? 1_000)).pipe(
    Schedule.jittered,
    Schedule.modifyDelay(({ duration }) =>
      Effect.succeed(Duration.min(duration, Duration.millis(reconnectMaxMs)))
    )
  )

  // Connection state: owned here, touched only synchronously.
  // Identity fields are cut to the broker's limits rather than refused (limits.ts).
  let registration = clampRegistration(options.registration)
  let current: Deferred.Deferred<ClientConnection, IntercomNotConnected> | undefined
  let live: ClientConnection | undefined
  let connections = 0
  /** When the live connection was adopted (broker clock). */
  let connectedAt = 0
  let lastError: string | undefined
  let stopped = false
  /**
   * Completes when `disconnect` runs: ends then the waits raced with it — for a connection
   * (`withConnection`, `nextConnection`), a reconnect's back-off, a re-send's back-off
   * (Resending.ts) and a take-back's wait between tries (ClientTakeover.ts).
   */
  const whenStopped = Deferred.makeUnsafe<void>()
  /** Whether another connection took this session over, and `whenTakenOver` (ClientTakeover.ts). */
  const takeover = new TakeoverState(
    options.takenOverHint ?? "Connect a new client with this session id to take it back."
  )
  /**
   * Whether the owner said not to reconnect (`shouldReconnect`, `unlessDeclined`): the client stays off
   * until closed, so no connection will come again (`ResendSide.ended`).
   */
  let declinedReconnect = false
  /** Whether a reconnect's attempt is in flight (not its back-off): `disconnect` joins it rather than end it. */
  let reconnecting = false
  /**
   * A take-back's try in flight, through the adoption of what it registered (not its wait between
   * tries): completes when it is over; `disconnect` joins it, as a reconnect's attempt (C-BRK-30).
   */
  let takingBack: Deferred.Deferred<void> | undefined
  /** Capabilities the last attempt could not restore: shown as `lastError` once connected. */
  let restoreProblems: string | undefined
  /** The health this client last published (`health-v1`): re-sent on every new connection. */
  let health: HealthFields | undefined
  /**
   * Completes once `live` has been retired after its close: `live` cleared, its unanswered sends
   * taken for the next connection and the reconnect begun (`adopt`'s watcher). A send that lost
   * its connection waits for this before it tries again, not for a fixed back-off.
   */
  let liveRetired: Deferred.Deferred<void> | undefined
  /** Sends lost with a connection, and sends refused just after a reconnect, sent again (Resending.ts). */
  const retirementOf = (connection: ClientConnection) => connection === live ? liveRetired : undefined
  const resend = new Resending({
    withConnection: (use) => withConnection(use),
    retirementOf,
    ended: () => stopped || declinedReconnect || takeover.error !== undefined,
    whenStopped: Deferred.await(whenStopped),
    rejoining: (now) => connections >= 2 && now - connectedAt < rejoinGraceMs
  }, epochs, sendTimeoutMs)

  const noLongerActive = () => new IntercomNotConnected({ reason: "the client was disconnected" })

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
        ...(options.dial === undefined ? {} : { dial: options.dial }),
        lostOnTheWay: (messageId, signature, now) => resend.lostOnTheWay(messageId, signature, now)
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
        declinedReconnect = true
        lastError = declined.reason
      }).pipe(Effect.andThen(Effect.fail(declined))))

  /**
   * Adopts a registered connection: liveness probe, and a watcher that reconnects when it drops.
   * An attempt that completes after `disconnect` is closed at once, never adopted (C-BRK-29).
   */
  const adopt = (
    connection: ClientConnection,
    scope: Scope.Closeable,
    adopted?: () => void
  ): Effect.Effect<void, IntercomNotConnected> =>
    Effect.gen(function*() {
      if (stopped) {
        yield* connection.close.pipe(Effect.andThen(Scope.close(scope, Exit.void)))
        return yield* noLongerActive()
      }
      // Called with the same check of `stopped`, before anything yields: never on a closed client.
      adopted?.()
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
            Effect.catchTag("RequestTimeout", () => unanswered(connection, "liveness probe timed out"))
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
            // A send every caller gave up on (told it timed out: check before sending it again) is written again
            // only for an ask that still settles with the broker (review revas AS1); otherwise the caller's own
            // resend could make it arrive twice (review revav AV2), and an interrupted caller withdrew it (AV3).
            // All of them are recorded as lost on the way all the same (Resending.ts `lostOnTheWay`, review revbo BO2).
            resend.lost(
              connection.unanswered(),
              (send) => !send.abandoned || config.awaitsVerdict(send.request.message.id)
            )
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

  /** Drops `connection` at once, without `unregister` (P96): its broker left a round trip unanswered. */
  const unanswered = (connection: ClientConnection, reason: string): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (connection === live) lastError = reason
      return connection.destroy
    })

  /** A take-back after a takeover (`reclaim-v1`, ClientTakeover.ts), run in the connections' Scope. */
  const reclaim = (over: IntercomNotConnected, released: boolean): Effect.Effect<void> =>
    takeover.reclaim(over, released, options.sessionId, new IntercomNotConnected({ reason: RECONNECT_DECLINED }), {
      stopped: () => stopped,
      whenStopped: Deferred.await(whenStopped),
      attempt: attemptWith,
      unlessDeclined,
      joinable: (tryOnce) =>
        Effect.suspend(() => {
          const done = Deferred.makeUnsafe<void>()
          takingBack = done
          return tryOnce.pipe(Effect.ensuring(Effect.suspend(() => {
            if (takingBack === done) takingBack = undefined
            return Deferred.done(done, Exit.void)
          })))
        }),
      adoptTakenBack: ({ connection, scope }, announce) => {
        const back = Deferred.makeUnsafe<ClientConnection, IntercomNotConnected>()
        current = back
        return adopt(connection, scope, () => takeover.takenBack()).pipe(
          Effect.andThen(Deferred.succeed(back, connection)),
          Effect.andThen(announce),
          Effect.catch((error) => Deferred.fail(back, error)),
          Effect.asVoid
        )
      }
    })

  /**
   * Retries with backoff until connected, the client stops, or `shouldReconnect` (asked before each
   * attempt) says no; waiting operations see the result. `disconnect` during a back-off ends it at
   * once, `next` failed as closed; an attempt in flight then is joined (C-BRK-30), and none follows.
   */
  const reconnect = (next: Deferred.Deferred<ClientConnection, IntercomNotConnected>): Effect.Effect<void> => {
    const declined = new IntercomNotConnected({ reason: RECONNECT_DECLINED })
    const tracked = Effect.suspend(() => {
      reconnecting = true
      return unlessDeclined(attempt, declined)
    }).pipe(Effect.ensuring(Effect.sync(() => reconnecting = false)))
    const retrying = Effect.sleep(Duration.millis(options.reconnectBaseMs ?? 1_000)).pipe(
      Effect.andThen(Effect.retry(tracked, {
        schedule: reconnectSchedule,
        while: (error) => !stopped && error !== declined
      })),
      Effect.flatMap(({ connection, scope }) =>
        adopt(connection, scope).pipe(Effect.andThen(Deferred.succeed(next, connection)))
      ),
      Effect.catch((error) => Deferred.fail(next, error)),
      Effect.asVoid
    )
    // Closed during a back-off: nothing is in flight to join, so the wait ends now, not at the next attempt.
    const closedMeanwhile = Deferred.await(whenStopped).pipe(
      Effect.andThen(Effect.suspend(() => reconnecting ? Effect.never : Deferred.fail(next, noLongerActive()))),
      Effect.asVoid
    )
    return Effect.raceFirst(retrying, closedMeanwhile)
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
   * `disconnect` ends the wait at once with `IntercomNotConnected` ("the client was disconnected").
   */
  const withConnection = <A, E>(
    use: (connection: ClientConnection) => Effect.Effect<A, E>
  ): Effect.Effect<A, E | IntercomNotConnected> =>
    Effect.suspend(() => !stopped && live !== undefined ? use(live) : waitForConnection(use))

  /** Ends a wait for a connection once the client is closed (`disconnect`), with the closed client's error. */
  const closedWhileWaiting = Effect.andThen(Deferred.await(whenStopped), Effect.fail(noLongerActive()))

  const waitForConnection = <A, E>(use: (connection: ClientConnection) => Effect.Effect<A, E>) =>
    Effect.raceFirst(connection, closedWhileWaiting).pipe(
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

  const nextConnection = (ms: number): Effect.Effect<Option.Option<ClientConnection>> =>
    Effect.suspend(() => {
      if (stopped) return Effect.succeedNone
      if (live !== undefined) return Effect.succeedSome(live)
      const pending = current
      if (pending === undefined) return Effect.succeedNone
      // Ended by the stop signal, not by `disconnect` failing `pending`: that one still joins an
      // attempt in flight, and closes what it registers (C-BRK-30).
      const stoppedMeanwhile = Effect.as(Deferred.await(whenStopped), Option.none<ClientConnection>())
      return Effect.raceFirst(Effect.option(Deferred.await(pending)), stoppedMeanwhile).pipe(
        Effect.timeoutOption(Duration.millis(Math.max(0, ms))),
        Effect.map(Option.flatten)
      )
    })

  const disconnect = Effect.gen(function*() {
    if (stopped) return
    stopped = true
    yield* Deferred.succeed(whenStopped, undefined)
    const pending = current
    const backing = takingBack
    current = undefined
    // C-BRK-30: join an attempt in flight (a take-back's too: it closes what it registers, never adopted),
    // then unregister and close — for at most 2 s in all.
    const joined = Effect.gen(function*() {
      if (backing !== undefined) yield* Deferred.await(backing)
      return pending === undefined ? undefined : yield* Effect.exit(Deferred.await(pending))
    })
    const exit = yield* Effect.timeoutOption(joined, Duration.seconds(2))
    if (exit._tag === "Some" && exit.value !== undefined && Exit.isSuccess(exit.value)) yield* exit.value.value.close
    live = undefined
  })

  return {
    withConnection,
    nextConnection,
    live: () => live,
    retirementOf,
    unanswered,
    stopped: () => stopped,
    whenStopped: Deferred.await(whenStopped),
    connections: () => connections,
    lastError: () => lastError,
    announce: (update) => {
      registration = applyPresence(registration, update)
      health = mergeHealth(health, healthOf(update))
    },
    resend,
    takeover,
    disconnect
  }
}
