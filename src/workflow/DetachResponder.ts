/**
 * The foreground child's side of the detach handshake (C-ORD-11, C-ORD-12,
 * C-ORD-19).
 *
 * The child answers only requests addressed to one of its own targets, and
 * only while it is still attached and available. A `probe` is acknowledged
 * if its route can be reserved (`DetachReservations`: new identity, 1 s
 * lifetime); a `commit` only if an identical live reservation exists — the
 * child then detaches from foreground supervision (`release`, which lets the
 * parent's `subagent` call return; in a parallel group it is the group's
 * shared release, C-ORD-21) and acknowledges. Everything else goes
 * unanswered, which the parent reads as `unclaimed` after its timeout.
 *
 * Owner: the responder; its state changes only in the synchronous steps of
 * `onRequest`, with time read from `Clock`.
 */
import { Clock, Effect } from "effect"
import type { DetachAck, DetachRequest } from "./DetachRoute.ts"
import { DetachReservations, RESERVATION_TTL_MS } from "./DetachReservations.ts"

/**
 * What a foreground child's responder needs.
 *
 * @category ports
 * @since 0.1.0
 */
export interface DetachResponderOptions {
  /** The names and broker ids this child is known by. */
  readonly targets: ReadonlyArray<string>
  /** Detaches the child from foreground supervision (releases the parent's `subagent` call). */
  readonly release: Effect.Effect<void>
  /** Sends an acknowledgement back to the parent. */
  readonly reply: (ack: DetachAck) => Effect.Effect<void>
  /** How long an uncommitted reservation lasts; default 1 s (C-ORD-11). */
  readonly reservationTtlMs?: number
}

/**
 * A foreground child's responder.
 *
 * @category models
 * @since 0.1.0
 */
export interface DetachResponder {
  /** Handles one request from the parent; answers only when the contract says so. */
  readonly onRequest: (request: DetachRequest) => Effect.Effect<void>
  /** Marks the child (un)available: an unavailable child answers nothing (C-ORD-11). */
  readonly setUnavailable: (unavailable: boolean) => Effect.Effect<void>
  /** Whether the child has detached. */
  readonly detached: Effect.Effect<boolean>
}

/**
 * Makes a foreground child's responder.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeDetachResponder = (options: DetachResponderOptions): Effect.Effect<DetachResponder> =>
  Effect.sync(() => {
    const reservations = new DetachReservations(options.reservationTtlMs ?? RESERVATION_TTL_MS)
    let detached = false
    let unavailable = false

    const onRequest = (request: DetachRequest): Effect.Effect<void> =>
      Effect.gen(function*() {
        if (!options.targets.includes(request.childIntercomTarget) || detached || unavailable) return
        const now = yield* Clock.currentTimeMillis
        const { phase, ...route } = request
        if (phase === "probe") {
          if (!reservations.reserve(route, now)) return
          return yield* options.reply({ ...route, phase, accepted: true })
        }
        if (!reservations.commit(route, now)) return
        detached = true
        yield* options.release
        yield* options.reply({ ...route, phase, accepted: true })
      })

    return {
      onRequest,
      setUnavailable: (value) =>
        Effect.sync(() => {
          unavailable = value
        }),
      detached: Effect.sync(() => detached)
    }
  })
