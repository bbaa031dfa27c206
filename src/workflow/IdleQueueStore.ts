/**
 * The busy parent's FIFO idle queue as plain synchronous state (C-DLV-10):
 * entries in arrival order, each with the sequence number it arrived with.
 *
 * Everything here is synchronous on purpose. The terminal barrier's claim
 * (C-ORD-25) and the detach handshake's "put it in the queue first"
 * (C-ORD-18) must each happen in one step that nothing can interleave with;
 * in a single-threaded runtime one synchronous call is that step. The
 * `IdleQueue` actor owns the store and is its only writer besides those
 * synchronous calls.
 *
 * Rollback puts entries back by their original sequence number, so they
 * regain their original relative positions and anything that arrived in the
 * meantime stays behind them (C-ORD-29).
 */
import { entryKey, type InboundEntry } from "./InboundEntry.ts"

interface Slot<A> {
  readonly seq: number
  readonly key: string
  readonly entry: InboundEntry<A>
}

/**
 * Entries taken out of the queue together, with a way to put back the ones
 * that were not delivered.
 *
 * @category models
 * @since 0.1.0
 */
export interface Claim<A> {
  /** The claimed entries, in queue (FIFO) order. */
  readonly entries: ReadonlyArray<InboundEntry<A>>
  /**
   * Puts `entries[from..]` back at their original positions (C-ORD-29);
   * entries already delivered (`< from`) stay out. An entry whose key was
   * queued again meanwhile is not duplicated. Calling it twice is a no-op.
   */
  readonly rollback: (from: number) => void
}

/**
 * The synchronous idle-queue state; see the module header.
 *
 * @category constructors
 * @since 0.1.0
 */
export class IdleQueueStore<A> {
  private slots: Array<Slot<A>> = []
  private readonly keys = new Set<string>()
  private nextSeq = 0

  /** How many entries wait. */
  get size(): number {
    return this.slots.length
  }

  /** The waiting entries, oldest first. */
  entries(): ReadonlyArray<InboundEntry<A>> {
    return this.slots.map((slot) => slot.entry)
  }

  /** Whether (sender, message) waits in the queue. */
  has(entry: { readonly senderId: string; readonly messageId: string }): boolean {
    return this.keys.has(entryKey(entry))
  }

  /** Appends an entry; false (and nothing changes) when the same (sender, message) already waits. */
  enqueue(entry: InboundEntry<A>): boolean {
    const key = entryKey(entry)
    if (this.keys.has(key)) return false
    this.keys.add(key)
    this.slots.push({ seq: this.nextSeq++, key, entry })
    return true
  }

  /**
   * Removes (sender, message) and returns it, or undefined when it is not
   * there (never queued, flushed, or claimed by a barrier: C-ORD-18).
   */
  remove(entry: { readonly senderId: string; readonly messageId: string }): InboundEntry<A> | undefined {
    const key = entryKey(entry)
    if (!this.keys.has(key)) return undefined
    const index = this.slots.findIndex((slot) => slot.key === key)
    const [slot] = this.slots.splice(index, 1)
    this.keys.delete(key)
    return slot?.entry
  }

  /**
   * Takes out, in one step, every entry `select(queued)` accepts; the rest
   * keep their positions (C-ORD-27). `select` sees the whole queue first, so
   * a rule may depend on the other entries (C-ORD-26's legacy name rule).
   */
  claim(select: (queued: ReadonlyArray<InboundEntry<A>>) => (entry: InboundEntry<A>) => boolean): Claim<A> {
    const accept = select(this.entries())
    const taken: Array<Slot<A>> = []
    const kept: Array<Slot<A>> = []
    for (const slot of this.slots) (accept(slot.entry) ? taken : kept).push(slot)
    if (taken.length === 0) return { entries: [], rollback: () => {} }
    this.slots = kept
    for (const slot of taken) this.keys.delete(slot.key)
    let rolledBack = false
    return {
      entries: taken.map((slot) => slot.entry),
      rollback: (from) => {
        if (rolledBack) return
        rolledBack = true
        this.restore(taken.slice(Math.max(0, from)))
      }
    }
  }

  /** Takes out everything (a flush): a claim of the whole queue. */
  takeAll(): Claim<A> {
    return this.claim(() => () => true)
  }

  /**
   * C-DLV-17: drops queued progress updates from a child proven finished —
   * only those whose sender and generated thread both match exactly, and
   * never an ask or an answer. Returns them, so the caller can keep them in
   * history without triggering a turn.
   */
  dropFinishedProgress(senderId: string, threadId: string): ReadonlyArray<InboundEntry<A>> {
    return this.claim(() => (entry) =>
      entry.progress === true && entry.senderId === senderId && entry.threadId === threadId &&
      !entry.expectsReply && entry.replyTo === undefined
    ).entries
  }

  /** Re-inserts slots by sequence number (each slot list is already in sequence order). */
  private restore(back: ReadonlyArray<Slot<A>>): void {
    if (back.length === 0) return
    const current = this.slots
    const merged: Array<Slot<A>> = []
    let i = 0
    for (const slot of back) {
      if (this.keys.has(slot.key)) continue
      let next = current[i]
      while (next !== undefined && next.seq < slot.seq) {
        merged.push(next)
        next = current[++i]
      }
      merged.push(slot)
      this.keys.add(slot.key)
    }
    for (; i < current.length; i++) {
      const rest = current[i]
      if (rest !== undefined) merged.push(rest)
    }
    this.slots = merged
  }
}
