/**
 * An asker's settling round trip at its own deadline (`ask-expiry-v1`,
 * `awaitAnswer` in src/session/Ask.ts; `IntercomClientService.settleRoundTrip`).
 *
 * Owns no state: it reads the connection's lifetime (ConnectionLifetime.ts).
 * The round trip is the liveness probe's `list`, marked `settle: true`,
 * which such a broker answers only after closing the ask edges past their
 * deadline, behind any reply it accepted; then the messages read before the
 * answer are routed (`settledReads`). A connection that drops before the
 * answer may have taken unconfirmed output with it — a reply the broker
 * accepted among it — which the broker gives back first thing on the next
 * connection (a rejoin, or the mailbox's flush): so the round trip is made
 * again there, if a connection is live within `rejoinGraceMs` of the drop.
 * A round trip unanswered for the liveness timeout has its connection
 * probed (the liveness probe's `list`): a broker that answers it holds the
 * settle on purpose (src/broker/ParkedReplies.ts, a reply parked elsewhere),
 * so the client keeps the connection and waits on for the same answer,
 * probing every liveness timeout, until `rejoinGraceMs` from the deadline —
 * then it answers false. A broker that answers the probe neither (frozen;
 * or one whose own parked `list` answer holds later lists back) has its
 * connection dropped by the client (P96), a drop like any other.
 * The same holds when no connection is live when it is asked for while the
 * client reconnects. The rejoin grace is the time the client already gives
 * a session to come back after a drop (ClientMembership.ts): longer than
 * the first reconnect's back-off, and a bound the user's timeout grows by
 * only when no connection is live at the deadline or it is lost during the
 * round trip. That wait is bounded by the grace alone, not by the client's
 * `connectTimeoutMs`, and ends when the client is closed.
 */
import { Clock, Deferred, Effect } from "effect"
import type { ClientConnection } from "./ClientConnection.ts"
import type { ConnectionLifetime } from "./ConnectionLifetime.ts"

/**
 * What the settling round trip reads: the connection's lifetime, the
 * client's timings, and the wait for the messages read to be routed.
 *
 * @category models
 * @since 0.1.0
 */
export interface SettleConfig {
  readonly lifetime: Pick<
    ConnectionLifetime,
    "live" | "retirementOf" | "connections" | "stopped" | "nextConnection" | "unanswered"
  >
  /** How long the broker has to answer each round trip. */
  readonly livenessTimeoutMs: number
  /** How long, from a drop (or from the call, with none live), a next connection is waited for. */
  readonly rejoinGraceMs: number
  /** Completes once the messages read so far were routed (for at most the liveness timeout), or the client is closed. */
  readonly settledReads: Effect.Effect<void>
}

/**
 * The settling round trip (see the module header): true once an answer was
 * read and what was read before it routed; false when no connection came
 * back within the rejoin grace (a broker that answered neither it nor the
 * probe after it within the liveness timeout has its connection dropped,
 * and counts as a drop), or while the broker held the answer, answering the
 * probes, until the grace from the call ran out; at
 * once when none will (never connected, taken over, closed — also while it
 * waits), and at the first reconnect attempt (after `reconnectBaseMs`) when
 * the owner declines to reconnect there. It never dials a first connection
 * itself.
 *
 * @category constructors
 * @since 0.1.0
 */
export const settleRoundTrip = (config: SettleConfig): Effect.Effect<boolean> => {
  const { lifetime, livenessTimeoutMs, rejoinGraceMs, settledReads } = config

  /**
   * The round trip on `connection`; after a drop, again on the next, by `until` (set at the first drop).
   * Unanswered for a liveness timeout, the connection is probed (`keepWaiting`): a broker that answers
   * the probe is holding the settle on purpose (ParkedReplies.ts), so the same settle is waited for on,
   * probed again every liveness timeout, until the grace from the deadline (or `until`) — then false. A
   * probe left unanswered (a frozen broker) has the connection dropped, as the liveness probe would (P96):
   * that is a drop like any other.
   */
  const settleOn = (connection: ClientConnection, until?: number): Effect.Effect<boolean> =>
    Effect.flatMap(Clock.currentTimeMillis, (start) => {
      const heldUntil = until ?? start + rejoinGraceMs
      const dropped = Effect.flatMap(
        until === undefined ? Effect.map(Clock.currentTimeMillis, (now) => now + rejoinGraceMs) : Effect.succeed(until),
        (deadline) => Effect.andThen(untilRetired(connection, deadline), settleNext(deadline))
      )
      const keepWaiting = Effect.flatMap(Clock.currentTimeMillis, (now) =>
        now >= heldUntil ?
          Effect.succeed(undefined) :
          connection.probe(livenessTimeoutMs).pipe(
            Effect.andThen(Clock.currentTimeMillis),
            Effect.map((after) => after >= heldUntil ? undefined : Math.min(livenessTimeoutMs, heldUntil - after))
          ))
      return connection.settle(livenessTimeoutMs, keepWaiting).pipe(
        Effect.flatMap((answered) => answered ? Effect.as(settledReads, true) : Effect.succeed(false)),
        Effect.catchTag("ConnectionLost", () => dropped),
        Effect.catchTag("RequestTimeout", () =>
          Effect.andThen(lifetime.unanswered(connection, "settling round trip and liveness probe timed out"), dropped)),
        Effect.catch(() => Effect.succeed(false))
      )
    })

  /** Waits, until `deadline` at most, for the client to retire `connection` after its close. */
  const untilRetired = (connection: ClientConnection, deadline: number): Effect.Effect<void> =>
    Effect.suspend(() => {
      const retired = lifetime.retirementOf(connection)
      return retired === undefined
        ? Effect.void
        : Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.asVoid(Effect.timeoutOption(Deferred.await(retired), Math.max(0, deadline - now))))
    })

  /**
   * The round trip on the next live connection, once the client has one by `deadline`: waited for until
   * then (not the client's `connectTimeoutMs`), and no longer once the client is closed.
   */
  const settleNext = (deadline: number): Effect.Effect<boolean> =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      now >= deadline
        ? Effect.succeed(false)
        : Effect.flatMap(
          lifetime.nextConnection(deadline - now),
          (next) => next._tag === "Some" ? settleOn(next.value, deadline) : Effect.succeed(false)
        ))

  return Effect.suspend(() => {
    const live = lifetime.live()
    if (live !== undefined) return settleOn(live)
    // Never connected, or closed: no connection is coming that could hold a reply for this client.
    if (lifetime.connections() === 0 || lifetime.stopped()) return Effect.succeed(false)
    return Effect.flatMap(Clock.currentTimeMillis, (now) => settleNext(now + rejoinGraceMs))
  })
}
