/**
 * Acknowledgements released by a read or a commit, whichever comes first
 * (durable mode, between clients granted `received-v1`; StoreJournal.ts).
 *
 * The durability promise is that a message is acknowledged only once it is
 * stored or read. Between two clients that confirm what they read, waiting
 * for the read is often shorter than waiting for a commit, and it costs the
 * store nothing: mail read before its commit is never written. So these
 * acknowledgements are held here, by their message's record key, and the
 * store writer is not hurried for them (the journal's lazy flush stores
 * their changes). A plain message or a reply is released when its recipient
 * confirms reading it (`read`); an ask only when the reply that closes its
 * edge is read (`answered`: a read ask whose edge is lost to a crash would
 * leave its reply nothing to find); every one when a commit stores what it
 * reveals (`stored`).
 *
 * Ownership: the journal's, so the Router's synchronous code only. One map in
 * the order the acknowledgements were made, which is their `upTo` order.
 */
/** What is held: anything that knows the change count it reveals (the journal holds `HeldAck`s). */
export interface Revealing {
  /** The change count it reveals: once that is stored, it may go. */
  readonly upTo: number
}

/** One acknowledgement held here, and the ask acknowledgement released with it. */
interface Entry<A extends Revealing> {
  readonly ack: A
  /** Whether the recipient's confirmed read releases it (a plain message or a reply, not an ask). */
  readonly byReceipt: boolean
  answered: A | undefined
}

/** Nothing released (shared: the common answer of `hold`, `answered` and `read`). */
const NONE: ReadonlyArray<never> = Object.freeze([])

/** `entry`'s acknowledgement, and the ask acknowledgement it carries, as what to queue. */
const released = <A extends Revealing>(entry: Entry<A>): ReadonlyArray<A> =>
  entry.answered === undefined ? [entry.ack] : [entry.ack, entry.answered]

/** The acknowledgements held until a read or a commit; see the module header. */
export class ReadAcks<A extends Revealing> {
  private readonly held = new Map<string, Entry<A>>()

  /** How many are held (tests, diagnostics). */
  get size(): number {
    return this.held.size
  }

  /**
   * Holds `ack` for the message `recordKey`. A key already held (never
   * expected: a record key is accepted once while its mail is held) gives
   * back its acknowledgements, for the caller to hold until a commit.
   */
  hold(recordKey: string, ack: A, byReceipt: boolean): ReadonlyArray<A> {
    const previous = this.held.get(recordKey)
    // Deleted first, so it is set at the end of the order again (the common case: not held, one lookup).
    if (previous !== undefined) this.held.delete(recordKey)
    this.held.set(recordKey, { ack, byReceipt, answered: undefined })
    return previous === undefined ? NONE : released(previous)
  }

  /**
   * The reply `replyKey` closed the edge of the ask `askKey`: the ask's
   * acknowledgement, when both are held, goes with the reply's from now on.
   * Returns what the ask itself carried (for the caller to hold until a
   * commit; only an ask that was also a reply carries anything).
   */
  answered(askKey: string, replyKey: string): ReadonlyArray<A> {
    const ask = this.held.get(askKey)
    const reply = this.held.get(replyKey)
    // Only an ask (held until stored) is linked, and only to a reply made after it (as every reply is):
    // anything else keeps its own rule, so a commit never releases what it has not stored.
    if (
      ask === undefined || ask.byReceipt || reply === undefined || !reply.byReceipt || reply.answered !== undefined ||
      ask.ack.upTo > reply.ack.upTo
    ) return NONE
    this.held.delete(askKey)
    reply.answered = ask.ack
    return ask.answered === undefined ? NONE : [ask.answered]
  }

  /** The recipient confirmed reading the message `recordKey` (or it was dropped): what that releases. */
  read(recordKey: string): ReadonlyArray<A> {
    const entry = this.held.get(recordKey)
    if (entry === undefined || !entry.byReceipt) return NONE
    this.held.delete(recordKey)
    return released(entry)
  }

  /** Everything up to change count `stored` is stored: what that releases, in order. */
  stored(stored: number): ReadonlyArray<A> {
    if (this.held.size === 0) return NONE
    const out: Array<A> = []
    for (const [key, entry] of this.held) {
      if (entry.ack.upTo > stored) break
      this.held.delete(key)
      out.push(...released(entry))
    }
    return out
  }
}
