/**
 * The broker's stamps: `brokerReceivedAt` on a message it accepts and a
 * control's `timestamp`. Owns the last stamp given, so that stamps never go
 * backwards when the wall clock does (an NTP step, a VM resumed, a durable
 * broker restarted on a host whose clock is behind): a client reads a control
 * stamped before a message's `brokerReceivedAt` as about an earlier message
 * under the same (sender, id) (docs/protocol.md, "Controls").
 *
 * Only stamps come from here: timers and expiry read the broker's clock as it
 * is (clamping those would freeze broker time during a step back). Plain
 * synchronous code: one comparison per stamp.
 */

/** Non-decreasing millisecond stamps read from a wall clock that may step back. */
export class BrokerStamps {
  private last = Number.NEGATIVE_INFINITY
  private readonly clock: () => number

  /** @param clock milliseconds on the broker's `Clock` (TestClock in tests). */
  constructor(clock: () => number) {
    this.clock = clock
  }

  /** A stamp for now: the clock's reading, or the last stamp given when the clock reads earlier than it. */
  next(): number {
    return this.at(this.clock())
  }

  /** As `next`, for a caller that read the clock already (`now`, on the same clock): one comparison. */
  at(now: number): number {
    if (now > this.last) this.last = now
    return this.last
  }

  /** No later stamp is below `at` (at recovery: the latest stamp a durable broker's last run stored). */
  floor(at: number): void {
    if (at > this.last) this.last = at
  }
}
