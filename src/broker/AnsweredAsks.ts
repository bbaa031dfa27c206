/**
 * Asks answered to another client instance of the asker's session
 * (`reply-elsewhere-v1`; sim seed 16843 of `--settle-hold --delivery`).
 *
 * Owns: which reply answered each recently answered ask — the ask's record
 * key to the reply's outbound record (OutboundRecord.ts), whose route part
 * names the client instance the reply was given to and moves with it when
 * it is handed on (Receipts.handedOn, given back, flushed from the mailbox).
 * With it, the ask's receipt stamp and its message as this run opened it
 * (`openedAtOf`, `askOf`): what a withdrawal after the reply is stamped no
 * lower than, and names as the ask it withdrew (AskWithdrawals.withdrawAnswered).
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
 * instance the resending one cannot be (`mayHold`), no takeover's
 * custody hold waits on the connection (an
 * unconfirmed copy in the old connection's custody comes back to it at that
 * close), and the connection it took over is not still writing (`tookOver`:
 * a base client's takeover takes no hold, and what its socket never took
 * of that write comes back at its close; the write is not searched for the
 * reply). Anything else is answered as before: a timeout, never a false
 * "elsewhere". A reply lost before its asker had it (Asks.answerLost)
 * answered nothing: its entry goes (`forget`).
 *
 * An asker that read its ask's acknowledgement before the takeover does
 * not send it again, so it would never be told that way. So the broker also
 * tells a connection granted the extension as it registers the session
 * (`elsewhereOnReturn`, from Asks' registration hook, after the mailbox's
 * flush): each of the session's answered asks whose reply went for good,
 * under the same rules, and whose edge's deadline has not passed (an asker
 * waits no longer), once per (ask, client instance) — the entry keeps
 * the instance last told (`told`), and a registration by that instance again
 * is not told again. An ask the session withdrew (`cancel_ask`, as its
 * client's wait ends) is left out by the caller. A resend on a connection
 * told so at its registration is not told again (`toldOn`: the notice is
 * ahead of it on that connection); any other resend is told, as before.
 *
 * Cost: one entry per reply accepted along an ask edge (a plain message
 * pays nothing, nor does the replay check of a non-ask); bounded by
 * MAX_ANSWERED and by the replay window (a resend past it is no replay).
 * The reply's record is referenced, so one the records' bounds dropped stays
 * in memory until its entry goes; its route part is then gone, and the entry
 * says nothing. The index by asker session (`byAsker`) holds the same keys,
 * so the same bounds: an entry leaves it as it leaves the map. A
 * registration walks only its own session's entries, and only when the
 * index has any (measured in docs/protocol.md, `reply-elsewhere-v1`).
 */
import { AgedMap } from "./AgedMap.ts"
import { idOfKey } from "./DeliveryRecords.ts"
import type { OutboundRecord } from "./OutboundRecord.ts"
import type { Peer } from "./Peer.ts"
import { mayHold, type Session, type SessionInstance } from "./Registry.ts"

/**
 * One ask this run opened, as its withdrawals and its answer name it (Asks.ts, `askOf`): an object of its own per
 * ask, shared by its edge and every copy of its mail, holding only its record key — a withdrawal is kept up to 30
 * days, and holding the ask's message would keep its text (up to 1 MiB) that long (review revdg DG2).
 */
export interface AskIdentity {
  readonly askKey: string
}

/** Answered asks remembered at once; past it the oldest go (a resend of one of those waits out its timeout, as before). */
export const MAX_ANSWERED = 16_384

/** An ask told of at a registration (`elsewhereOnReturn`): its id, and the reply's that answered it. */
export interface AnsweredElsewhere {
  readonly messageId: string
  readonly replyId: string
}

/** One answered ask: its key, whose it is, the reply, its deadline, and the client instance last told at a registration. */
interface Answer {
  readonly askKey: string
  readonly askerKey: string
  readonly reply: OutboundRecord
  /** The ask edge's due time (broker clock, AskEdges.dueOf): past it no asker waits, and a registration is not told. */
  readonly until: number
  /** The ask's receipt, a stamp (`AskEdge.openedAt`), when its edge knew it: no withdrawal of it is stamped lower. */
  readonly openedAt: number | undefined
  /** The ask as this run opened it (AskWithdrawals.askOf), undefined for one restored: what its withdrawal names. */
  readonly ask: AskIdentity | undefined
  told: SessionInstance | undefined
}

const NONE: ReadonlyArray<AnsweredElsewhere> = []

/**
 * The reply, when it went for good to a client instance other than the one
 * holding `session` now, under the module header's rules; else undefined.
 */
const elsewhere = (reply: OutboundRecord, session: Session): OutboundRecord | undefined =>
  reply.routed && reply.receiverKey === session.key && !mayHold(reply.receiverInstance, session) ? reply : undefined

/**
 * Whether `old`, a connection taken over, may still give back at its close
 * what it was being written: its write is in progress, or the part its
 * socket never took waits for that close (`Peer.untakenRest`).
 */
const writing = (old: Peer): boolean => old.writer.inFlight !== undefined || old.untakenRest !== undefined

/** The reply that answered each recently answered ask, by the ask's record key. */
export class AnsweredAsks {
  private readonly answers = new AgedMap<string, Answer>(MAX_ANSWERED)
  /** The keys in `answers` by asker session key: the same entries, so the same bounds. */
  private readonly byAsker = new Map<string, Set<string>>()
  /**
   * The connection each registration took over while its write was in
   * progress (`tookOver`; weak: gone with the taker): until it closes, what
   * it was being written may come back to the taker.
   */
  private readonly behind = new WeakMap<Peer, Peer>()
  /** The asks each connection was told of at its registration (weak: gone with the connection). */
  private readonly toldOn = new WeakMap<Peer, Set<string>>()
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

  /** How many asker sessions have answered asks remembered (the index's size). */
  get askers(): number {
    return this.byAsker.size
  }

  /**
   * The ask `askKey` of the session `askerKey`, open until `until`, was
   * answered at `now` by the reply whose outbound record is `reply`; the
   * ask was received at the stamp `openedAt`, when known, its message being `ask` when this run opened it.
   */
  answered(
    askKey: string,
    askerKey: string,
    until: number,
    reply: OutboundRecord,
    now: number,
    openedAt?: number,
    ask?: AskIdentity
  ): void {
    const evicted = this.answers.set(askKey, { askKey, askerKey, reply, until, openedAt, ask, told: undefined }, now)
    let keys = this.byAsker.get(askerKey)
    if (keys === undefined) {
      keys = new Set()
      this.byAsker.set(askerKey, keys)
    }
    keys.add(askKey)
    for (const gone of evicted) this.unindex(gone)
  }

  /**
   * The reply that answered the ask `askKey` was lost before it reached its
   * asker (Asks.answerLost): the ask is open again, or expired, or withdrawn —
   * not answered, so no one is told it was.
   */
  forget(askKey: string): void {
    if (this.answers.size === 0) return
    const gone = this.answers.delete(askKey)
    if (gone !== undefined) this.unindex(gone)
  }

  /**
   * `peer` registered, taking over the session of the connection `old`: while
   * `old`'s write is in progress (or one it took over so is, a chain of
   * takeovers), a reply in it may come back to `peer` at that close — a base
   * client's, which has no custody, so no hold says so (`custodyHolds`).
   */
  tookOver(peer: Peer, old: Peer): void {
    const pending = writing(old) ? old : this.behind.get(old)
    if (pending !== undefined && writing(pending)) this.behind.set(peer, pending)
  }

  /** The stamp the answered ask `askKey` was received at (`answered`'s `openedAt`), or undefined when unknown. */
  openedAtOf(askKey: string): number | undefined {
    return this.answers.size === 0 ? undefined : this.answers.get(askKey)?.openedAt
  }

  /** The answered ask `askKey` as this run opened it (`answered`'s `ask`), or undefined when unknown. */
  askOf(askKey: string): AskIdentity | undefined {
    return this.answers.size === 0 ? undefined : this.answers.get(askKey)?.ask
  }

  /** Whether the ask `askKey` was answered within the window (and the bound has not pushed it out). */
  has(askKey: string): boolean {
    return this.answers.size > 0 && this.answers.has(askKey)
  }

  /**
   * The reply that answered the ask `askKey` when it went for good to
   * another client instance of the session `peer` holds, which is sending
   * the ask again; undefined when it did not, may still come to `peer`
   * (`mayGetBack`), or is not known (see the module header) — or `peer` was
   * told of it at its registration already (`elsewhereOnReturn`: the notice
   * is ahead on the same connection).
   */
  handedElsewhere(askKey: string, peer: Peer): OutboundRecord | undefined {
    const session = peer.session
    if (session === undefined || this.answers.size === 0 || this.mayGetBack(peer)) return undefined
    if (this.toldOn.get(peer)?.has(askKey) === true) return undefined
    const answer = this.answers.get(askKey)
    return answer === undefined ? undefined : elsewhere(answer.reply, session)
  }

  /**
   * The asks of the session `peer` has just registered at `now` whose
   * replies went for good to another client instance of it (as
   * `handedElsewhere`), less those past their deadline, those `skip` names
   * (withdrawn) and those already told to this client instance; each
   * returned is noted as told to it. Empty while a takeover's custody hold
   * waits on `peer`, or the connection it took over is still writing
   * (`mayGetBack`). Walks only the session's own entries.
   */
  elsewhereOnReturn(peer: Peer, now: number, skip: (askKey: string) => boolean): ReadonlyArray<AnsweredElsewhere> {
    const session = peer.session
    if (session === undefined || this.byAsker.size === 0 || this.mayGetBack(peer)) return NONE
    const keys = this.byAsker.get(session.key)
    if (keys === undefined) return NONE
    const found: Array<AnsweredElsewhere> = []
    let told: Set<string> | undefined
    for (const askKey of keys) {
      const answer = this.answers.get(askKey)
      if (answer === undefined || answer.until <= now || answer.told === session.instance || skip(askKey)) continue
      const reply = elsewhere(answer.reply, session)
      if (reply === undefined) continue
      answer.told = session.instance
      told ??= new Set()
      told.add(askKey)
      found.push({ messageId: idOfKey(session.key, askKey), replyId: reply.id })
    }
    if (told !== undefined) this.toldOn.set(peer, told)
    return found
  }

  /** Forgets answers older than the replay window. */
  prune(now: number): void {
    if (this.answers.size === 0) return
    for (const gone of this.answers.expire(now - this.windowMs)) this.unindex(gone)
  }

  /**
   * Whether a connection `peer` took over may still give it back what it
   * was given: a takeover's custody hold waits on `peer`, or the connection
   * it took over (`tookOver`) is still writing.
   */
  private mayGetBack(peer: Peer): boolean {
    if (peer.custodyHolds > 0) return true
    const old = this.behind.get(peer)
    return old !== undefined && writing(old)
  }

  /** Takes an entry that left `answers` out of the index. */
  private unindex(gone: Answer): void {
    const keys = this.byAsker.get(gone.askerKey)
    if (keys === undefined) return
    keys.delete(gone.askKey)
    if (keys.size === 0) this.byAsker.delete(gone.askerKey)
  }
}
