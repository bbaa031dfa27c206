/**
 * Receipts (P70) held for a sender that is away. A receiver's
 * `message_receipt` along a route whose sender has no live registration at
 * that moment is kept here, as the frame the sender will read, and written
 * when a session registers under that sender's key again: a sender whose
 * connection dropped still learns that its message was injected or
 * acknowledged meanwhile.
 *
 * Memory only, and bounded apart from the mailbox's failure notices
 * (MailDelivery.ts), so a receiver's receipts never crowd out a notice that
 * a message was lost: each held receipt is kept an hour at most (the life of
 * the route it came along), at most MAX_HELD_PER_SENDER per sender (past it,
 * that sender's oldest goes, so a receiver that repeats itself only pushes
 * out receipts to the same sender), and MAX_HELD receipts or MAX_HELD_CHARS
 * characters of frames overall (past either, the oldest of all goes). A
 * receipt dropped for a bound, or held by a broker that stops, is never sent,
 * and nobody is told: the message itself was delivered; only its status is
 * missing.
 *
 * The held receipts are kept in the order they were held (an `AgedMap`, keyed
 * by the receipt itself), so expiry and the overall bounds take the oldest in
 * O(1); each sender's are also listed, oldest first, for its return. Owner:
 * Receipts, in the Router's synchronous code.
 */
import { AgedMap } from "./AgedMap.ts"

const HOUR = 3_600_000

/** Receipts held for one absent sender; past it, its oldest is dropped. */
export const MAX_HELD_PER_SENDER = 256

/** Receipts held for absent senders, overall; past it, the oldest is dropped. */
export const MAX_HELD = 4_096

/** Characters of held receipt frames, overall; past it, the oldest is dropped. */
export const MAX_HELD_CHARS = 8 * 1024 * 1024

/** One held receipt. */
interface Held {
  readonly senderKey: string
  readonly frame: string
  readonly at: number
}

/** Receipts held for absent senders, until they register again; see the module header. */
export class HeldReceipts {
  /** Each absent sender's held receipts, oldest first. */
  private readonly bySender = new Map<string, Array<Held>>()
  /** Every held receipt, oldest first, at most MAX_HELD. */
  private readonly all = new AgedMap<Held, Held>(MAX_HELD)
  private chars = 0

  /** Receipts held now. */
  get size(): number {
    return this.all.size
  }

  /** Holds `frame`, a receipt for the session of `senderKey`, which is away (broker clock `at`). */
  hold(senderKey: string, frame: string, at: number): void {
    let list = this.bySender.get(senderKey)
    if (list === undefined) this.bySender.set(senderKey, list = [])
    else if (list.length >= MAX_HELD_PER_SENDER) {
      const first = list[0]
      if (first !== undefined) this.all.delete(first)
      this.removed(first)
    }
    const held: Held = { senderKey, frame, at }
    list.push(held)
    this.chars += frame.length
    for (const evicted of this.all.set(held, held, at)) this.removed(evicted)
    while (this.chars > MAX_HELD_CHARS) {
      const oldest = this.all.expireOldest(Number.POSITIVE_INFINITY)
      if (oldest === undefined) break
      this.removed(oldest)
    }
  }

  /**
   * The receipts held for `senderKey` that are under an hour old at `now`,
   * oldest first; none of them is held any longer.
   */
  take(senderKey: string, now: number): ReadonlyArray<string> {
    const list = this.bySender.get(senderKey)
    if (list === undefined) return []
    this.bySender.delete(senderKey)
    const frames: Array<string> = []
    for (const held of list) {
      if (now - held.at <= HOUR) frames.push(held.frame)
      this.all.delete(held)
      this.chars -= held.frame.length
    }
    return frames
  }

  /** Drops the receipts held for longer than an hour at `now`. */
  expire(now: number): void {
    for (const held of this.all.expire(now - HOUR - 1)) this.removed(held)
  }

  /**
   * `held`, its sender's oldest (as every receipt dropped before its sender
   * returns is), has left `all`: it leaves its sender's list and the count.
   */
  private removed(held: Held | undefined): void {
    if (held === undefined) return
    const list = this.bySender.get(held.senderKey)
    if (list !== undefined) {
      list.shift()
      if (list.length === 0) this.bySender.delete(held.senderKey)
    }
    this.chars -= held.frame.length
  }
}
