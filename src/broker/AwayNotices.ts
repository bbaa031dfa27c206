/**
 * The notices the broker owes senders that are away: a lost-mail receipt
 * (or another notice about one of its messages) for a sender with no live
 * connection waits here until it registers again (MailDelivery's
 * registration hook takes them, `take`), a day at most.
 *
 * "Acknowledged is a promise" (MailDelivery.ts) rests on these: a durable
 * broker stores each notice when it is issued (`issue`, NoticeJournal.ts)
 * and keeps it stored until its sender's client read it (Custody.ts), so the
 * next broker owes it again from the store with its first age (`restore`).
 * A notice keeps that age however often it comes back, so one that bounces
 * between connections still goes a day after it was first owed (`expire`).
 * After the broker's clock steps back, a notice owed before the step counts
 * from it (review revdf DF1), by AgedMap's rule: each new notice tells the
 * lists the clock's reading (`issue`), which re-dates the lists and their
 * notices dated past it, and no notice is owed again dated past the newest
 * reading (`owe`). A notice owed before the step in a list first owed before
 * the step's reading is re-dated when its list's day ends (`expire`): kept
 * less than a day longer than counted from the step, never less.
 *
 * Bounded per sender (256) and overall (16,384): past either, a notice is
 * given up and the drop logged; past 4,096 senders owed, the notices of the
 * sender owed first are given up, logged too; the message's replay record still says what
 * became of it. Nothing is owed to a sender that will never register again
 * (`isEnded`: a short-lived session that ended by `unregister`). Owned by
 * MailDelivery, which alone calls it, on the Router's synchronous path.
 */
import { AgedMap } from "./AgedMap.ts"
import * as Encode from "./encode.ts"
import type { OutboundNotice } from "./Peer.ts"
import type { RouterContext } from "./RouterContext.ts"
import type { StoredNotice } from "../store/MailStore.ts"

/** How long a notice is owed: a day from when it was first owed. */
export const NOTICE_RETENTION_MS = 86_400_000

/** Lost-mail notices kept for one absent sender. */
export const MAX_OWED_PER_SENDER = 256

/** Lost-mail notices kept for absent senders, overall. */
export const MAX_OWED_NOTICES = 16_384

/** The line logged for each notice given up at the bounds: one string, not one built per drop. */
const GIVEN_UP = `A lost-mail notice for an absent sender was not kept: ${MAX_OWED_NOTICES} are kept at most`

/**
 * Senders with notices owed, at most (the AgedMap's own bound): a notice for
 * one more sender gives up the notices of the sender first owed, logged
 * (`owe`). Reached before the overall bound when senders have fewer than
 * four notices each.
 */
const MAX_OWED_SENDERS = 4096

/** The end of the line logged when a sender's notices are given up at MAX_OWED_SENDERS. */
const SENDERS_GIVEN_UP = `notices are kept for ${MAX_OWED_SENDERS} absent senders at most, the one owed first gives way`

/** What AwayNotices uses of the Router's context: the store's journal (durable mode) and the log. */
export type AwayNoticesContext = Pick<RouterContext, "journal" | "log">

/**
 * Notices owed to absent senders, by sender key, in age order of each
 * sender's oldest.
 *
 * @example
 * ```ts
 * const owed = new AwayNotices(ctx, (key) => ended.has(key))
 * owed.owe(owed.issue(senderKey, frame, ctx.now()))
 * // at the sender's registration:
 * for (const notice of owed.take(senderKey) ?? []) ctx.output.enqueue(peer, notice)
 * ```
 */
export class AwayNotices {
  private readonly ctx: AwayNoticesContext
  private readonly isEnded: (senderKey: string) => boolean
  private readonly bySender = new AgedMap<string, Array<OutboundNotice>>(MAX_OWED_SENDERS, redateOwed)
  /** Notices owed, over all senders (bounded: MAX_OWED_NOTICES). */
  private owed = 0

  /**
   * @param isEnded whether a sender ended for good (a short-lived session's `unregister`): it is owed nothing.
   */
  constructor(ctx: AwayNoticesContext, isEnded: (senderKey: string) => boolean) {
    this.ctx = ctx
    this.isEnded = isEnded
  }

  /** Notices owed, over all senders. */
  get count(): number {
    return this.owed
  }

  /** When the oldest sender's list was first owed; undefined when none is. */
  get oldestAt(): number | undefined {
    return this.bySender.oldestAt
  }

  /**
   * A new notice for `senderKey`: a durable broker stores it with the
   * changes made so far (the drop of its message among them) until its
   * sender read it (Custody.ts) or it is given up (`forget`).
   */
  issue(senderKey: string, frame: string, now: number): OutboundNotice {
    this.bySender.redate(now)
    return { frame, owedTo: senderKey, seq: this.ctx.journal?.putNotice(senderKey, frame, now), owedAt: now }
  }

  /**
   * Whether a notice for `senderKey`, away, issued at `now` would be given up
   * at the bounds (`owe`): then this logs the drop as `owe` would and tells the
   * lists the clock's reading as `issue` would, and the caller builds no
   * notice — no frame, no stored row put and deleted again (MailDelivery.tellLost:
   * a restore past a recipient's bound evicts tens of thousands of one sender's
   * messages, all but the first 256 notices given up; task restfast). False
   * for a sender that ended (`owe` forgets its notice silently).
   */
  givesUp(senderKey: string, now: number): boolean {
    if (this.owed < MAX_OWED_NOTICES && (this.bySender.get(senderKey)?.length ?? 0) < MAX_OWED_PER_SENDER) return false
    if (this.isEnded(senderKey)) return false
    this.bySender.redate(now)
    this.ctx.log("warning", GIVEN_UP)
    return true
  }

  /** A notice given up (a day old, past the bounds, for nobody): it leaves the store too. */
  forget(notice: OutboundNotice): void {
    if (notice.seq !== undefined) this.ctx.journal?.noticeGone(notice.seq)
  }

  /**
   * Keeps a notice for a sender that is away. Bounded per sender and overall:
   * past the bound the notice is given up and the drop logged. Not kept for a
   * sender that ended for good (`isEnded`): kept, it would hold a memory
   * broker up a day (its idle exit waits for owed notices) for nobody.
   */
  owe(given: OutboundNotice): void {
    // Owed before a clock step back below the newest reading: it counts from that reading (module header).
    const latest = this.bySender.reading
    const notice = given.owedAt > latest ? { ...given, owedAt: latest } : given
    if (this.isEnded(notice.owedTo)) return this.forget(notice)
    const entry = this.bySender.lookup(notice.owedTo)
    const owed = entry?.value ?? []
    if (owed.length >= MAX_OWED_PER_SENDER || this.owed >= MAX_OWED_NOTICES) {
      this.ctx.log("warning", GIVEN_UP)
      return this.forget(notice)
    }
    owed.push(notice)
    this.owed++
    // The list keeps its age unless this notice is older (handed back, restored): then it takes
    // this one's, at its place in age order.
    if (entry !== undefined && entry.at <= notice.owedAt) return
    for (const dropped of this.bySender.setAged(notice.owedTo, owed, notice.owedAt)) {
      this.owed -= dropped.length
      this.ctx.log("warning", `${dropped.length} lost-mail notice(s) for an absent sender were not kept: ${SENDERS_GIVEN_UP}`)
      for (const gone of dropped) this.forget(gone)
    }
  }

  /** The notices owed to `senderKey`, taken (its registration sends them, oldest first); undefined when none is. */
  take(senderKey: string): ReadonlyArray<OutboundNotice> | undefined {
    const owed = this.bySender.delete(senderKey)
    if (owed !== undefined) this.owed -= owed.length
    return owed
  }

  /**
   * A notice the durable store kept across a restart: owed to its sender
   * again, from when it was first owed (still kept a day, still bounded;
   * one past either leaves the store).
   */
  restore(stored: StoredNotice, now: number): void {
    const notice: OutboundNotice = { frame: stored.frame, owedTo: stored.senderKey, seq: stored.seq, owedAt: stored.at }
    this.bySender.redate(now)
    // An `ask_expired` stored by an earlier build, which owed it: no longer owed (MailDelivery.tellLive).
    if (stored.at < now - NOTICE_RETENTION_MS || stored.frame.startsWith(Encode.ASK_EXPIRED_PREFIX)) {
      return this.forget(notice)
    }
    this.owe(notice)
  }

  /** Gives up the notices first owed at or before `cutoff`; younger ones in the same lists stay owed. */
  expire(cutoff: number): void {
    for (const owed of this.bySender.expire(cutoff)) {
      this.owed -= owed.length
      // The list's oldest notice is past the cutoff; younger ones in it are owed again, in a list of their age.
      for (const notice of owed) {
        if (notice.owedAt <= cutoff) this.forget(notice)
        else this.owe(notice)
      }
    }
  }
}

/** Re-dates to `at` the notices of `owed` dated past it: the clock stepped back below them (module header). */
const redateOwed = (owed: Array<OutboundNotice>, at: number): void => {
  for (let i = 0; i < owed.length; i++) {
    const notice = owed[i]
    if (notice !== undefined && notice.owedAt > at) owed[i] = { ...notice, owedAt: at }
  }
}
