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
 * The held receipts are linked in the order they were held, so expiry and
 * the overall bound take the oldest in O(1); each sender's are also listed,
 * oldest first, for its return. Owner: Receipts, in the Router's synchronous
 * code.
 */

const HOUR = 3_600_000

/** Receipts held for one absent sender; past it, its oldest is dropped. */
export const MAX_HELD_PER_SENDER = 256

/** Receipts held for absent senders, overall; past it, the oldest is dropped. */
export const MAX_HELD = 4_096

/** Characters of held receipt frames, overall; past it, the oldest is dropped. */
export const MAX_HELD_CHARS = 8 * 1024 * 1024

/** One held receipt, on the age list and in its sender's list. */
interface Held {
  readonly senderKey: string
  readonly frame: string
  readonly at: number
  older: Held | undefined
  newer: Held | undefined
}

/** Receipts held for absent senders, until they register again; see the module header. */
export class HeldReceipts {
  /** Each absent sender's held receipts, oldest first. */
  private readonly bySender = new Map<string, Array<Held>>()
  private oldest: Held | undefined = undefined
  private newest: Held | undefined = undefined
  private count = 0
  private chars = 0

  /** Receipts held now. */
  get size(): number {
    return this.count
  }

  /** Holds `frame`, a receipt for the session of `senderKey`, which is away (broker clock `at`). */
  hold(senderKey: string, frame: string, at: number): void {
    let list = this.bySender.get(senderKey)
    if (list === undefined) this.bySender.set(senderKey, list = [])
    else if (list.length >= MAX_HELD_PER_SENDER) {
      const first = list[0]
      if (first !== undefined) this.drop(first)
    }
    const held: Held = { senderKey, frame, at, older: this.newest, newer: undefined }
    if (this.newest !== undefined) this.newest.newer = held
    else this.oldest = held
    this.newest = held
    list.push(held)
    this.count++
    this.chars += frame.length
    while ((this.count > MAX_HELD || this.chars > MAX_HELD_CHARS) && this.oldest !== undefined) this.drop(this.oldest)
  }

  /**
   * The receipts held for `senderKey` that are under an hour old at `now`,
   * oldest first; none of them is held any longer.
   */
  take(senderKey: string, now: number): ReadonlyArray<string> {
    const list = this.bySender.get(senderKey)
    if (list === undefined) return []
    const frames: Array<string> = []
    for (const held of list) {
      if (now - held.at <= HOUR) frames.push(held.frame)
      this.unlink(held)
    }
    this.bySender.delete(senderKey)
    return frames
  }

  /** Drops the receipts held for longer than an hour at `now`. */
  expire(now: number): void {
    const cutoff = now - HOUR - 1
    while (this.oldest !== undefined && this.oldest.at <= cutoff) this.drop(this.oldest)
  }

  /** Drops `held`, its sender's oldest (as every dropped receipt is). */
  private drop(held: Held): void {
    const list = this.bySender.get(held.senderKey)
    if (list !== undefined) {
      list.shift()
      if (list.length === 0) this.bySender.delete(held.senderKey)
    }
    this.unlink(held)
  }

  private unlink(held: Held): void {
    if (held.older !== undefined) held.older.newer = held.newer
    else this.oldest = held.newer
    if (held.newer !== undefined) held.newer.older = held.older
    else this.newest = held.older
    held.older = held.newer = undefined
    this.count--
    this.chars -= held.frame.length
  }
}
