/**
 * Size: about 945 lines, one concept: the fate of mail that is not being
 * written to a live connection (queued, flushed, failed, and the notice its
 * sender is told or owed; what a memory broker still holds at idle, `held`,
 * and the notices only a live connection granted an extension may get,
 * `tellLive`, and an ask put back when the reply that answered it is lost,
 * `askAgain`). Where each item a closing connection gives back goes —
 * requeued, forced on, a control only behind its message or kept alone for
 * its instance — is MailReturns.ts's (`takeBack`, `requeue`, `giveBack`,
 * `controlsHandedBack` delegate to it). The mailbox's own bounds
 * are Mailbox.ts's, the owed notices' keeping and bounds AwayNotices.ts's,
 * the stale asks' drops and debts StaleAsks.ts's,
 * the notices' journal NoticeJournal.ts's, the
 * cancelled copies' decisions (who read a copy, keeping one, giving one
 * back) WithdrawnCopies.ts's and the kept controls KeptControls.ts's; what
 * stays here moves mail between them and the live delivery, calling each at
 * its step of the cancel or the flush, in the order those paths decide.
 *
 * Mail for sessions that are away (P49) and mail that could not be written:
 * queueing in the mailbox, flushing it when its session (or the one live
 * holder of the same identity) registers, taking back messages a closing
 * connection never wrote, and telling senders about mail the mailbox dropped.
 *
 * "Acknowledged is a promise": every message the broker acknowledged is
 * delivered, or its sender is told — at once when it is connected, otherwise
 * when it next registers (AwayNotices.ts, kept a day). A durable broker stores
 * each notice in the commit that drops its message and keeps it stored until
 * the sender's client read it (Custody.ts), so a crash loses no notice: the
 * next broker owes it again from the store (`restoreNotice`), with its age.
 * A notice keeps that age however it comes back — restored, or handed back
 * by a connection that closed before it was written or confirmed read
 * (`takeBack`) — so one that bounces between connections still goes a day
 * after it was first owed.
 *
 * A short-lived session (`ephemeral-v1`, the CLI's one-shot commands) that
 * ends by `unregister` has said it will not come back: mail that was on its
 * way to it, and would go back to the mailbox under its id where nobody
 * claims it, fails at once instead — its sender gets the `expired` receipt it
 * would get a retention later (`Reason.endedUnread`) — but for mail its
 * sender withdrew on its way, and was answered for, which goes silently
 * (review revi I2). Such a session is kept
 * here by key (`ended`, a day, bounded) for mail its connection hands back
 * after the `unregister`: unwritten, or written and never confirmed read.
 * One whose connection merely dropped is not: its mail waits for it.
 * Nor is such a session owed the notices for mail it sent that is lost after
 * it ended (it expired in the mailbox, or its ended recipient never read it),
 * however long after: it will never register to take them, and kept they
 * would hold a memory broker up a day (Broker.ts's idle watcher, `held`) for
 * nobody. Its messages carry its end (`Mail.senderEnd`), since `ended`
 * forgets it after a day. One whose connection merely dropped is owed them:
 * its client registers again under the same id while its process runs, and
 * the broker cannot tell that process from one that is gone.
 *
 * Asks are not queued (P60), but one written to a connection that closed
 * before its client confirmed reading it, or never written, goes back like
 * any mail — unless its ask is over: then, on each path a copy comes back
 * by (the close, the flush, the mailbox's expiry, a restore, `askClosed`),
 * StaleAsks.ts decides its drop and what its asker is told, now or should
 * an answer be lost later (`replyLost`).
 *
 * A copy of a message its client read and never confirmed, back in the
 * mailbox, that its sender then cancels stays there for that client
 * instance's return, which gets it again with the cancel behind it; it
 * goes to no other, and silently when it expires or is evicted
 * (WithdrawnCopies.ts, review revd, helper mbctl). So does a message
 * cancelled on its way, its client written it, given back with its session
 * away (WithdrawnCopies.keepCancelled), an ask too (its cancel closed its edge, yet it is
 * kept: review revi I5). A control given back alone with its session away
 * (its message confirmed, so not given back with it) is kept for the
 * client instance given that message, and goes to that instance's return
 * ahead of the mailbox's mail (KeptControls.ts, MailReturns.keepAlone; helper
 * ctlback) — given back at a close, or handed back at its session's
 * `unregister` (Custody.handBack, `controlsHandedBack`; helper unregctl),
 * but for a short-lived session's, which never returns; kept at an
 * `unregister`, it does not hold a memory broker's idle exit (`held`;
 * review revv V2). The read mark, with the instance that read it,
 * rides on each copy of the message (review revi I3, I7), and a resend
 * queued over a kept copy is a new message (I4). A copy waiting for its
 * session that its sender supersedes leaves silently when the client
 * instance the supersede told read that very copy (`superseded`, by that
 * mark, never by the record key a later message may reuse).
 */
import { DeliveryCode, Reason } from "../protocol/delivery.ts"
import { AgedMap } from "./AgedMap.ts"
import { acceptedLater } from "./BrokerStamps.ts"
import type { AskEdge } from "./AskEdges.ts"
import { messageFrameFor } from "./RecipientFrames.ts"
import { ControlFrame } from "./ControlFrame.ts"
import { deliveredTo, fingerprintOfMail, type Outcome, QUEUED, recordKeyOf } from "./DeliveryRecords.ts"
import * as Encode from "./encode.ts"
import { KeptControls } from "./KeptControls.ts"
import { type Eviction, Mailbox, mailKeyFor, mailKeyOf } from "./Mailbox.ts"
import { StaleAsks } from "./StaleAsks.ts"
import type { StoredNotice, StoredSilenced } from "../store/MailStore.ts"
import { type LeftBy, liveSession, MailReturns, type ReturnRoutes } from "./MailReturns.ts"
import { AwayNotices, NOTICE_RETENTION_MS } from "./AwayNotices.ts"
import type { Mail, OutboundItem, OutboundMessage, Returnable, Written } from "./Peer.ts"
import type { RegistrationHooks } from "./Registration.ts"
import type { Session, SessionInstance } from "./Registry.ts"
import type { RouterContext } from "./RouterContext.ts"
import type { SendAttempt } from "./SendStage.ts"
import { goesTo, type Reader, type WithdrawnCopy, WithdrawnCopies, type WrittenTo } from "./WithdrawnCopies.ts"

const DAY = 86_400_000

/** Short-lived sessions that ended by `unregister` kept (`MailDelivery.ended`); past this the oldest go. */
const MAX_ENDED = 4096

/** A short-lived session that ended by `unregister`: what its lost mail's receipts say of it. */
interface Ended {
  /** Its SessionInfo, the receipt's `from`. */
  readonly infoJson: string
  /** `name (id)`, or its id, for the receipt's detail. */
  readonly label: string
}

/**
 * A description of a message's target the broker no longer has: mail a
 * durable broker restored after a restart, for a session that has not
 * registered since (departed sessions are not stored). The notice still
 * names the target by its id; what the broker cannot vouch for is left
 * empty (cwd, model) or 0 (pid, startedAt), as SessionInfo requires them,
 * and `lastActivity` is the notice's own time.
 */
const unknownTargetInfo = (mail: Mail, now: number): string =>
  JSON.stringify({ id: mail.targetId, cwd: "", model: "", pid: 0, startedAt: 0, lastActivity: now })

/**
 * What a mailbox cancel did (MailDelivery.cancel): `none`, nothing of the
 * sender's queued to withdraw; `deleted`, the mail left the mailbox and
 * nothing of it is left anywhere to give back; `copy`, a copy a client
 * instance read stays (kept for its return, or given to it live with the
 * cancel: WithdrawnCopies.ts).
 */
export type MailboxCancel = "none" | "deleted" | "copy"

/**
 * What the mailbox concern holds for sessions that are away (P49): queued
 * mail, lost-mail notices owed to senders that were away when their
 * message was dropped, and controls kept for a client instance that may
 * have shown their message (KeptControls.ts). A broker without a store
 * keeps them only in its memory, so its idle watcher does not exit while it
 * holds any (Broker.ts).
 */
export interface HeldMail {
  /** Messages queued in the mailbox (cancelled copies kept for the client instances that read them among them). */
  readonly messages: number
  /** Lost-mail notices owed to absent senders. */
  readonly notices: number
  /**
   * Controls kept for the client instance they were written to, given back
   * alone at a close (KeptControls.ts); not those kept at an `unregister`,
   * which do not hold the idle exit.
   */
  readonly controls: number
  /**
   * When the oldest of them expires: the first moment `prune` lets some of
   * it go (or lets go a kept control that does not hold the exit, older than
   * those that do).
   */
  readonly until: number
}

/** What the mailbox needs of the open asks (Asks.ts). */
export interface MailAsks {
  /**
   * The mailbox dropped a reply that had closed `edge` (Asks.answerLost): true when the ask stays closed, before its
   * deadline, because its asker gave its id to a durable question.
   */
  readonly answerLost: (edge: AskEdge, now: number) => boolean
  /**
   * Is the ask `messageKey` still open at `now`: its edge open and its deadline not passed (Asks.isOpen)? With
   * `question`, only an edge of that kind (a durable question's, or an ask's) counts.
   */
  readonly isOpen: (messageKey: string, now: number, question?: boolean) => boolean
  /** A replace-mode ask restored while it was staged: its edge opens now (Asks.openStaged). */
  readonly openStaged: (mail: Mail, now: number) => void
  /** Did its asker withdraw the closed ask `mail` before its deadline (Asks.withdrawnEarly)? */
  readonly withdrawnEarly: (mail: Mail) => boolean
  /** The reply that answered this copy of the ask `mail`, while it is not lost (Asks.answeredCopy). */
  readonly answeredCopy: (mail: Mail) => Mail | undefined
  /**
   * The mailbox dropped a copy of the open ask `messageKey` whose edge has `deadline`, its asker told: the ask
   * ends (Asks.askLost).
   */
  readonly askLost: (messageKey: string, deadline: number, now: number) => void
}

/**
 * What the mailbox tells and asks the receipt routes (Receipts.ts): a route
 * is kept for mail it flushes to its receiver and dropped for mail it
 * drops, and it records which client instance was given a message.
 */
export interface MailRoutes extends ReturnRoutes {
  /** A message flushed from the mailbox to a live session: its route (Receipts.addRoute). */
  readonly flushed: (mail: Mail, receiver: Session, now: number) => void
  /**
   * A message dropped without reaching its receiver (expired, evicted, for
   * a short-lived session that ended, or given back after its sender
   * withdrew it on its way): its route, if one is left from a write its
   * receiver never confirmed, goes (Receipts.dropRoute), so no control
   * follows it to a receiver that never got it.
   */
  readonly lost: (senderKey: string, messageId: string) => void
}

/** The mailbox concern: queueing, flushing, requeueing, and telling senders of dropped mail. */
export class MailDelivery {
  private readonly ctx: RouterContext
  private readonly mailbox: Mailbox
  /** Lost-mail notices for senders that were away, sent when they register again (AwayNotices.ts). */
  private readonly owed: AwayNotices
  /**
   * Short-lived sessions that ended by `unregister`, by session key, kept a
   * day (at most MAX_ENDED): mail handed back for one fails at once (see the
   * module header). Forgotten when a session registers under the key again.
   */
  private readonly ended = new AgedMap<string, Ended>(MAX_ENDED)
  /** Mailbox copies their sender cancelled after a client read them, kept for that client (WithdrawnCopies.ts). */
  private readonly withdrawn: WithdrawnCopies
  /** Controls that came back alone with their session away, kept for the instance given their message (KeptControls.ts). */
  private readonly controls = new KeptControls()
  /** Copies of asks whose ask is over: dropped, and the `expired` still owed for one dropped as answered (StaleAsks.ts). */
  private readonly stale: StaleAsks
  private readonly routes: MailRoutes
  private readonly asks: MailAsks
  /** What a closing connection gives back, item by item (MailReturns.ts). */
  private readonly returns: MailReturns
  /** Whether a client instance that held a session can register as itself again (Registration.mayReturn). */
  private readonly mayReturn: (key: string, instance: SessionInstance) => boolean

  /**
   * @param routes told of every message flushed from the mailbox to a live session, and of every one it drops (receipt routes).
   * @param asks told of the ask edge a reply closed when the mailbox drops that reply, and asked
   *   whether an ask whose copy comes back, or is flushed, is still open.
   * @param mayReturn whether a client instance that held a session can register as itself again
   *   (Registration.mayReturn): the close path keeps a control for it only then (MailReturns' `keepAlone`,
   *   `keepRefused`), and a registration drops those kept for one that no longer can (KeptControls.takeFor).
   */
  constructor(
    ctx: RouterContext,
    routes: MailRoutes,
    asks: MailAsks,
    mayReturn: (key: string, instance: SessionInstance) => boolean
  ) {
    this.ctx = ctx
    this.mailbox = new Mailbox({
      capacity: ctx.options.mailboxCapacity,
      maxBytes: ctx.options.mailboxBytes,
      maxBytesPerTarget: ctx.options.mailboxBytesPerTarget,
      retentionMs: ctx.options.mailboxRetentionMs
    })
    this.routes = routes
    this.asks = asks
    this.owed = new AwayNotices(ctx, (key) => this.ended.size > 0 && this.ended.has(key))
    this.withdrawn = new WithdrawnCopies(ctx, routes, (copy, seq) => this.put(copy, seq))
    this.stale = new StaleAsks(
      ctx,
      asks,
      (mail, code, reason, detail) => this.lost(mail, code, reason, detail),
      (mail, seq) => this.askAgain(mail, seq)
    )
    this.mayReturn = mayReturn
    this.returns = new MailReturns(ctx, { routes, owed: this.owed, withdrawn: this.withdrawn, controls: this.controls, stale: this.stale }, {
      isEnded: (key) => this.ended.size > 0 && this.ended.has(key),
      failEnded: (mail, key) => {
        const ended = this.ended.get(key)
        if (ended !== undefined) this.lostToEnded(mail, ended)
      },
      put: (mail) => this.put(mail),
      isQueued: (mail) => this.mailbox.get(mailKeyOf(mail)) !== undefined,
      mayReturn
    })
  }

  /** Messages held for absent sessions. */
  get size(): number {
    return this.mailbox.size
  }

  /**
   * Since the broker started: cancelled copies kept for the instances that read them and given to their
   * returns (WithdrawnCopies.ts), controls kept alone for a reader's return and given at it (KeptControls.ts);
   * and the cancelled copies in the mailbox now (`copiesHeld`).
   */
  get readerCounts(): {
    readonly copiesKept: number
    readonly copiesGiven: number
    readonly copiesHeld: number
    readonly controlsKept: number
    readonly controlsGiven: number
  } {
    const copies = this.withdrawn.counts
    const controls = this.controls.counts
    return {
      copiesKept: copies.kept,
      copiesGiven: copies.given,
      copiesHeld: this.withdrawn.size,
      controlsKept: controls.kept,
      controlsGiven: controls.given
    }
  }

  /** What is held for sessions that are away, and when the oldest of it expires; undefined when nothing is. */
  held(): HeldMail | undefined {
    const queuedAt = this.mailbox.oldestQueuedAt
    const owedAt = this.owed.oldestAt
    // Only controls kept at a close hold it (KeptControls.ts); while one does, the oldest kept, holding or
    // not, says when the next goes: `until` may come early, never late (a wake-up that prunes one).
    const holding = this.controls.holdingCount
    const keptAt = holding === 0 ? undefined : this.controls.oldestAt
    if (queuedAt === undefined && owedAt === undefined && keptAt === undefined) return undefined
    const mailUntil = queuedAt === undefined ? Number.POSITIVE_INFINITY : this.mailbox.expiresAt(queuedAt)
    // `prune` gives a list of notices up once its oldest is past a day (`cutoff` there).
    const noticesUntil = owedAt === undefined ? Number.POSITIVE_INFINITY : owedAt + NOTICE_RETENTION_MS + 1
    // And a list of kept controls once it is past the mailbox's retention (`controlsCutoff`).
    const controlsUntil = keptAt === undefined ? Number.POSITIVE_INFINITY : keptAt + this.ctx.options.mailboxRetentionMs + 1
    return {
      messages: this.mailbox.size,
      notices: this.owed.count,
      controls: holding,
      until: Math.min(mailUntil, noticesUntil, controlsUntil)
    }
  }

  /** Kept controls listed at or before this, at `now`, are past the mailbox's retention (KeptControls.ts). */
  private controlsCutoff(now: number): number {
    return now - this.ctx.options.mailboxRetentionMs - 1
  }

  /**
   * On registration: owed notices first, then the session's mail (P49). On
   * leaving by `unregister`, a short-lived session's mail fails (see the
   * module header).
   */
  readonly hooks: RegistrationHooks = {
    registered: (session, _previous, now) => {
      if (this.ended.size > 0) this.ended.delete(session.key)
      // First: nothing owed for longer than a day is sent.
      this.prune(now)
      const owed = this.owed.take(session.key)
      // Base frames only: a notice that needs an extension is never owed (`tellLive`).
      if (owed !== undefined) for (const notice of owed) this.ctx.output.enqueue(session.peer, notice)
      // Controls of messages this client read before a drop, ahead of the mailbox's mail (KeptControls.ts); those
      // kept for an instance that can no longer register as itself go (review revba BA1).
      if (this.controls.size > 0) {
        const mayReturn = (instance: SessionInstance) => this.mayReturn(session.key, instance)
        for (const control of this.controls.takeFor(session, this.controlsCutoff(now), mayReturn)) this.ctx.output.enqueue(session.peer, control)
      }
      this.flush(session, now)
      // Cancelled copies kept for instances of this session that can no longer register as themselves (this one
      // the id's last holder now) go, as those instances' kept controls did in `takeFor`.
      if (this.withdrawn.size > 0) this.releaseCopies(session)
    },
    left: (session, now, unregistered) => {
      if (unregistered && session.ephemeral) this.endedUnread(session, now)
    }
  }

  /**
   * `session` registered: each cancelled copy kept for another client
   * instance of it that can never register as itself again now
   * (`mayReturn`: a base client's instance, with this one the id's last
   * holder) is no longer kept for that instance; one kept for no other
   * leaves the mailbox as it would at its expiry, silently (`routes.lost`:
   * its sender was answered `cancelled` already). Kept, it waited for no
   * one and held a memory broker's idle exit for the mailbox's retention.
   */
  private releaseCopies(session: Session): void {
    const keys = this.withdrawn.keptFor(session.key)
    if (keys === undefined) return
    const gone = (reader: Reader) => reader.receiverKey === session.key && !this.mayReturn(session.key, reader.instance)
    for (const key of keys) {
      if (!this.withdrawn.release(key, gone)) continue
      const mail = this.mailbox.delete(key)
      if (mail === undefined) continue
      this.copyLeft(mail, gone)
    }
  }

  /**
   * A cancelled copy kept for the readers `keptFor` tells left the mailbox
   * (released, expired or evicted), silently: its sender was answered
   * already. Its route goes (`routes.lost`) only when it names one of those
   * readers, whose write was given back as this copy. One naming another
   * client instance (a reader the cancel told while live, as P49's other
   * holder, handed the message on) names a write that may still hold the
   * message unwritten: dropped, it would take with it the withdrawal that
   * write's give-back must find, and past the replay record's hour the
   * message would come back live (review revbx BX3). It ages as any other.
   */
  private copyLeft(mail: Mail, keptFor: (reader: Reader) => boolean): void {
    const given = this.routes.givenTo(mail.senderKey, mail.message.id)
    if (given === undefined || !keptFor({ receiverKey: given.receiverKey, instance: given.receiverInstance })) return
    this.routes.lost(mail.senderKey, mail.message.id)
  }

  /** `copy`'s readers as `copyLeft` asks: whether `reader` is one of them (its session and client instance). */
  private static keptForAny(copy: WithdrawnCopy): (reader: Reader) => boolean {
    return (reader) => copy.readers.some((kept) => kept.receiverKey === reader.receiverKey && kept.instance === reader.instance)
  }

  /**
   * A short-lived session ended by `unregister`: kept as ended, so the mail
   * its connection hands back fails. The mailbox holds none for it: its
   * registration flushed it, and mail coming back while it is live goes to it.
   */
  private endedUnread(session: Session, now: number): void {
    // Its messages carry this: one lost however much later owes it no notice (`lost`).
    if (session.senderEnd !== undefined) session.senderEnd.ended = true
    const name = session.fields.name
    const label = name === undefined ? session.id : `${name} (${session.id})`
    this.ended.put(session.key, { infoJson: session.infoJson, label }, now)
  }

  /** Mail for a short-lived session that ended without reading it: its sender is told now, as on expiry. */
  private lostToEnded(mail: Mail, ended: Ended): void {
    this.lost(mail, DeliveryCode.DeliveryExpired, Reason.expired, Reason.endedUnread(ended.label), ended.infoJson)
  }

  /**
   * P49: when a send resolved only to a departed session, the one other live
   * session holding the same identity (explicit name + real cwd) takes it now.
   * Not a reply (our deviation): it answers an ask its departed asker made,
   * which the other session never saw, so it waits in the mailbox for that
   * asker (see `flush`).
   */
  soleHolder(attempt: SendAttempt): Session | undefined {
    if (attempt.message.replyTo !== undefined) return undefined
    const identity = attempt.remembered?.identity
    if (identity === undefined) return undefined
    const holders = attempt.sender.space.liveWithIdentity(identity, attempt.sender)
    return holders.length === 1 ? holders[0] : undefined
  }

  /**
   * Queues mail for an absent session; the outcome to answer its send with:
   * `queued`, or `E_DELIVERY_EVICTED` naming the bound when the mailbox could
   * not keep it (then nothing was queued, and its sender is told only by
   * that answer — no `expired` receipt follows an acknowledgement).
   */
  queue(mail: Mail): Outcome {
    // A resend over a cancelled copy, its replay record gone (an hour; the copy stays a day): a new message,
    // not the copy a client read, so it is no longer kept as one (review revi I4). A size check when none is.
    // Its route goes whatever reader it names — not `copyLeft`'s rule: it is the old message's, and kept it would
    // tie this one to a client instance that never got it (a receipt along it would reach the sender as this
    // one's). Nor does a told reader's stuck write (review revbx BX3) need the route: the resend's own replay
    // record, written next, forgets the withdrawal (DeliveryRecords.keep, review revf R1) but notes it for the
    // old message, which that write's give-back finds so and drops (DeliveryRecords.withdrawnBeforeResend,
    // MailReturns.requeueForwarded; review cpback).
    if (this.withdrawn.size > 0 && this.withdrawn.take(mailKeyOf(mail)) !== undefined) this.routes.lost(mail.senderKey, mail.message.id)
    let refused: Outcome | undefined
    for (const eviction of this.mailbox.put(mail)) {
      if (eviction.mail === mail) {
        refused = {
          ok: false,
          code: DeliveryCode.DeliveryEvicted,
          reason: Reason.notQueued(eviction.bound, eviction.limit, eviction.bytes),
          retryable: false
        }
      } else this.evicted(eviction)
    }
    return refused ?? QUEUED
  }

  /**
   * The newest of `senderKey`'s messages waiting under `messageKey` for any session (`newestUnder`), which a
   * mailbox cancel withdraws (`cancel`) unless a later message under the id was delivered (Cancels.ts). A size
   * check when the mailbox is empty.
   */
  newestWaiting(messageKey: string, senderKey: string): Mail | undefined {
    return this.newestUnder(messageKey, senderKey)
  }

  /**
   * Whether a client instance of the session `receiverKey` read `mail` before it came back to the mailbox (its read
   * mark, WithdrawnCopies.readersOfCopy): a route naming that session may be this mail's (Cancels.ts). Cancel path only.
   */
  readByReceiver(mail: Mail, receiverKey: string): boolean {
    return this.withdrawn.readersOfCopy(mail)?.some((reader) => reader.receiverKey === receiverKey) === true
  }

  /**
   * The sender withdraws `queued`, its newest mail waiting under the id
   * (`newestWaiting`; P71). A withdrawn reply reopens its ask. A copy a
   * write gave a client instance before it came back (marked read with
   * that instance, MailReturns.requeueForwarded: no route needed, which goes after an
   * hour) stays, noted as cancelled with `control(receiverKey)`, the cancel's
   * `message_control` to that session, for that instance's return — for
   * each instance's, when more than one read it (WithdrawnCopies.ts);
   * any other leaves the mailbox. Says which (MailboxCancel): `none` when
   * it is a cancelled copy already, and nothing is withdrawn. An older
   * message under the id, waiting for another session, stays: its sender
   * never withdrew it.
   */
  cancel(queued: Mail, control: (receiverKey: string, instance: SessionInstance) => ControlFrame): MailboxCancel {
    const key = mailKeyOf(queued)
    if (this.withdrawn.has(key)) return "none"
    const readers = this.withdrawn.readersOfCopy(queued)
    if (readers === undefined) this.mailbox.delete(key)
    else {
      const copy: WithdrawnCopy = { readers: readers.map((reader) => ({ ...reader, control: control(reader.receiverKey, reader.instance) })) }
      // Readers live again without having taken it (P49: another holder of the identity was live at their
      // return): each told now, not at a return that may never come (review revl L3, revm M5); the copy
      // stays for the rest.
      let live: Array<Session> | undefined
      for (const reader of readers) {
        const session = liveSession(this.ctx, reader.receiverKey)
        if (session !== undefined && goesTo(copy, session) && !(live ??= []).includes(session)) live.push(session)
      }
      if (live !== undefined && live.length > 0) {
        const seq = this.mailbox.seqOf(key)
        this.mailbox.delete(key)
        this.withdrawn.give(queued, copy, live, this.ctx.now(), seq, "cancel")
      } else this.withdrawn.keep(key, copy)
    }
    if (queued.answers !== undefined) this.stale.replyLost(queued.answers, this.ctx.now())
    const cancelled: Outcome = { ok: false, code: DeliveryCode.DeliveryCancelled, reason: Reason.cancelledQueued, retryable: false }
    // By that message's identity, for a give-back under a reused id (DeliveryRecords.noteWithdrawnMail).
    this.ctx.records.noteWithdrawnMail(queued, cancelled, this.ctx.now())
    // Only its own record: not that of a later message under the id, delivered (review revmailkey2 probe 3).
    this.ctx.records.rewrite(queued.senderKey, queued.message.id, cancelled, undefined, queued.targetKey, () => fingerprintOfMail(queued))
    return readers === undefined ? "deleted" : "copy"
  }

  /**
   * Its sender superseded the message `messageKey`, and the supersede's
   * control went to `told`, the live client instance its route (or record)
   * names as given that message (the supersede stage, SupersedeStage.ts). A copy waiting
   * in the mailbox under that key leaves silently (the record says
   * superseded, its sender was answered) when it is that message's own:
   * `told` read that very mail object — written it, and gave it back
   * unconfirmed (its read mark, WithdrawnCopies.readBy) — as P49's other
   * holder of the identity of the away session the copy waits for, which
   * would otherwise get it live with no control. A later message under a
   * reused id is another object, never read by `told` (its own write would
   * have routed it afresh): it stays (reviews revcc item 1, revcg CG1), as
   * does a cancelled copy kept for its readers. The route stays, keeping the
   * withdrawal. The copy that leaves takes its stored row with it. True when the copy left. A size check when the mailbox is
   * empty; supersede sends only.
   */
  superseded(messageKey: string, told: Session): boolean {
    if (this.mailbox.size === 0) return false
    // Among messages under the id waiting for several sessions, only the copy `told` read (its mark names it).
    for (const copy of this.mailbox.under(messageKey)) {
      const key = mailKeyOf(copy)
      if (this.withdrawn.has(key) || !this.withdrawn.readBy(copy, told)) continue
      this.mailbox.delete(key)
      // Its stored row goes too: the supersede's record rewrite drops the row for `told`'s session only.
      this.ctx.journal?.mailGone(copy.senderKey, copy.message.id, copy.targetKey)
      return true
    }
    return false
  }

  /**
   * The newest of `senderKey`'s messages waiting under `messageKey` for any
   * session: the latest received (`brokerReceivedAt`); among those received
   * at one stamp, the one accepted last (`Mail[ACCEPTED]`) — not
   * the last queued: a message given back is queued again behind later ones
   * (review revmailkey2 probe 6); mail restored after a restart has its
   * place too, in the order it was accepted before (Router.restore) — or,
   * when either has no place (a durable question's mail), the last queued. Several wait only when messages under one id wait
   * for several sessions (Mailbox.ts).
   */
  private newestUnder(messageKey: string, senderKey: string): Mail | undefined {
    if (this.mailbox.size === 0) return undefined
    let newest: Mail | undefined
    for (const mail of this.mailbox.under(messageKey)) {
      if (mail.senderKey !== senderKey) continue
      if (newest === undefined || acceptedLater(mail, newest)) newest = mail
    }
    return newest
  }

  /**
   * Drops `senderKey`'s queued message `messageId` whose put was never
   * stored (a commit failed, StoreJournal.failed) and records `refusal` as
   * its outcome, so the send its sender was never acknowledged for is
   * refused instead, and a retry of it is judged afresh (the refusal is
   * retryable). A dropped reply reopens its ask. True when it was still
   * queued. The message for the session `targetKey` (its pending row's,
   * JournalAcks.refuseHeld): with messages under the id waiting for several
   * sessions, exactly the one refused (review revmailkey2 probe 5).
   */
  refuseUnstored(senderKey: string, messageId: string, targetKey: string, refusal: Outcome): boolean {
    if (this.mailbox.size === 0) return false
    const queued = this.mailbox.get(mailKeyFor(recordKeyOf(senderKey, messageId), targetKey))
    if (queued === undefined) return false
    const key = mailKeyOf(queued)
    this.mailbox.delete(key)
    this.withdrawn.take(key)
    if (queued.answers !== undefined) this.stale.replyLost(queued.answers, this.ctx.now())
    // A failure outcome also drops the journal's put (Router: `records.rewrite` → `StoreJournal.mailGone`). Only its
    // own record: not that of another message under the id, written live (review rrmk probe 2).
    this.ctx.records.rewrite(senderKey, messageId, refusal, undefined, queued.targetKey, () => fingerprintOfMail(queued))
    return true
  }

  /**
   * Tells a sender about one of its messages: at once when it is connected,
   * otherwise when it registers again (kept a day, bounded like every owed
   * notice). For concerns other than the mailbox that drop acknowledged
   * messages (replace staging).
   */
  notify(senderKey: string, notice: string): void {
    const item = this.owed.issue(senderKey, notice, this.ctx.now())
    const sender = this.ctx.registry.byKey.get(senderKey)
    if (sender !== undefined) this.ctx.journal?.mark(sender.peer)
    this.takeBack(item)
  }

  /**
   * Tells a session a notice only a connection granted `feature` knows
   * (`ask_expired`, `ask-expiry-v1`): on its FIFO outbox, behind everything
   * queued for it before, when its connection is registered and was granted
   * `feature`; otherwise it is dropped — not owed, not stored, so it neither
   * holds a memory broker from its idle exit nor takes the room of the
   * lost-mail notices. Its asker does not need it to end: an asker that
   * cannot hear the broker at its own deadline ends then (Ask.ts).
   */
  tellLive(sessionKey: string, frame: string, feature: string): void {
    const session = this.ctx.registry.byKey.get(sessionKey)
    if (session === undefined || !session.peer.features.has(feature)) return
    // Nothing to wait for the store: an edge's expiry is not stored (a restart drops an edge past its deadline).
    this.takeBack({ frame, owedTo: sessionKey, seq: undefined, owedAt: this.ctx.now(), feature })
  }

  /**
   * Output that could not be written where it was queued, given back (Output's `takeBack` side): as
   * MailReturns.takeBack decides (`refusedBy` there). True when it went to its session's live connection.
   */
  takeBack(item: Returnable | ControlFrame, refusedBy?: LeftBy, cameBack?: OutboundMessage): boolean {
    return this.returns.takeBack(item, refusedBy, cameBack)
  }

  /** A message that was on its way to a connection that closed (MailReturns.requeue). */
  requeue(outbound: OutboundMessage): boolean {
    return this.returns.requeue(outbound)
  }

  /** What a connection that closed gives back, oldest first (MailReturns.giveBack). */
  giveBack(items: ReadonlyArray<OutboundItem>, leftBy: (key: string) => LeftBy): void {
    this.returns.giveBack(items, leftBy)
  }

  /** Controls a session that ended by `unregister` handed back, after `items` (MailReturns.controlsHandedBack). */
  controlsHandedBack(controls: ReadonlyArray<ControlFrame>, items: ReadonlyArray<OutboundItem>): void {
    this.returns.controlsHandedBack(controls, items)
  }

  /**
   * `items`, given back by custody (Custody.ts), were written to their
   * client, which never confirmed reading them (`writtenTo` says which
   * client instance): a copy of one that goes back to the mailbox is kept,
   * if its sender cancels it there, for that client (WithdrawnCopies.ts). A
   * close path only.
   */
  unconfirmed(items: ReadonlyArray<Written>, writtenTo: WrittenTo): void {
    if (items.length > 0) this.withdrawn.unconfirmed(items, writtenTo)
  }

  /**
   * The mail `senders` sent the session `key` that the mailbox holds (mailbox
   * keys, Mailbox.mailKeyOf, in queue order): at the end of a takeover's custody hold
   * (CustodyHold.ts), mail they sent it while it was away, which must go
   * behind what that end gives back (`queueBehind`). Undefined when there
   * is none (the session is live, or was sent none of theirs).
   */
  sentWhileHeld(key: string, senders: ReadonlySet<string>): ReadonlyArray<string> | undefined {
    if (this.mailbox.size === 0) return undefined
    const keys = this.mailbox.keysFor(key, (mail) => senders.has(mail.senderKey))
    return keys.length === 0 ? undefined : keys
  }

  /**
   * The mail of `keys` (`sentWhileHeld`) still queued goes behind what
   * the mailbox took since: a hold's custody and kept mail, older, requeued
   * at its end, is flushed first — each sender's order kept.
   */
  queueBehind(keys: ReadonlyArray<string>): void {
    this.mailbox.toBack(keys)
  }

  /**
   * Mail the durable store kept across a restart: queued again (its sender
   * was acknowledged; a retry of it is answered "queued"), the newest in
   * the queue: Router.restore queues it in the order the mailbox had it
   * (RestoreOrder.ts), mail given back before the restart at its return.
   * Its replay record says `queued` again — its own only, not a later
   * message's under the id, delivered, whose record a retry and a cancel read.
   */
  restore(mail: Mail): void {
    const now = this.ctx.now()
    // A reply whose asker was owed an ask's `expired` before the restart still owes it (review revs S1).
    this.stale.reattach(mail)
    // A replace-mode ask stored while it was staged has no edge yet (its window's close opens one): it opens
    // now, until the ask's own deadline, unless its asker withdrew it (Asks.openStaged).
    if (mail.delivery?.threadId !== undefined && mail.message.expectsReply === true && mail.message.replyTo === undefined) {
      this.asks.openStaged(mail, now)
    }
    // An ask withdrawn or expired before the restart (its edge was not restored) is not asked again.
    if (this.stale.isStale(mail, now)) return this.stale.drop(mail)
    this.put(mail)
    // Only its own record, not a later message's under the id (delivered: a retry of it is still answered so, and
    // a cancel still names it; task cancel2).
    if (this.mailbox.get(mailKeyOf(mail)) !== undefined) {
      this.ctx.records.rewrite(mail.senderKey, mail.message.id, QUEUED, undefined, mail.targetKey, () => fingerprintOfMail(mail))
    }
  }

  /**
   * An `expired` owed for an ask that went silently as answered, kept by the
   * durable store across a restart (StaleAsks.drop): owed again once its reply
   * is restored (`restore`, after this), and should that reply be lost.
   */
  restoreSilenced(stored: StoredSilenced): void {
    this.stale.restoreSilenced(stored)
  }

  /** The restore is over: a stored debt whose reply was not restored leaves the store (StaleAsks.restoreDone). */
  restoreDone(): void {
    this.stale.restoreDone()
  }

  /**
   * A failure notice the durable store kept across a restart: owed to its
   * sender again, from when it was first owed (still kept a day, still
   * bounded; one past either leaves the store).
   */
  restoreNotice(stored: StoredNotice, now: number): void {
    this.owed.restore(stored, now)
  }

  /** Drops expired mail, telling its senders, and notices owed for longer than a day. */
  prune(now: number): void {
    const cutoff = now - DAY - 1
    if (this.ended.size > 0) this.ended.expire(cutoff)
    this.controls.expire(this.controlsCutoff(now))
    this.owed.expire(now - NOTICE_RETENTION_MS - 1)
    for (const mail of this.mailbox.expire(now)) {
      const copy = this.withdrawn.size === 0 ? undefined : this.withdrawn.take(mailKeyOf(mail))
      if (copy !== undefined) this.copyLeft(mail, MailDelivery.keptForAny(copy))
      else if (this.stale.isStale(mail, now)) this.stale.drop(mail)
      else this.lost(mail, DeliveryCode.DeliveryExpired, Reason.expired, Reason.expired)
    }
  }

  /**
   * The ask `messageKey` is over (its asker withdrew it, its edge expired,
   * or `answeredBy` answered it: Asks.ts): a copy of it waiting in the
   * mailbox goes now (StaleAsks.drop; an answered one as answered), not
   * when its recipient comes back.
   */
  askClosed(messageKey: string, now: number, answeredBy?: Mail): void {
    if (this.mailbox.size === 0) return
    // Each copy under the id (for any session) that is stale; a cancelled copy (its ask withdrawn with it) stays
    // for the instance that read it (WithdrawnCopies.ts).
    for (const queued of this.mailbox.under(messageKey)) {
      const key = mailKeyOf(queued)
      if (this.withdrawn.has(key) || !this.stale.isStale(queued, now)) continue
      this.mailbox.delete(key)
      this.stale.drop(queued, answeredBy)
    }
  }


  /**
   * An ask StaleAsks dropped as answered whose reply was lost before its
   * deadline (its edge open again: StaleAsks.replyLost): stored again (its
   * drop took it out of the store) — under `seq`, its row's when it was
   * dropped, its acceptance's, when known (StoreJournal.putAgain: a restart
   * keeps its place in the acceptance order; review rvmk2 probe 1) — and written to its recipient's live
   * connection as a flush would, else queued for its return (its own replay
   * record, not a later send's under the id, says `queued` again, as any mailbox copy's, and the mailbox's
   * retention counts from now). Not when a copy of it waits in the mailbox
   * already.
   */
  private askAgain(asked: Mail, seq: number | undefined): void {
    if (this.mailbox.get(mailKeyOf(asked)) !== undefined) return
    const now = this.ctx.now()
    // Queued anew: the mailbox's retention counts from now, as for any copy given back (`MailReturns.requeue`),
    // not from when the answered copy was first queued — or it would expire at once while its edge is open.
    const mail: Mail = { ...asked, queuedAt: now }
    if (seq === undefined) this.ctx.journal?.putMail(mail)
    else this.ctx.journal?.putAgain(mail, seq)
    const live = liveSession(this.ctx, mail.targetKey)
    if (live === undefined) {
      this.put(mail)
      // Unless the bounds pushed it out at once (then its record says evicted).
      // Its own record only: a later send under the id (its asker's, P46/P47) keeps its outcome (task rwown).
      if (this.mailbox.get(mailKeyOf(mail)) !== undefined) {
        this.ctx.records.rewrite(mail.senderKey, mail.message.id, QUEUED, undefined, mail.targetKey, () => fingerprintOfMail(mail))
      }
      return
    }
    this.ctx.output.forceEnqueue(live.peer, { frame: messageFrameFor(mail, live.peer, this.ctx.stamps.at(now)), mail, to: live.key, senderSince: 0 })
    this.routes.flushed(mail, live, now)
  }

  /** Queues `mail` (at its queue place `seq` when given: Mailbox.put); what the bounds push out goes as `evicted` says. */
  private put(mail: Mail, seq?: number): void {
    for (const eviction of this.mailbox.put(mail, seq)) this.evicted(eviction)
  }

  /**
   * Mail the mailbox's bounds pushed out: its sender's receipt names the
   * bound and the message's size — but for a copy of an ask that is over,
   * dropped as StaleAsks decides (`expired`, or silently).
   */
  private evicted(eviction: Eviction): void {
    // A cancelled copy goes silently: its sender was answered already.
    const copy = this.withdrawn.size === 0 ? undefined : this.withdrawn.take(mailKeyOf(eviction.mail))
    if (copy !== undefined) return this.copyLeft(eviction.mail, MailDelivery.keptForAny(copy))
    // An ask over before the sweep reached it (its deadline passed, no send since): expired first, as `prune` says.
    if (this.stale.isStale(eviction.mail, this.ctx.now())) return this.stale.drop(eviction.mail)
    this.lost(
      eviction.mail,
      DeliveryCode.DeliveryEvicted,
      Reason.evicted,
      Reason.evictedBy(eviction.bound, eviction.limit, eviction.bytes)
    )
  }

  private flush(session: Session, now: number): void {
    this.prune(now)
    if (this.mailbox.size === 0) return
    const space = session.space
    const identity = session.identity
    const soleHolder = identity !== undefined && space.liveWithIdentity(identity, session).length === 0
    // Another session's mail by identity, never its own, and neither a reply (see `soleHolder`) nor an ask
    // that went back to the mailbox: its edge names the session asked, so only that one can answer it.
    const mails = this.mailbox.take(
      session.key,
      soleHolder ? identity : undefined,
      (mail) =>
        mail.spaceKey === space.key &&
        // Its own mail, unless it is a cancelled copy kept for client instances other than this one: P49's other
        // holder, who read it (review revl L1), or instances of this session (review revm M2, M3).
        ((mail.targetKey === session.key && (this.withdrawn.size === 0 || !this.withdrawn.withheldFrom(mailKeyOf(mail), session))) ||
          ((this.withdrawn.size === 0 || !this.withdrawn.has(mailKeyOf(mail))) && mail.senderIdentity !== identity && mail.message.replyTo === undefined && mail.message.expectsReply !== true))
    )
    // Cancelled copies this session read of mail for another (P49's other holder of its identity took it):
    // they are kept for it, not for the session the mail names (review revi I1).
    const kept = this.withdrawn.keptFor(session.key)
    if (kept !== undefined) {
      for (const key of kept) {
        const mail = this.mailbox.get(key)
        if (
          mail !== undefined && mail.targetKey !== session.key && mail.spaceKey === space.key &&
          !this.withdrawn.withheldFrom(key, session)
        ) {
          const seq = this.mailbox.seqOf(key)
          this.mailbox.delete(key)
          if (seq !== undefined) mails.push({ mail, seq })
        }
      }
    }
    for (const { mail, seq } of mails) {
      const copy = this.withdrawn.size === 0 ? undefined : this.withdrawn.take(mailKeyOf(mail))
      if (copy !== undefined) {
        this.withdrawn.give(mail, copy, [session], now, seq, "return")
        continue
      }
      if (this.stale.isStale(mail, now)) {
        this.stale.drop(mail)
        continue
      }
      // Sent before this registration, so by no incarnation of its sender's this recipient sees return (Rejoins.ts).
      this.ctx.output.enqueue(session.peer, { frame: messageFrameFor(mail, session.peer, this.ctx.stamps.at(now)), mail, to: session.key, senderSince: 0 })
      this.routes.flushed(mail, session, now)
      // Only its own record: found by sender and id it may be a later send's under the id, whose retryable failure
      // its retry must still hear (P47), not this message's delivery (task flushrw).
      this.ctx.records.rewrite(mail.senderKey, mail.message.id, deliveredTo(session.id, mail.targetId), undefined, mail.targetKey, () => fingerprintOfMail(mail))
    }
  }

  /**
   * Mail dropped by expiry or eviction, or for a short-lived session that
   * ended: the replay record says so (P46, `reason`), and the sender is told
   * with an `expired` receipt (`detail`; `from` is `knownTarget` when given,
   * a session the broker no longer lists) rather than left to assume. A
   * reply among it leaves its ask unanswered: the ask's edge opens again
   * (until its deadline; not for an asker that ended, review revx X3), so
   * sending the reply again is accepted. An ask among it whose edge is
   * still open ends with that receipt: its edge closes as when its asker
   * withdraws it (Asks.askLost), since its asker, told the question will
   * not be asked, waits for no answer (this package's client ends the wait
   * on that receipt). Mail
   * written to a connection that closed before its client confirmed it, and
   * given back, still has the route of that write: it goes, so its sender's
   * cancel or supersede is answered as for any mail the mailbox dropped and
   * sends its receiver no control (found by the simulation,
   * `--settle-hold --client-timings` seed 11641).
   */
  private lost(mail: Mail, code: DeliveryCode, reason: string, detail: string, knownTarget?: string): void {
    // Only its own record: not that of another message under the id, delivered (review rrmk probe 5).
    const outcome: Outcome = { ok: false, code, reason, retryable: false }
    this.ctx.records.rewrite(mail.senderKey, mail.message.id, outcome, undefined, mail.targetKey, () => fingerprintOfMail(mail))
    // Unconditional, unlike `copyLeft`: this is never a cancelled copy (those leave by `copyLeft`), so no write
    // elsewhere holds this mail. Its route, if any, names the write that gave it back, or an older message under
    // its id (a resend after that one's record went), whose withdrawal, if any, the resend's own record forgot
    // already and noted for the old message's give-back (DeliveryRecords.keep, withdrawnBeforeResend): dropping
    // it takes no withdrawal a stuck write still needs (review revbx BX3's shape;
    // test/broker/lost-route-other-holder.test.ts).
    this.routes.lost(mail.senderKey, mail.message.id)
    const now = this.ctx.now()
    this.tellLost(mail, detail, now, knownTarget)
    // Its own edge only, told by its deadline: an ask's edge's is its receipt plus its timeout, a stamp (StaleAsks.drop).
    // Never a durable question's edge under the same key (its deadline is on the clock, and may equal this one while
    // the stamps lead it): no mail is a question's notification, and Asks.askLost leaves such an edge open.
    if (mail.message.expectsReply === true && mail.askTimeoutMs !== undefined) {
      this.asks.askLost(mail.recordKey, mail.brokerReceivedAt + mail.askTimeoutMs, now)
    }
    // After its receipt: a question asked again comes to its replier behind the news that its reply failed, so
    // its client lets the question pass again (RecentMessages.replyLost, review revx X1). A reply to a
    // short-lived asker that ended (`ended`): its ask is not reopened nor asked again (review revx X3).
    if (mail.answers !== undefined) this.stale.replyLost(mail.answers, now, this.ended.size > 0 && this.ended.has(mail.targetKey))
  }

  /** `lost`'s `expired` receipt: to its sender, live, else owed (not to a short-lived sender that ended). */
  private tellLost(mail: Mail, detail: string, now: number, knownTarget: string | undefined): void {
    const { registry, output } = this.ctx
    const sender = registry.byKey.get(mail.senderKey)
    // Away, past the bounds of what is owed to it: given up before a notice is built (AwayNotices.givesUp).
    if (sender === undefined && mail.senderEnd?.ended !== true && this.owed.givesUp(mail.senderKey, now)) return
    const space = registry.spaces.get(mail.spaceKey)
    const targetInfo = knownTarget ?? space?.sessions.get(mail.targetId)?.infoJson ??
      registry.recent.get(mail.spaceKey, mail.targetId)?.infoJson ?? unknownTargetInfo(mail, now)
    const frame = Encode.receiptFrame(targetInfo, {
      messageId: mail.message.id,
      status: "expired",
      timestamp: now,
      detail
    })
    const notice = this.owed.issue(mail.senderKey, frame, now)
    if (sender !== undefined) {
      this.ctx.journal?.mark(sender.peer)
      return output.forceEnqueue(sender.peer, notice)
    }
    // A short-lived sender that ended by `unregister`, however long ago (`ended` forgets it after a day):
    // it never registers again to be told, so nothing is owed (see the module header).
    if (mail.senderEnd?.ended === true) return this.owed.forget(notice)
    // The sender is away: it is told when it registers again (within a day).
    this.owed.owe(notice)
  }
}
