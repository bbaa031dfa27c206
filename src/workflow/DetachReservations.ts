/**
 * The foreground child's reservation table for the detach handshake
 * (C-ORD-11, C-ORD-12), as plain synchronous state with time passed in.
 *
 * A probe reserves its route only if the identity (requestId, messageId,
 * senderId, generation) is new: not held by a live reservation and never
 * committed. A reservation lapses `ttlMs` (1 s) after it was taken unless
 * it is committed; a commit is accepted only for a live reservation whose
 * route is identical in every field. Expiry is read from the caller's clock
 * (`now`, from `Clock`), so the table needs no timer of its own and tests
 * drive it with `TestClock` or plain numbers.
 */
import { type DetachRoute, reservationKey, sameRoute } from "./DetachRoute.ts"

interface Reservation {
  readonly route: DetachRoute
  readonly expiresAt: number
}

/**
 * How long an uncommitted reservation lasts (C-ORD-11).
 *
 * @category constants
 * @since 0.1.0
 */
export const RESERVATION_TTL_MS = 1000

/**
 * The reservation table; see the module header.
 *
 * @category constructors
 * @since 0.1.0
 */
export class DetachReservations {
  private readonly live = new Map<string, Reservation>()
  private readonly committed = new Set<string>()
  private readonly ttlMs: number

  constructor(ttlMs: number = RESERVATION_TTL_MS) {
    this.ttlMs = ttlMs
  }

  /** Takes a reservation for `route` at `now`; false when its identity is held or was committed. */
  reserve(route: DetachRoute, now: number): boolean {
    this.expire(now)
    const key = reservationKey(route)
    if (this.committed.has(key) || this.live.has(key)) return false
    this.live.set(key, { route, expiresAt: now + this.ttlMs })
    return true
  }

  /** Commits the live reservation with an identical route; false when there is none (expired, other route). */
  commit(route: DetachRoute, now: number): boolean {
    this.expire(now)
    const key = reservationKey(route)
    const reservation = this.live.get(key)
    if (reservation === undefined || !sameRoute(reservation.route, route)) return false
    this.live.delete(key)
    this.committed.add(key)
    return true
  }

  /** How many uncommitted reservations are live at `now`. */
  liveCount(now: number): number {
    this.expire(now)
    return this.live.size
  }

  /** Drops reservations whose time is up. */
  private expire(now: number): void {
    for (const [key, reservation] of this.live) {
      if (reservation.expiresAt <= now) this.live.delete(key)
    }
  }
}
