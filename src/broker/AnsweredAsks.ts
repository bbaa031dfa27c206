/**
 * Asks answered to another client instance of the asker's session
 * (`reply-elsewhere-v1`; sim seed 16843 of `--settle-hold --delivery`).
 *
 * Owns: which reply answered each recently answered ask — the ask's record
 * key to the reply's outbound record (OutboundRecords.ts), whose route part
 * names the client instance the reply was given to and moves with it when
 * it is handed on (Receipts.handedOn, given back, flushed from the mailbox).
 *
 * A reply follows the session, not the instance that asked: when another
 * client takes the session over (P16) it is handed the asker's outbox and
 * mail, the reply among them. A base client's read is the delivery, and a
 * `received-v1` client's confirmation is; either way the reply is that
 * instance's for good. If the asking instance takes the session back and
 * sends its ask again (it had no acknowledgement: a replay, P46), its record
 * says `delivered` and nothing else comes: its client would wait out its
 * timeout though the broker knows the ask was answered.
 *
 * Design: the broker tells the resending connection, when it asked for the
 * extension, that the ask was answered and where the reply went
 * (`ask_answered_elsewhere`), and its client ends the ask with that error
 * at once. It does not write it a copy of the reply: the instance that got
 * it may have shown it to the session's user already, and the two clients
 * dedupe by id each on its own, so a copy could be shown twice; the reply is
 * not lost — the session has it. Told only when the reply cannot still reach
 * the resending connection: its route is kept, to this session, names an
 * instance the resending one cannot be (`mayHold`), and no takeover's
 * custody hold waits on the connection (an
 * unconfirmed copy in the old connection's custody comes back to it at that
 * close). Anything else is answered as before: a timeout, never a false
 * "elsewhere".
 *
 * Cost: one entry per reply accepted along an ask edge (a plain message
 * pays nothing, nor does the replay check of a non-ask); bounded by
 * MAX_ANSWERED and by the replay window (a resend past it is no replay).
 * The reply's record is referenced, so one the records' bounds dropped stays
 * in memory until its entry goes; its route part is then gone, and the entry
 * says nothing (measured in docs/protocol.md, `reply-elsewhere-v1`).
 */
import { AgedMap } from "./AgedMap.ts"
import type { OutboundRecord } from "./OutboundRecords.ts"
import type { Peer } from "./Peer.ts"
import { mayHold } from "./Registry.ts"

/** Answered asks remembered at once; past it the oldest go (a resend of one of those waits out its timeout, as before). */
export const MAX_ANSWERED = 16_384

/** The reply that answered each recently answered ask, by the ask's record key. */
export class AnsweredAsks {
  private readonly answers = new AgedMap<string, OutboundRecord>(MAX_ANSWERED)
  /** How long an entry is kept: the replay window (a resend after it is not a replay). */
  readonly windowMs: number

  /** @param windowMs how long an entry is kept: the replay window (a resend after it is not a replay). */
  constructor(windowMs: number) {
    this.windowMs = windowMs
  }

  /** How many answered asks are remembered. */
  get size(): number {
    return this.answers.size
  }

  /** The ask `askKey` was answered at `now` by the reply whose outbound record is `reply`. */
  answered(askKey: string, reply: OutboundRecord, now: number): void {
    this.answers.set(askKey, reply, now)
  }

  /** Whether the ask `askKey` was answered within the window (and the bound has not pushed it out). */
  has(askKey: string): boolean {
    return this.answers.size > 0 && this.answers.has(askKey)
  }

  /**
   * The reply that answered the ask `askKey` when it went for good to
   * another client instance of the session `peer` holds, which is sending
   * the ask again; undefined when it did not, may still come to `peer`, or
   * is not known (see the module header).
   */
  handedElsewhere(askKey: string, peer: Peer): OutboundRecord | undefined {
    const session = peer.session
    if (session === undefined || this.answers.size === 0 || peer.custodyHolds > 0) return undefined
    const reply = this.answers.get(askKey)
    if (reply === undefined || !reply.routed) return undefined
    if (reply.receiverKey !== session.key || mayHold(reply.receiverInstance, session)) return undefined
    return reply
  }

  /** Forgets answers older than the replay window. */
  prune(now: number): void {
    if (this.answers.size > 0) this.answers.expire(now - this.windowMs)
  }
}
