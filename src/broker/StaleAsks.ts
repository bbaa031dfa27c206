/**
 * Copies of asks whose ask is over. Asks are not queued (P60), but a copy
 * written to a connection that closed before its client confirmed reading
 * it, or never written, comes back like any mail (MailDelivery.ts). Once
 * its ask is over — withdrawn (`cancel_ask`, `cancel_message`), answered
 * (a reply closed its edge), or expired (its edge's deadline passed) — such
 * a copy is stale (`isStale`): it is dropped, never delivered (a reply to it
 * would be refused), and leaves the store (`drop`).
 *
 * Its asker hears of the drop only when the ask expired unanswered: an
 * `expired` receipt, as for any mail the mailbox drops. One it withdrew, or
 * that was answered, goes silently — also past its deadline: one its sender
 * cancelled or superseded (its record says so: MailDelivery never puts such
 * a copy back), as it was answered for that (helper ctlback); one withdrawn
 * before its deadline, or answered while that copy was held unconfirmed on
 * the replier's connection or on an old one a takeover by another instance
 * had not closed, or not yet (all) written there — an outbox, a write in
 * progress or its untaken rest — or kept by that takeover's hold, as
 * Asks.withdrawnEarly and Asks.answeredCopy remember (helpers staleans,
 * fixsa, replyclose, answerwip); one in the mailbox when it was
 * answered (a staged reply that fell due after its sender left), dropped
 * then (MailDelivery.askClosed with the reply). Such a copy is remembered
 * with its reply (`silenced`), before its deadline too (review revw W1,
 * W2). Should that answer be lost later (its reply cancelled, evicted,
 * expired before its asker got it), the ask went unanswered after all
 * (`replyLost`): before its deadline, its edge open again, the question
 * is put back (MailDelivery's `askAgain`: stored again, to the replier's
 * live connection or the mailbox), to be asked again or to expire there
 * with its receipt — the same message: a client instance that answered it
 * read it already, and lets it through again only as it learns its reply
 * was lost (its cancel, or its `expired` receipt, which MailDelivery's
 * `lost` writes ahead of the question; RecentMessages.replyLost, review
 * revx X1) — unless its asker gave the ask's id to a durable question
 * since: its edge stays closed, and nothing is owed (review revdg DG3);
 * past it, its asker is owed the `expired` now (not for
 * one it withdrew before the deadline; neither, for a short-lived asker
 * that ended by `unregister`: its edge stays closed, review revx X3) — also after a durable broker's restart, which
 * stores that debt until the reply leaves the store
 * (StoreJournal.askSilenced, SilencedAsks.ts) and attaches it again to the
 * restored reply (`restoreSilenced`, `reattach`, `restoreDone`; review revs
 * S1). A reply its asker has read already (the usual order: the asker
 * online, the reply written at once) can be lost no more: the store keeps
 * no debt for it (review revu U1), and the one `silenced` keeps is never
 * claimed — only a reply not read yet (in the mailbox, or given back
 * unconfirmed) is lost (`replyLost`) — and goes with the edge. One
 * answered while its copy was deeper in one of those places than Asks'
 * scan (`ANSWERED_SCAN` items of each) that comes back past its deadline
 * cannot be told from one that expired: its edge is gone either way.
 * Before its deadline it can: its edge closed early and was not withdrawn,
 * so it was answered; it is remembered by its key (`silencedByKey`,
 * bounded; review revx X2), its debt stored with the stored reply that
 * closed that edge, which the journal finds by the ask's key for as long
 * as the reply is stored (SilencedJournal.replyTo), after a restart too —
 * not only while AnsweredAsks remembers the answer (review revz Z4).
 *
 * Owned by MailDelivery, which calls it on every path a copy comes back by
 * (the close, the flush, the mailbox's expiry, a restore) and tells it of
 * every reply the mailbox loses; synchronous, on the Router's path.
 */
import { DeliveryCode, Reason } from "../protocol/delivery.ts"
import { AgedMap } from "./AgedMap.ts"
import { MAX_ANSWERED } from "./AnsweredAsks.ts"
import { askDueOf, type AskEdge } from "./AskEdges.ts"
import type { BrokerStamps } from "./BrokerStamps.ts"
import { DELIVERED, fingerprintOfMail } from "./DeliveryRecords.ts"
import type { MailAsks } from "./MailDelivery.ts"
import type { Mail } from "./Peer.ts"
import type { RouterContext } from "./RouterContext.ts"
import type { StoredSilenced } from "../store/MailStore.ts"

/** Answered asks remembered by key (`silencedByKey`): as many as AnsweredAsks remembers answers. */
export const MAX_SILENCED_BY_KEY = MAX_ANSWERED

/** What StaleAsks uses of the Router's context: the clock, the replay records and the store's journal. */
export type StaleAsksContext = Pick<RouterContext, "now" | "records" | "journal" | "stamps">

/**
 * How a stale ask that expired unanswered is lost: as mail the mailbox
 * drops (MailDelivery's `lost`: the replay record rewritten, the receipt
 * told or owed).
 */
export type LoseAsk = (mail: Mail, code: DeliveryCode, reason: string, detail: string) => void

/**
 * How an ask dropped as answered is asked again once its reply was lost
 * and its edge opened again: stored again — under `seq`, the row it had when
 * it was dropped, when it had one this run knows (StoreJournal.putAgain) —
 * and put back as a flush would (MailDelivery's `askAgain`: the replier's
 * live connection, else the mailbox).
 */
export type AskAgain = (mail: Mail, seq: number | undefined) => void

/**
 * An ask dropped as answered (`drop`), kept for its reply's loss: its mail, and the `seq` of the row it had then
 * (its acceptance's; undefined in memory mode, or for one whose debt a restart restored), for `askAgain`.
 */
interface DroppedAsk {
  readonly mail: Mail
  readonly seq: number | undefined
}

/**
 * Decides the fate of ask copies that come back after their ask is over.
 *
 * @example
 * ```ts
 * const stale = new StaleAsks(ctx, asks, (mail, code, reason, detail) => lost(mail, code, reason, detail))
 * if (stale.isStale(mail, ctx.now())) stale.drop(mail)
 * else mailbox.put(mail)
 * ```
 */
export class StaleAsks {
  private readonly ctx: StaleAsksContext
  private readonly asks: MailAsks
  private readonly lose: LoseAsk
  private readonly askAgain: AskAgain
  /**
   * Asks dropped silently because a reply had answered that copy (`drop`),
   * before or past their deadline, by the edge that reply closed: should
   * the reply be lost after all, the ask is asked again or its asker owed
   * its `expired` (`replyLost`). Weak: it goes with the edge, once nothing
   * holds the reply.
   */
  private readonly silenced = new WeakMap<AskEdge, DroppedAsk>()
  /**
   * Asks dropped before their deadline, not withdrawn early, that no reply
   * marked (a copy deeper in a custody than Asks' scan, or in an outbox):
   * their edge closed early, so a reply answered them. Kept by ask key, for
   * `replyLost` to find by its edge's `messageKey` (review revx X2). Bounded:
   * MAX_SILENCED_BY_KEY entries, the oldest pushed out (such an ask is then
   * forgotten, as before); one whose reply its asker read stays until then.
   * Each names the deadline of the edge it had (`deadline`): a later ask
   * reusing the id (past the replay window) has another edge, and a lost
   * reply of that one never claims the old copy (review revz Z3).
   */
  private readonly silencedByKey = new AgedMap<string, DroppedAsk & { readonly deadline: number }>(MAX_SILENCED_BY_KEY)
  /** At startup only: the stored debts not yet matched to their restored reply, by reply key (`restoreSilenced`). */
  private stored: Map<string, Mail> | undefined

  /**
   * @param asks asked whether an ask is open, withdrawn early or answered, and told of a reply lost.
   * @param lose how an ask that expired unanswered is lost (its receipt).
   * @param askAgain how an ask dropped as answered, its reply lost before its deadline, is put back.
   */
  constructor(ctx: StaleAsksContext, asks: MailAsks, lose: LoseAsk, askAgain: AskAgain) {
    this.ctx = ctx
    this.asks = asks
    this.lose = lose
    this.askAgain = askAgain
  }

  /**
   * An ask whose ask is over at `now`: no edge is open for it, or its edge's
   * deadline has passed. Not one that is also a reply: the answer it carries
   * is still owed to its own asker.
   */
  isStale(mail: Mail, now: number): boolean {
    return mail.message.expectsReply === true && mail.message.replyTo === undefined &&
      !this.asks.isOpen(mail.recordKey, now)
  }

  /**
   * Drops a stale ask, taken out of the mailbox or never put back: it leaves
   * the store. One whose edge expired (its deadline, the ask's own timeout
   * from when it was sent, has passed) is lost as mail the mailbox expired:
   * its asker gets an `expired` receipt and a retry hears
   * `E_DELIVERY_EXPIRED` — not one whose edge closed before that deadline
   * (withdrawn before it, Asks.withdrawnEarly, or answered). An answered
   * one, before or past its deadline, is remembered for its reply's loss
   * (`replyLost`), and stored by a durable broker: with the reply that
   * marked this copy (`answeredBy` or Asks.answeredCopy), else, before its
   * deadline, by its key (`silencedByKey`; review revx X2) and with the
   * stored reply that closed its edge (StoreJournal.askSilencedFor; review
   * revz Z4). One withdrawn or answered goes
   * silently; its own replay record (not a later send's under the id) that says it is queued goes back to what its
   * sender was told, delivered (one `cancel_message` made
   * `E_DELIVERY_CANCELLED` stays so).
   */
  drop(mail: Mail, answeredBy?: Mail): void {
    const now = this.ctx.now()
    const early = this.asks.withdrawnEarly(mail)
    const reply = early ? undefined : answeredBy ?? this.asks.answeredCopy(mail)
    if (reply?.answers === undefined && !early && pastDeadline(mail, now, this.ctx.stamps)) {
      return this.lose(mail, DeliveryCode.DeliveryExpired, Reason.expired, Reason.askExpired)
    }
    // Its row's seq, its acceptance's: asked again, it is stored under it again (review rvmk2 probe 1).
    const seq = this.ctx.journal?.storedSeq(mail.senderKey, mail.message.id, mail.targetKey)
    // Remembered before its deadline too (review revw W2): should the reply be lost, the ask is asked again.
    if (reply?.answers !== undefined) {
      this.silenced.set(reply.answers, { mail, seq })
      this.ctx.journal?.askSilenced(reply, mail, now)
    } else if (!early) {
      // Before its deadline, not withdrawn: answered by a reply that did not mark this copy (review revx X2).
      // Its edge's deadline: every ask's edge's is its receipt plus its timeout (a durable question's: on the clock,
      // Questions.openEdge), a staged ask's too (its edge opens
      // later, its deadline counts from the send: Send.deliverStaged hands the staged attempt on). Not looked up by
      // the ask's key: an ask reusing the id has an edge and a deadline of its own (review revac AC2).
      const deadline = mail.brokerReceivedAt + (mail.askTimeoutMs ?? 0)
      this.silencedByKey.set(mail.recordKey, { mail, seq, deadline }, now)
      // Stored with the reply that closed that edge, while it is stored: the journal finds it by the ask's key (revz Z4).
      this.ctx.journal?.askSilencedFor(mail, deadline, now)
    }
    const outcome = this.ctx.records.get(mail.senderKey, mail.message.id, now)?.outcome
    // Its own record only: a later message under the id that waits queued is not told delivered (task rwown).
    if (outcome?.ok === true && outcome.delivery === "queued") {
      this.ctx.records.rewrite(mail.senderKey, mail.message.id, DELIVERED, undefined, mail.targetKey, () => fingerprintOfMail(mail))
    }
    this.ctx.journal?.mailGone(mail.senderKey, mail.message.id, mail.targetKey)
  }

  /**
   * The mailbox dropped a reply that had closed `edge` (cancelled by its
   * sender, evicted, expired, refused unstored): its ask is unanswered again
   * (Asks.answerLost). A copy of that ask already dropped silently as
   * answered (`drop`) is put back when its edge opened again (before its
   * deadline: `askAgain`); past its deadline it expired after all: its
   * asker gets the `expired` receipt now, or when it registers again —
   * unless it withdrew the ask before the deadline. Not when its asker
   * ended (a short-lived session gone by `unregister`, `askerEnded`, or the
   * ask's own `senderEnd`): nobody waits for that answer, so the edge stays
   * closed, the replier is not asked again and no `expired` is owed (review
   * revx X3). Nor, before its deadline, when its asker gave the ask's id to a
   * durable question since (asked, waited on or notified): the edge stays
   * closed (Asks.answerLost), and the ask did not time out (review revdg DG3).
   */
  replyLost(edge: AskEdge, now: number, askerEnded = false): void {
    const dropped = this.silenced.get(edge) ?? this.takeByKey(edge)
    if (dropped !== undefined) this.silenced.delete(edge)
    if (askerEnded || dropped?.mail.senderEnd?.ended === true) return
    const movedOn = this.asks.answerLost(edge, now)
    if (dropped === undefined) return
    const ask = dropped.mail
    // Before its deadline, its asker gave its id to a durable question (Asks.answerLost): the ask stays closed, so it
    // is not asked again, and it did not time out, so no `expired` is owed — the asker moved on, as by a withdrawal
    // (review revdg DG3). Past the deadline it expired unanswered: told below.
    if (movedOn) return
    // Its edge open again (before its deadline): the question is put back, for the replier to be asked again. Its
    // own kind of edge only: a durable question its asker opened under the id since is not this ask (review revdg3 1).
    if (this.asks.isOpen(ask.recordKey, now, edge.question === true)) return this.askAgain(ask, dropped.seq)
    // Withdrawn before its deadline, after the reply: nothing is owed.
    if (this.asks.withdrawnEarly(ask)) return
    this.lose(ask, DeliveryCode.DeliveryExpired, Reason.expired, Reason.askExpired)
  }

  /**
   * The ask of `edge` remembered by key (`silencedByKey`), taken out; none
   * while nothing is kept. One kept under the same key for another edge (an
   * earlier ask that used the id) is not this ask's: it is dropped, unused.
   */
  private takeByKey(edge: AskEdge): DroppedAsk | undefined {
    if (this.silencedByKey.size === 0) return undefined
    const kept = this.silencedByKey.delete(edge.messageKey)
    return kept !== undefined && kept.deadline === edge.deadline ? kept : undefined
  }

  /**
   * An `expired` owed for an ask that went silently as answered, kept by the
   * durable store across a restart (`drop`): owed again once its reply is
   * restored (`reattach`, after this), and should that reply be lost.
   */
  restoreSilenced(stored: StoredSilenced): void {
    if (this.stored === undefined) this.stored = new Map()
    this.stored.set(stored.replyKey, stored.ask)
  }

  /** `mail`, restored from the store: a reply whose asker was owed an ask's `expired` before the restart still owes it. */
  reattach(mail: Mail): void {
    if (mail.answers === undefined || this.stored === undefined) return
    const owed = this.stored.get(mail.recordKey)
    if (owed === undefined) return
    // Its row's seq is not stored with the debt: asked again, it is stored under a new one.
    this.silenced.set(mail.answers, { mail: owed, seq: undefined })
    // Its row now ends with the reply's own (StoreJournal.restoredSilenced); else `restoreDone` deletes it.
    if (this.ctx.journal?.restoredSilenced(mail) !== false) this.stored.delete(mail.recordKey)
  }

  /**
   * The restore is over: a stored debt whose reply was not restored has no
   * reply left to lose, and leaves the store (this build deletes it with
   * its reply's row; one left without it is an older file's or a hand's).
   */
  restoreDone(): void {
    for (const replyKey of this.stored?.keys() ?? []) this.ctx.journal?.silencedGone(replyKey)
    this.stored = undefined
  }
}

/** An ask whose own timeout, from when the broker received it, has run out at `now` (its due time, AskEdges.askDueOf). */
const pastDeadline = (mail: Mail, now: number, stamps: BrokerStamps): boolean =>
  mail.message.expectsReply === true && mail.askTimeoutMs !== undefined && askDueOf(mail, stamps) <= now
