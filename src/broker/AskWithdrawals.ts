/**
 * Withdrawn asks, remembered: which asks their asker withdrew (`cancel_ask`,
 * `cancel_message`) before their deadline, and when (`withdraw`), so that a
 * copy of one given back past its deadline goes silently rather than as
 * expired (`Asks.withdrawnEarly`) and a lost reply does not open it again
 * (`Asks.answerLost`); with them, the identity of each ask this run opened
 * (`askOf`), which ties a withdrawal to the ask it withdrew and no other
 * under the same id. Bounded (`MAX_WITHDRAWN` keys, `MAX_WITHDRAWN_PER_KEY`
 * a key), stored by a durable broker (`StoreJournal.askWithdrawn`,
 * WithdrawnAsks.ts) and restored at startup (`restore`).
 *
 * Owns when an ask counts as withdrawn — by its asker (`withdrawNow` for
 * `cancel_ask`, `withdrawAnswered` once a reply closed its edge, both for
 * `cancel_message`: `cancelled`) or by the mailbox dropping a copy it told
 * the asker of (`askLost`) — and the memory of it, on the stamps' scale, as
 * the ask's mail's `brokerReceivedAt` (Asks.ts, "One scale"). The edges
 * (AskEdges.ts) and which reply answered an ask (AnsweredAsks.ts) are read
 * and closed here, kept elsewhere.
 */
import { MAX_ASK_TIMEOUT_MS } from "../protocol/constants.ts"
import type { Message } from "../protocol/frames.ts"
import { type AskEdge, type AskEdges, dueOf } from "./AskEdges.ts"
import { AgedMap } from "./AgedMap.ts"
import type { AnsweredAsks, AskIdentity } from "./AnsweredAsks.ts"
import type { Mail } from "./Peer.ts"
import type { RouterContext } from "./RouterContext.ts"

/** Withdrawn asks that `AskWithdrawals` remembers (`withdrawn`); past it the oldest go. */
const MAX_WITHDRAWN = 4096

/** Withdrawals remembered under one key (`Withdrawal.earlier`, the newest included); past it the oldest go. */
const MAX_WITHDRAWN_PER_KEY = 4

/**
 * One remembered withdrawal (`AskWithdrawals.withdrawn`'s value), tied to the ask it
 * withdrew (`ask`), so that it counts for that ask's copies and no other's.
 */
interface Withdrawal {
  readonly messageKey: string
  /** Its stamp (as the map's entry has it; `earlier` entries have no entry of their own). */
  readonly at: number
  /**
   * The ask it withdrew, as this run opened it (`askOf`); undefined for a withdrawal restored from the
   * store or of an ask restored from it (its edge, or its answer), which this run did not open.
   */
  readonly ask: AskIdentity | undefined
  /**
   * The withdrawal it replaced under its key (an earlier ask's, or an earlier one of the same ask), which a copy of
   * its ask given back later is still judged by (`withdrawnWithin`). Newest first, at most `MAX_WITHDRAWN_PER_KEY`
   * in all (`withdraw` cuts the oldest off); each lives as long as the newest, the map's entry.
   */
  earlier: Withdrawal | undefined
}

/** The withdrawn asks of the Asks concern, and the identities of the asks this run opened. */
export class AskWithdrawals {
  private readonly ctx: RouterContext
  private readonly edges: AskEdges
  private readonly answered: AnsweredAsks
  /**
   * Asks their asker withdrew (`cancel_ask`, `cancel_message`) while the
   * broker knew them open or answered — an edge open before its deadline,
   * or a reply recorded as answering it (`answered`, kept the replay
   * window) — by message key (the value names the key too, so that what the
   * bound pushes out is known), with when, for as long as an ask can last
   * (bounded: MAX_WITHDRAWN). A cancel of an id the broker does not know
   * as such (never sent, not an ask, expired already) adds nothing, so one
   * session cannot push out another's withdrawals but by asks of its own.
   * A withdrawal counts only for the ask it withdrew (`Withdrawal.ask`,
   * `withdrawnWithin`), not for an earlier or later ask under the same id;
   * a later withdrawal under the key keeps the one it replaces behind it
   * (`Withdrawal.earlier`, at most `MAX_WITHDRAWN_PER_KEY` a key, in memory:
   * the store keeps the newest): should its reply be lost, the ask stays
   * withdrawn (`Asks.answerLost` does not open it again), and a copy of it given
   * back past its deadline did not expire (`Asks.withdrawnEarly`). A durable
   * broker stores them (`StoreJournal.askWithdrawn`, WithdrawnAsks.ts), so
   * a reply restored after a restart and lost then does not reopen its ask.
   */
  private readonly withdrawn = new AgedMap<string, Withdrawal>(MAX_WITHDRAWN)
  /**
   * Each ask this run opened, by its edge and by its message: an identity of
   * its own (`AskIdentity`, its record key only: a withdrawal kept 30 days
   * holds no text, review revdg DG2), which names the ask a withdrawal
   * withdrew (`Withdrawal.ask`). Its
   * stamp could not: stamps hold still while they lead the clock, so asks
   * under one id may share a receipt stamp, and a withdrawal of one may carry
   * the stamp of a later ask's life (review revcb item 2, review revdc DC2,
   * DC3). Keyed by the message, not its `Mail`: every copy of the mail
   * (`{ ...mail }`: given back to the mailbox, MailReturns.requeue; put back,
   * MailDelivery.askAgain; kept or given, WithdrawnCopies) shares it, so each
   * copy is judged as the ask (review revch CH2); an edge opened again
   * (`Asks.answerLost`) takes its entry along. Nothing goes on the wire or into the
   * store. Weak: it goes with the ask's objects. An ask restored from the
   * store (its mail, its edge) has none: judged by stamps (`withdrawnWithin`).
   */
  private readonly identities = new WeakMap<Message | AskEdge, AskIdentity>()

  /**
   * @param ctx its stamps date each withdrawal; its journal, when there is one, stores each and forgets each the
   *   bound pushes out.
   * @param edges the open ask edges: a withdrawal closes its ask's.
   * @param answered which reply answered each recently answered ask: an answered ask can still be withdrawn.
   */
  constructor(ctx: RouterContext, edges: AskEdges, answered: AnsweredAsks) {
    this.ctx = ctx
    this.edges = edges
    this.answered = answered
  }

  /** The ask `of` (its message, or an edge of it) names, as this run opened it; undefined for one restored. */
  askOf(of: Message | AskEdge): AskIdentity | undefined {
    return this.identities.get(of)
  }

  /** Names `of` (an ask's message, or an edge of it) as the ask `ask` (`askOf`). */
  name(of: Message | AskEdge, ask: AskIdentity): void {
    this.identities.set(of, ask)
  }

  /**
   * The sender of the message `messageKey` cancelled it (`cancel_message`):
   * an ask's edge closes, and the ask is remembered as withdrawn as by
   * `cancel_ask` (see `withdrawn`), also when a reply closed its edge
   * already; the cancel of anything else leaves nothing here.
   */
  cancelled(messageKey: string, now: number): void {
    const edge = this.edges.get(messageKey)
    if (edge !== undefined) this.withdrawNow(edge, now)
    else if (this.answered.has(messageKey)) this.withdrawAnswered(messageKey, now)
  }

  /**
   * The mailbox dropped a copy of the ask `messageKey` (evicted, expired
   * there, or for a short-lived recipient that ended) and told its asker
   * with an `expired` receipt: the question will not be asked, so the ask
   * ends, its edge closed and remembered as withdrawn (a copy of it that
   * comes back later goes silently: the asker was told already). Nothing
   * when no edge is open under the key, or past its deadline: that ask
   * expired, and the sweep closes its edge, telling its asker (AskExpiry);
   * nor when the edge open under the key is not that copy's — its
   * `deadline` (the copy's receipt plus its timeout) another: an ask that
   * reused the id past the replay window (review revae AE1). Never a
   * durable question's edge: its notification is a frame, not mail, so no
   * lost copy is ever its. A child is refused a question under the id of
   * its ask still open or staged, or of any message P46's record still
   * names (Questions.ts, helpers askqkey and oneid2, review revcf R1), so
   * the two share a key only once the ask's edge has closed and its record
   * gone while a copy of it is still out (one its recipient read and did not
   * confirm, given back later). The guard matters there only if the copy's
   * deadline (its receipt stamp plus its timeout) equals the question's (the
   * clock at its notification plus MAX_ASK_TIMEOUT_MS), which takes the
   * stamps having led the clock at the ask's receipt by at least
   * MAX_ASK_TIMEOUT_MS less the ask's own timeout (a clock set back that
   * far). test/broker/ask-lost-question-guard.test.ts builds that world on
   * the TestClock (review revcf R5: it fails without the guard).
   */
  askLost(messageKey: string, deadline: number, now: number): void {
    const edge = this.edges.get(messageKey)
    if (edge === undefined || edge.question === true) return
    if (edge.deadline === deadline && dueOf(edge) > now) this.withdrawNow(edge, now)
  }

  /**
   * Its asker withdraws the ask of the open `edge`: the edge closes, and the
   * ask is remembered as withdrawn unless its deadline has passed (it
   * expired: a copy of it given back after that owes its asker `expired`).
   * Stamped now, but never below the ask's receipt (`openedAt`): an ask
   * restored from a store whose stamps were past the capped floor
   * (Router.restore) was received above every stamp this run gives for a
   * while, and its withdrawal must fall within its life (`withdrawnWithin`).
   */
  withdrawNow(edge: AskEdge, now: number): void {
    this.edges.delete(edge.messageKey)
    if (dueOf(edge) <= now) return
    const stamp = this.ctx.stamps.at(now)
    this.withdraw(edge.messageKey, edge.openedAt !== undefined && edge.openedAt > stamp ? edge.openedAt : stamp, this.askOf(edge))
  }

  /**
   * The answered ask `messageKey` (its edge closed by a reply) withdrawn at
   * `now`, unless that ask (`AnsweredAsks.askOf`; by stamps alone for one
   * restored from the store) already was within the replay window: its
   * earliest withdrawal stands, so a second cancel after its deadline does
   * not move the time out of the ask's life (`withdrawnWithin`; review revs
   * S3). Never stamped below the ask's receipt, as `withdrawNow`.
   */
  withdrawAnswered(messageKey: string, now: number): void {
    const at = this.ctx.stamps.at(now)
    const openedAt = this.answered.openedAtOf(messageKey)
    const stamp = openedAt !== undefined && openedAt > at ? openedAt : at
    const ask = this.answered.askOf(messageKey)
    if (!this.withdrawnWithin(messageKey, stamp - this.answered.windowMs, stamp + 1, ask)) this.withdraw(messageKey, stamp, ask)
  }

  /**
   * Whether the ask `mail`, whose edge is closed, was withdrawn by its asker
   * before its deadline (`withdrawn`): a copy given back so past its deadline
   * goes silently (StaleAsks.drop). A `cancel_ask` or
   * `cancel_message` after the deadline (IntercomSession's wait sends one
   * as it times out), or one made for an earlier ask under the same id, is
   * not such a withdrawal: the ask expired.
   */
  withdrawnEarly(mail: Mail): boolean {
    return mail.askTimeoutMs !== undefined &&
      this.withdrawnWithin(mail.recordKey, mail.brokerReceivedAt, mail.brokerReceivedAt + mail.askTimeoutMs, this.askOf(mail.message))
  }

  /** Whether any withdrawal is kept under `messageKey` (an ask the session withdrew). */
  has(messageKey: string): boolean {
    return this.withdrawn.size > 0 && this.withdrawn.has(messageKey)
  }

  /**
   * Remembers the ask `messageKey`, whose message this run opened as `ask` (`askOf`), as withdrawn at `stamp`
   * (see `withdrawn`; a stamp, on its mail's `brokerReceivedAt` scale), in the store too when there is one.
   */
  withdraw(messageKey: string, stamp: number, ask: AskIdentity | undefined): void {
    // The one it replaces (an earlier ask's, task stamps4 item 3) stays behind it, for a copy of that ask.
    const earlier = this.withdrawn.size === 0 ? undefined : this.withdrawn.get(messageKey)
    if (earlier !== undefined) {
      let last = earlier
      for (let kept = 2; last.earlier !== undefined && kept < MAX_WITHDRAWN_PER_KEY; kept++) last = last.earlier
      last.earlier = undefined
    }
    const evicted = this.withdrawn.set(messageKey, { messageKey, at: stamp, ask, earlier }, stamp)
    const journal = this.ctx.journal
    if (journal === undefined) return
    journal.askWithdrawn(messageKey, stamp)
    for (const gone of evicted) journal.withdrawalGone(gone.messageKey)
  }

  /**
   * A withdrawal the store kept (at startup, oldest first): remembered as
   * it was made, until no ask can outlive it. One the bound pushes out
   * leaves the store too.
   */
  restore(messageKey: string, at: number, now: number): void {
    if (at <= now - MAX_ASK_TIMEOUT_MS) return
    const evicted = this.withdrawn.set(messageKey, { messageKey, at, ask: undefined, earlier: undefined }, at)
    for (const gone of evicted) this.ctx.journal?.withdrawalGone(gone.messageKey)
  }

  /**
   * Whether the ask `messageKey` whose message this run opened as `ask`
   * (`askOf`; undefined for an ask restored from the store) was withdrawn at
   * or after `from` and before `until` (its life: see `withdrawn`). Only a
   * withdrawal of that very ask counts (`Withdrawal.ask`): never one of an
   * earlier or a later ask under the same id, whatever its stamp. Withdrawals
   * of asks this run did not open (restored, or of a restored edge or
   * answer) count, by their stamps alone, only for such an ask. Each
   * withdrawal kept under the key is looked at (`Withdrawal.earlier`, newest
   * first, at most `MAX_WITHDRAWN_PER_KEY`). Give-back and lost-reply paths only.
   */
  withdrawnWithin(messageKey: string, from: number, until: number, ask: AskIdentity | undefined): boolean {
    if (this.withdrawn.size === 0) return false
    for (let withdrawal = this.withdrawn.get(messageKey); withdrawal !== undefined; withdrawal = withdrawal.earlier) {
      if (withdrawal.ask === ask && from <= withdrawal.at && withdrawal.at < until) return true
    }
    return false
  }

  /** Forgets withdrawals no ask can outlive (older than `MAX_ASK_TIMEOUT_MS` before `now`). */
  prune(now: number): void {
    if (this.withdrawn.size > 0) this.withdrawn.expire(now - MAX_ASK_TIMEOUT_MS)
  }
}
