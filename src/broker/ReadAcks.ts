/**
 * Acknowledgements released by a read or a commit, whichever comes first
 * (durable mode, between clients granted `received-v1`; StoreJournal.ts).
 *
 * The durability promise is that a message is acknowledged only once it is
 * stored or read. Between two clients that confirm what they read, waiting
 * for the read is often shorter than waiting for a commit, and it costs the
 * store nothing: mail read before its commit is never written. So these
 * acknowledgements are held here, by their message's sender and id, and the
 * store writer is not hurried for them (the journal's lazy flush stores
 * their changes). A plain message or a reply is released when its recipient
 * confirms reading it (`read`); an ask only when the reply that closes its
 * edge is read (`answered`: a read ask whose edge is lost to a crash would
 * leave its reply nothing to find); every one when a commit stores what it
 * reveals (`stored`).
 *
 * What is held is the acknowledgement itself, one object carrying its own
 * bookkeeping (`Holdable`): no entry object around it, no key string
 * (ByMessage.ts) — each object kept per message until a read or a commit is
 * one more the garbage collector copies (docs/performance.md, "Durable,
 * eighth stop").
 *
 * Ownership: the journal's, so the Router's synchronous code only. One
 * table in the order the acknowledgements were made, which is their `upTo`
 * order (ids two senders share aside: ByMessage's `rest`, checked whole).
 */
import { ByMessage, type MessageEntry } from "./ByMessage.ts"

/** What is held: the acknowledgement of one message, which knows the change count it reveals. */
export interface Holdable<A> extends MessageEntry {
  /** The change count it reveals: once that is stored, it may go. */
  readonly upTo: number
  /** Whether the recipient's confirmed read releases it (a plain message or a reply, not an ask). */
  readonly byReceipt: boolean
  /** The ask acknowledgement released with it (set here, by `answered`). */
  answered: A | undefined
}

/** Nothing released (shared: the common answer of `hold`, `answered` and `read`). */
const NONE: ReadonlyArray<never> = Object.freeze([])

/** `ack`, and the ask acknowledgement it carries, as what to queue. */
export const released = <A extends Holdable<A>>(ack: A): ReadonlyArray<A> =>
  ack.answered === undefined ? [ack] : [ack, ack.answered]

/** The acknowledgements held until a read or a commit; see the module header. */
export class ReadAcks<A extends Holdable<A>> {
  private readonly held = new ByMessage<A>()

  /** How many are held (tests, diagnostics). */
  get size(): number {
    return this.held.size
  }

  /**
   * Holds `ack` for its message. A message already held (never expected: a
   * (sender, id) is accepted once while its mail is held) gives back its
   * acknowledgements, for the caller to hold until a commit.
   */
  hold(ack: A): ReadonlyArray<A> {
    const previous = this.held.set(ack)
    if (previous === undefined) return NONE
    // Held again: at the end of the order, where its `upTo` belongs.
    this.held.remove(ack)
    this.held.set(ack)
    return released(previous)
  }

  /**
   * The reply (`replySender`, `replyId`) closed the edge of the ask
   * (`askSender`, `askId`): the ask's acknowledgement, when both are held,
   * goes with the reply's from now on. Returns what the ask itself carried
   * (for the caller to hold until a commit; only an ask that was also a reply
   * carries anything).
   */
  answered(askSender: string, askId: string, replySender: string, replyId: string): ReadonlyArray<A> {
    return this.answeredBy(askSender, askId, this.held.get(replySender, replyId))
  }

  /**
   * As `answered`, with the reply's acknowledgement found by the caller
   * (held here or elsewhere: the journal keeps a reply's on its mail entry,
   * StoreJournal.ts); undefined when it is not held.
   */
  answeredBy(askSender: string, askId: string, reply: A | undefined): ReadonlyArray<A> {
    if (reply === undefined || this.held.size === 0) return NONE
    const ask = this.held.get(askSender, askId)
    // Only an ask (held until stored) is linked, and only to a reply made after it (as every reply is):
    // anything else keeps its own rule, so a commit never releases what it has not stored.
    if (
      ask === undefined || ask.byReceipt || reply === undefined || !reply.byReceipt || reply.answered !== undefined ||
      ask.upTo > reply.upTo
    ) return NONE
    this.held.remove(ask)
    const carried = ask.answered
    ask.answered = undefined
    reply.answered = ask
    return carried === undefined ? NONE : [carried]
  }

  /** The recipient confirmed reading `senderKey`'s message `id` (or it was dropped): what that releases. */
  read(senderKey: string, id: string): ReadonlyArray<A> {
    const ack = this.held.get(senderKey, id)
    if (ack === undefined || !ack.byReceipt) return NONE
    this.held.remove(ack)
    return released(ack)
  }

  /** Everything up to change count `stored` is stored: what that releases, in order. */
  stored(stored: number): ReadonlyArray<A> {
    if (this.held.size === 0) return NONE
    const out: Array<A> = []
    for (const ack of this.held.firsts()) {
      if (ack.upTo > stored) break
      this.held.remove(ack)
      out.push(...released(ack))
    }
    // Ids two senders used: not in the order above, so each is checked.
    for (const ack of this.held.rest()) {
      if (ack.upTo > stored) continue
      this.held.remove(ack)
      out.push(...released(ack))
    }
    return out
  }
}
