/**
 * Receipts (P70) a session posted while its client had no live connection,
 * kept by the client for the next connection it adopts (known issue 18).
 *
 * They are the client's, not the poster's: a session generation that posted
 * one may close before a connection is back, and nothing of it may outlive
 * it (the simulation's `fiber-leak`). So no fiber waits for the connection:
 * `IntercomClient` keeps the frame here and hands the kept ones to the next
 * connection when it adopts it.
 *
 * Bounded: at most `MAX_KEPT_RECEIPTS`, the oldest dropped first. A receipt
 * only tells a sender what became of its message, and the broker forwards
 * one only along a live route (an hour at most, and both sessions still the
 * ones of the delivery, docs/protocol.md), so the oldest are the least
 * likely to reach anyone; a client that reads for long without a broker must
 * not grow without bound.
 *
 * It owns the kept frames: a FIFO (Fifo.ts) touched only by synchronous code.
 */
import { Fifo } from "./Fifo.ts"

/**
 * How many receipts are kept at most while no connection is live: about 1 MB
 * of small frames.
 *
 * @category constants
 * @since 0.1.0
 */
export const MAX_KEPT_RECEIPTS = 4_096

/**
 * The receipts kept for the next connection (see the module header).
 *
 * @category models
 * @since 0.1.0
 */
export class KeptReceipts {
  private readonly kept = new Fifo<object>()

  /** How many receipts are kept. */
  get size(): number {
    return this.kept.size
  }

  /** Keeps a receipt frame; past the bound the oldest kept one is dropped, never sent. */
  keep(frame: object): void {
    this.kept.push(frame)
    if (this.kept.size > MAX_KEPT_RECEIPTS) {
      const oldest = this.kept.peek()
      if (oldest !== undefined) this.kept.remove(oldest)
    }
  }

  /** Hands the kept receipts to `post`, oldest first, until it refuses one: that one and the rest stay kept. */
  flush(post: (frame: object) => boolean): void {
    for (let head = this.kept.peek(); head !== undefined && post(head); head = this.kept.peek()) {
      this.kept.remove(head)
    }
  }
}
