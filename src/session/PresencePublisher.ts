/**
 * The presence publisher: what this session shows the others (name or
 * fallback alias, lifecycle status with the configured suffix, model), and
 * the one fiber that pushes it to the broker (C-TOOL-10, C-TOOL-13).
 *
 * It owns the identity and the lifecycle status (plain fields, written only
 * by `setStatus` / `setIdentity`) and the last presence it pushed. Most
 * changes only mark the presence dirty (a sliding queue of one); the fiber
 * then pushes the *latest* desired presence, so pushes happen in order and a
 * burst of changes costs one push. A lifecycle change (`setStatus`) and each
 * connect (`refresh`) push at once and return after the write, so a host that
 * waits knows the broker has it (a lock keeps every push in order). It never
 * connects by itself (C-TOOL-14).
 *
 * Peer health (`health-v1`, C-HLT-3, C-HLT-8): when the broker granted it,
 * the presence also carries `acceptsAsks` (true only while idle: no agent run
 * and no tool executing), `pendingAsks` (read from the reply tracker at push
 * time) and `lastIntercomActivity` (the last send or receive, which it owns:
 * `noteActivity` sets it, marking the presence dirty). The client re-sends
 * the last health after a reconnect.
 *
 * `pendingAsks` also falls with no send or receive: an asker leaving,
 * withdrawing or replacing its ask (the inbound handling marks the presence
 * dirty then), and an ask growing too old to be pending (C-RPL-6), for which
 * the fiber wakes by itself while the pushed count is above zero.
 *
 * A presence whose only change is `lastIntercomActivity` is pushed at most
 * once per `ACTIVITY_PUSH_INTERVAL` after the previous push, with the latest
 * activity: a flood of messages stamps the activity about once a millisecond,
 * and each stamp was a frame of its own. The broker stamps the activity of a
 * message it routes live itself (C-HLT-4), so its `list` answers lag by at
 * most the interval only for what it cannot see. Any other change (identity,
 * `pendingAsks`, a lifecycle status, a connect) is pushed at once.
 */
import { Clock, Duration, Effect, Queue, type Scope, Semaphore } from "effect"
import type { IntercomClientService } from "../client/IntercomClient.ts"
import { HEALTH_V1 } from "../protocol/features.ts"
import type { SessionRegistration } from "../protocol/frames.ts"
import type { HostIdentity } from "./Host.ts"
import { type LifecycleStatus, presenceStatus, presentedName } from "./render.ts"

/**
 * The presence side of a session: the host pushes lifecycle and identity
 * changes in; the inbound handling reads the lifecycle to pick intents.
 *
 * @category models
 * @since 0.1.0
 */
export interface PresencePublisher {
  /** The host's lifecycle status; `idle` until the host says otherwise. */
  readonly lifecycle: () => LifecycleStatus
  readonly setStatus: (status: LifecycleStatus) => Effect.Effect<void>
  /** A rename or model switch; `name: undefined` presents the fallback alias. */
  readonly setIdentity: (update: Partial<HostIdentity>) => Effect.Effect<void>
  /** Asks the fiber to push the latest presence (a no-op while not connected). */
  readonly markDirty: Effect.Effect<void>
  /**
   * Pushes the latest presence now, if it changed, and returns once it is
   * written: run after each connect, so the broker has this session's
   * presence before the action's own frames (the connection is FIFO).
   */
  readonly refresh: Effect.Effect<void>
  /** A send, reply or receive happened now: sets `lastIntercomActivity` and pushes the health (C-HLT-8). */
  readonly noteActivity: Effect.Effect<void>
}

/**
 * How long after a push a presence whose only change is
 * `lastIntercomActivity` waits before it is pushed (see the module header).
 *
 * @category constants
 * @since 0.1.0
 */
export const ACTIVITY_PUSH_INTERVAL: Duration.Duration = Duration.seconds(1)

/**
 * Starts the publisher's fiber in the current Scope (the generation's).
 *
 * @category constructors
 * @since 0.1.0
 */
export const makePresencePublisher = (input: {
  readonly client: IntercomClientService
  readonly identity: HostIdentity
  readonly statusSuffix: string | undefined
  /** Unresolved inbound asks at `now` (the reply tracker's count), for `pendingAsks`. */
  readonly pendingAsks: (now: number) => number
  /** When the next of those asks stops being pending by age (epoch ms): `pendingAsks` is pushed again then. */
  readonly nextAskExpiry?: ((now: number) => number | undefined) | undefined
}): Effect.Effect<PresencePublisher, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { client } = input
    let identity = input.identity
    let lifecycle: LifecycleStatus = "idle"
    /** The last presence pushed, apart from `lastIntercomActivity`, and the rest of what a push leaves. */
    let lastPushed: string | undefined
    let pushedActivity = 0
    let pushedPendingAsks = 0
    let pushedAt = Number.NEGATIVE_INFINITY
    /** The last send or receive, epoch ms; 0 means none (C-HLT-3). */
    let lastIntercomActivity = 0
    /** The fiber holds back an activity-only change: a new stamp needs no wake-up then. */
    let holdingActivity = false
    const interval = Duration.toMillis(ACTIVITY_PUSH_INTERVAL)

    const dirty = yield* Queue.sliding<true>(1)
    const markDirty = Effect.asVoid(Queue.offer(dirty, true))
    const desired = () => {
      const presented = presentedName(identity.name, client.sessionId)
      return {
        name: presented.name,
        runtimeFallbackAlias: presented.runtimeFallbackAlias,
        status: presenceStatus(lifecycle, input.statusSuffix),
        model: identity.model
      }
    }
    // The fiber and `refresh` both push: one at a time, each the latest desired presence.
    const lock = yield* Semaphore.make(1)
    /**
     * Pushes the latest presence if it changed. Returns 0, or, when `hold` and
     * the only change is the activity, the ms until it may be pushed.
     */
    const pushLatest = (hold: boolean) =>
      Effect.gen(function*() {
        const status = yield* client.status
        if (!status.connected) return 0
        const now = yield* Clock.currentTimeMillis
        const health = status.features.includes(HEALTH_V1)
        const pendingAsks = health ? input.pendingAsks(now) : 0
        const base = health
          ? { ...desired(), acceptsAsks: lifecycle === "idle", pendingAsks }
          : desired()
        const key = JSON.stringify(base)
        const activity = health ? lastIntercomActivity : 0
        if (key === lastPushed) {
          if (activity === pushedActivity) return 0
          // Whole ms, at least one: a clock with fractions (the simulation's) must not sleep for nothing.
          if (hold && now - pushedAt < interval) return Math.max(1, Math.ceil(pushedAt + interval - now))
        }
        yield* client.presence(health ? { ...base, lastIntercomActivity: activity } : base)
        lastPushed = key
        pushedActivity = activity
        pushedPendingAsks = pendingAsks
        pushedAt = now
        return 0
      }).pipe(Effect.orElseSucceed(() => 0), lock.withPermit)
    const push = Effect.asVoid(pushLatest(false))
    /** Pushes what a mark asked for; an activity-only change waits out the interval, woken early by any other mark. */
    const publish = Effect.gen(function*() {
      let wait = yield* pushLatest(true)
      while (wait > 0) {
        holdingActivity = true
        yield* Effect.raceFirst(Effect.sleep(Duration.millis(wait)), Queue.take(dirty))
        holdingActivity = false
        wait = yield* pushLatest(true)
      }
    })
    /**
     * The next mark, or — while the pushed `pendingAsks` counts an ask — the moment the oldest of them
     * stops being pending by age (C-RPL-6), whichever comes first: the count falls then, with no send
     * or receive to mark it.
     */
    const nextMark = Effect.suspend(() => {
      if (pushedPendingAsks === 0 || input.nextAskExpiry === undefined) return Queue.take(dirty)
      const nextAskExpiry = input.nextAskExpiry
      return Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const at = nextAskExpiry(now)
        if (at === undefined) return Queue.take(dirty)
        return Effect.raceFirst(Effect.as(Effect.sleep(Duration.millis(Math.max(1, Math.ceil(at - now)))), true), Queue.take(dirty))
      })
    })
    yield* Effect.forkScoped(Effect.forever(Effect.andThen(nextMark, publish), { disableYield: true }))

    return {
      lifecycle: () => lifecycle,
      // Pushed before it returns: a host that waits for it knows the broker has its health (C-HLT-3).
      setStatus: (next) =>
        Effect.suspend(() => {
          lifecycle = next
          return push
        }),
      setIdentity: (update) =>
        Effect.suspend(() => {
          identity = {
            name: "name" in update ? update.name : identity.name,
            cwd: update.cwd ?? identity.cwd,
            model: update.model ?? identity.model
          }
          return markDirty
        }),
      markDirty,
      refresh: push,
      noteActivity: Effect.flatMap(Clock.currentTimeMillis, (now) => {
        lastIntercomActivity = now
        // Held back already: only a change of pendingAsks (an ask came or was answered) needs the fiber now.
        if (holdingActivity && input.pendingAsks(now) === pushedPendingAsks) return Effect.void
        return markDirty
      })
    }
  })

/**
 * The `register` payload a session's client should start with: the name (or
 * the fallback alias), model, cwd and lifecycle status with its suffix, so the
 * session appears as it will present itself.
 *
 * @example
 * ```ts
 * import { Clock, Effect } from "effect"
 * import { randomUUID } from "node:crypto"
 * import { sessionRegistration } from "effect-intercom/session"
 *
 * const sessionId = randomUUID()
 * const registration = Effect.map(Clock.currentTimeMillis, (startedAt) =>
 *   sessionRegistration({
 *     sessionId,
 *     identity: { name: "planner", cwd: process.cwd(), model: "my-model" },
 *     pid: process.pid,
 *     startedAt
 *   })
 * ) // pass its value as IntercomClient.layer({ ..., sessionId, registration })
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const sessionRegistration = (input: {
  readonly sessionId: string
  readonly identity: HostIdentity
  readonly pid: number
  readonly startedAt: number
  readonly status?: LifecycleStatus | undefined
  readonly statusSuffix?: string | undefined
}): SessionRegistration => {
  const presented = presentedName(input.identity.name, input.sessionId)
  return {
    cwd: input.identity.cwd,
    model: input.identity.model,
    pid: input.pid,
    startedAt: input.startedAt,
    lastActivity: input.startedAt,
    name: presented.name,
    runtimeFallbackAlias: presented.runtimeFallbackAlias,
    status: presenceStatus(input.status ?? "idle", input.statusSuffix)
  }
}
