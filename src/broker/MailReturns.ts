/**
 * Size: about 510 lines, past the ~400 guideline, most of it the JSDoc of
 * each rule: one concept, where a given-back item goes next.
 *
 * The close path's side of the mailbox: what a connection gives back when it
 * closes (or its session's `unregister` hands back), item by item — mail
 * requeued to the session's live connection or the mailbox, a notice forced
 * to its session's live connection or owed again, a control passed on only
 * behind its own message, or kept for the client instance it was written to
 * (KeptControls.ts), or dropped.
 *
 * Why a module of its own: these decisions are one concept (where a given-
 * back item goes next, and in what order against its own message), the one
 * most reviews of the mailbox touched, and they need only a narrow part of
 * MailDelivery (`ReturnPort`): whether a session ended by `unregister`, the
 * mailbox's put, and what the cancelled copies, the stale asks and the kept
 * controls decide. MailDelivery owns every structure named here; this class
 * holds references to them and runs inside the same synchronous step.
 */
import { ControlFrame } from "./ControlFrame.ts"
import { fingerprintOfMail, QUEUED } from "./DeliveryRecords.ts"
import type { AwayNotices } from "./AwayNotices.ts"
import type { KeptControls } from "./KeptControls.ts"
import { isControl, isMessage } from "./OutboundItems.ts"
import { mailKeyOf } from "./Mailbox.ts"
import type { Mail, OutboundItem, OutboundMessage, Returnable } from "./Peer.ts"
import { mayHold, type Session, type SessionInstance } from "./Registry.ts"
import type { RouterContext } from "./RouterContext.ts"
import type { StaleAsks } from "./StaleAsks.ts"
import type { CopyRoutes, Reader, WithdrawnCopies } from "./WithdrawnCopies.ts"

/**
 * How the session of a connection that gives mail back left it: at the
 * connection's close, or by `unregister` before it (MailReturns.giveBack).
 */
export type LeftBy = "close" | "unregister"

/** What the close path tells and asks the receipt routes (Receipts.ts). */
export interface ReturnRoutes extends CopyRoutes {
  /** Whether `receiver`'s client instance was given `mail` (its route says so: Receipts.given). */
  readonly given: (mail: Mail, receiver: Session) => boolean
  /**
   * Whether `control`'s message went to `receiver`'s client instance, as far as its route or record knows
   * (Receipts.givenMessageOf): undefined when neither names an instance.
   */
  readonly givenMessageOf: (control: ControlFrame, receiver: Session) => boolean | undefined
  /**
   * `senderKey`'s message `messageId`, withdrawn on its way, was given back
   * never written and is dropped: as `lost`, and no client read it
   * (Receipts.dropRoute with `unread`).
   */
  readonly lostUnread: (senderKey: string, messageId: string) => void
  /** Whether that was said of `senderKey`'s message `messageId` (Receipts.droppedUnread). */
  readonly droppedUnread: (senderKey: string, messageId: string) => boolean
}

/** What the close path needs of the mailbox concern that owns it (MailDelivery). */
export interface ReturnPort {
  /** Did the short-lived session under `key` end by `unregister` (MailDelivery's `ended`)? */
  readonly isEnded: (key: string) => boolean
  /** Fails `mail` for the ended short-lived session `key`: its sender is told now, as on expiry. */
  readonly failEnded: (mail: Mail, key: string) => void
  /** Queues `mail` in the mailbox; what its bounds push out goes as they say (MailDelivery's `put`). */
  readonly put: (mail: Mail) => void
  /** Is `mail` in the mailbox (under its mailbox key, Mailbox.mailKeyOf: not another message under its id)? */
  readonly isQueued: (mail: Mail) => boolean
  /**
   * Whether the client instance `instance`, which held the session `key`, can register as itself again
   * (Registration.mayReturn): only then is a control kept for it, whether another instance holds the session
   * now or it is away.
   */
  readonly mayReturn: (key: string, instance: SessionInstance) => boolean
}

/** The parts of the mailbox concern the close path decides with; all owned by MailDelivery. */
export interface ReturnParts {
  readonly routes: ReturnRoutes
  /** Lost-mail notices owed to absent senders (AwayNotices.ts). */
  readonly owed: AwayNotices
  /** Cancelled copies kept for the client instances that read them (WithdrawnCopies.ts). */
  readonly withdrawn: WithdrawnCopies
  /** Controls kept alone for a reader's return (KeptControls.ts). */
  readonly controls: KeptControls
  /** Ask copies whose ask is over (StaleAsks.ts). */
  readonly stale: StaleAsks
}

/** The session registered under `key`, if its connection is registered and not closing. */
export const liveSession = (ctx: RouterContext, key: string): Session | undefined => {
  const session = ctx.registry.byKey.get(key)
  return session !== undefined && session.peer.state === "registered" && !session.peer.isClosing ? session : undefined
}

/** Where each item a closing connection gives back goes next (see the module header). */
export class MailReturns {
  private readonly ctx: RouterContext
  private readonly port: ReturnPort
  private readonly routes: ReturnRoutes
  private readonly owed: AwayNotices
  private readonly withdrawn: WithdrawnCopies
  private readonly controls: KeptControls
  private readonly stale: StaleAsks

  constructor(ctx: RouterContext, parts: ReturnParts, port: ReturnPort) {
    this.ctx = ctx
    this.port = port
    this.routes = parts.routes
    this.owed = parts.owed
    this.withdrawn = parts.withdrawn
    this.controls = parts.controls
    this.stale = parts.stale
  }

  /**
   * Output that could not be written where it was queued: mail is requeued,
   * a notice forced to its session's live connection or owed again. A notice
   * that needs an extension (`OutboundNotice.feature`) goes only to a live
   * connection granted it — the session's connection may now be another
   * client's, one that took its id over without the extension — and is
   * otherwise dropped. A control frame (ControlFrame.ts) goes to its
   * session's connection now — after the mail given back before it — or,
   * with that session away, is dropped (a control needs both sides live);
   * so is one about a message an earlier give-back dropped never written
   * (`aboutUngiven`: no client of its session got that message), and one
   * whose message its session's live client instance was not given
   * (`reachesLive`: its route names another — refused at the closed
   * connection of the instance that read it, after another registered the
   * session; a takeover's hand-over moves the route on with the message).
   * True when it went to its session's live connection (kept with a
   * takeover's hold there included): a takeover's hand-over passes a
   * control on only after its message went so (OutputEnd.handOver).
   * `refusedBy` (a control parked at its sender's reader that the closed
   * connection it was for refused, Output.refused; or one a takeover's
   * hand-over passes on to no one, OutputEnd.handOver): one that cannot go
   * now is kept for the client instance it was written to (`keepRefused`),
   * holding a memory broker's idle exit when its session left the refusing
   * connection by its close, not by `unregister` (`refusedBy`). `cameBack`:
   * its message, which that hand-over took back and passed on to no one
   * (withdrawn, not the new instance's): kept then only for an instance
   * that read it (`readBy`).
   */
  takeBack(item: Returnable | ControlFrame, refusedBy?: LeftBy, cameBack?: OutboundMessage): boolean {
    if (item instanceof ControlFrame) {
      const live = liveSession(this.ctx, item.to)
      if (live !== undefined && !this.aboutUngiven(item) && this.reachesLive(item, live)) {
        this.ctx.output.forceEnqueue(live.peer, item)
        return true
      }
      if (refusedBy !== undefined && (cameBack === undefined || this.readBy(item, cameBack))) this.keepRefused(item, live, refusedBy)
      return false
    }
    if ("mail" in item) return this.requeue(item)
    const sender = liveSession(this.ctx, item.owedTo)
    const live = sender !== undefined
    if (item.feature !== undefined) {
      if (!live || !sender.peer.features.has(item.feature)) return false
      this.ctx.output.forceEnqueue(sender.peer, item)
      return true
    }
    if (live) {
      this.ctx.output.forceEnqueue(sender.peer, item)
      return true
    }
    this.owed.owe(item)
    return false
  }

  /**
   * A message that was on its way to a connection that closed: to the
   * session's new connection if it is already back (a takeover: the old
   * connection's leftovers must not sit in the mailbox while the session is
   * live) — but one its sender cancelled or superseded on its way only when
   * that connection's client instance was given it (its route says so,
   * `MailRoutes.given`: a rejoin of the same instance), never to a new one,
   * nor to the mailbox (but as a cancelled copy kept for the client instance
   * written it, WithdrawnCopies.keepCancelled); for a short-lived session that ended by `unregister`, failed
   * (its sender told); kept with the session's takeover custody hold when
   * that still waits for an old close and covers the sender (its older mail
   * comes back at that close: CustodyHolds.keepWhileAway); otherwise back
   * to the mailbox for its next registration. True when it went to the
   * session's live connection (`requeueForwarded`).
   */
  requeue(outbound: OutboundMessage): boolean {
    return this.requeueForwarded(outbound)
  }

  /**
   * What a connection that closed gives back (`Router.detach`: what its
   * client never confirmed, the untaken rest of its last write, its outbox,
   * and what a takeover's hold kept behind it), oldest first, as
   * `Output.undeliverable` takes each — except that a control frame goes on
   * only when the message it is about went to the session's connection in
   * this same give-back. Such a connection is another instance's (the
   * client's own rejoin took what it had, with every control, at its
   * `register`: `Router.abandoned`): one that never got the message from
   * here cannot act on a cancel or supersede of it, and its client would
   * mark the unknown id replied and answer its sender (ControlFrame.ts,
   * docs/protocol.md). Not passed on so: a control whose message its old
   * client confirmed reading, and one whose message is not forwarded — an
   * ask that is over (`isStale`), mail requeued for a session that is away.
   * With the session away or held by another instance, one whose message
   * is not given back at all (its client confirmed it), and with another
   * instance holding it, one whose message came back and went nowhere
   * (withdrawn) and was read by the instance it was written to, is kept for
   * that client's return (`keepAlone`); the others are dropped. A
   * close path, and an `unregister`'s hand-back of its custody and write
   * (Custody.handBack), only: the set of forwarded keys is made at the first
   * message forwarded. `leftBy`: how each session (by key) left the
   * connection, which says whether a control kept holds a memory broker's
   * idle exit (KeptControls.ts). A connection whose session left by `unregister` may
   * close after that same client instance registered again elsewhere: its
   * rejoin took none of this, so such a control goes to it (`keepAlone`).
   */
  giveBack(items: ReadonlyArray<OutboundItem>, leftBy: (key: string) => LeftBy): void {
    let forwarded: Set<string> | undefined
    let alone: Array<ControlFrame> | undefined
    for (let i = 0; i < items.length; i++) {
      const item = items[i]!
      if (isControl(item)) {
        if (forwarded !== undefined && forwarded.has(item.messageKey)) this.takeBack(item)
        else (alone ??= []).push(item)
      } else if (!isMessage(item)) this.ctx.output.undeliverable(item)
      else if (this.requeueForwarded(item)) (forwarded ??= new Set()).add(item.mail.recordKey)
    }
    if (alone !== undefined) this.keepAlone(alone, items, leftBy)
  }

  /**
   * Controls a session that ended by `unregister` handed back from its
   * connection's outbox or parked list (Custody.handBack,
   * OutputEnd.handOver), after `items`, everything that hand-back gave back
   * (its mail requeued already): each goes to its session's live
   * connection, as `takeBack` takes it; with that session away, it is
   * decided as a close's give-back decides a control given back alone
   * (`keepAlone`). A close path's, then: none is forwarded with its message
   * to a live connection, the session having just left.
   */
  controlsHandedBack(controls: ReadonlyArray<ControlFrame>, items: ReadonlyArray<OutboundItem>): void {
    let away: Array<ControlFrame> | undefined
    for (const control of controls) if (!this.takeBack(control)) (away ??= []).push(control)
    if (away !== undefined) this.keepAlone(away, items, () => "unregister")
  }

  /**
   * Controls given back without their message (`giveBack`): with their
   * session away, one whose message is not among `items` (its client
   * confirmed it, so it may have shown it) is kept for the client instance
   * it was written to (`ControlFrame.instance`, however long it waited
   * unconfirmed: its message's route goes after an hour, review revm M1),
   * for that instance's return (KeptControls.ts, helper ctlback) — if that
   * instance can register as itself again (`mayReturn`: not a base client's
   * instance other than the id's last known holder registered with nothing
   * known of it, nor, the id live in another group, any but that holder's
   * own; reviews revbe BE2, revbk BK1, BK2); kept when
   * its session left by `unregister`, it does not hold a memory broker's
   * idle exit (review revv V2). With that instance live again already — it
   * unregistered, then registered on another connection before this one
   * closed (review revv V1) — it goes to it now, as its return would have
   * taken it. With another instance live (a takeover: it never got the
   * message), it is not given to that one but kept all the same, for the
   * return of the instance that read it, as `keepRefused` keeps a parked
   * control refused there (before, it was dropped, and that instance never
   * learned of the cancel) — if that instance can ever register again
   * (`mayReturn`: it named itself; review revba BA1). So is one about a
   * message given back here that went nowhere, its sender having withdrawn
   * it, with another instance live, when the instance it was written to read
   * that message (`readBy`: `requeueForwarded`'s `dropWithdrawn` leaves it
   * owed to that client; review revba BA3). The rest are dropped: for a
   * short-lived session that ended; about a message given back here with
   * the session away (its fate is the mailbox's: `keepCancelled`), or with
   * another instance live and not read by this one; and one about a message
   * no client read, which an earlier give-back dropped never written
   * (`aboutUngiven`: a control that reached the connection after its
   * session's `unregister` had handed that message back; helper sim111).
   */
  private keepAlone(controls: ReadonlyArray<ControlFrame>, items: ReadonlyArray<OutboundItem>, leftBy: (key: string) => LeftBy): void {
    let returned: Map<string, OutboundMessage> | undefined
    const now = this.ctx.now()
    for (const control of controls) {
      if (this.port.isEnded(control.to)) continue
      returned ??= new Map(items.flatMap((item) => isMessage(item) ? [[item.mail.recordKey, item]] : []))
      const live = liveSession(this.ctx, control.to)
      const message = returned.get(control.messageKey)
      if (message !== undefined && (live === undefined || !this.readBy(control, message))) continue
      if (this.aboutUngiven(control)) continue
      if (live !== undefined && mayHold(control.instance, live)) this.ctx.output.forceEnqueue(live.peer, control)
      else if (this.port.mayReturn(control.to, control.instance)) {
        this.controls.keep(control, now, leftBy(control.to) === "close")
      }
    }
  }

  /**
   * A control parked at its sender's reader, refused by its session's closed
   * connection and not taken by its live one (`takeBack`): its message was
   * not given back at that close (withdrawn, it would have taken the
   * control out of the parked lists: `requeueForwarded`), so its client
   * confirmed it and may have shown it. Kept, as `keepAlone` keeps a control
   * given back alone, for the client instance it was written to
   * (`ControlFrame.instance`) — also while another instance holds the
   * session (`reachesLive` refused it there), for that instance's return —
   * unless its session ended, no client read its message (`aboutUngiven`),
   * or that instance is the live one (its route says it was not given the
   * message), or another instance holds the session and that one can never
   * register as itself again (`mayReturn`: a base client's instance, which
   * sent no `instanceId`; review revba BA1 — kept, it would hold the idle
   * exit for no one), or its session is away and no registration continues
   * that instance (`mayReturn`: a base client's instance that is not the
   * id's last known holder registered with nothing known of it, or any but
   * the instance holding the id in another group; reviews revbe BE2, revbk BK2). It holds a memory broker's
   * idle exit as one kept at a close does, unless its session left the connection that refused it by
   * `unregister` (`leftBy`; a client's orderly shutdown, review revv V2):
   * before, none held it (review revau AU3), and such a broker could exit
   * owing it while the mailbox's mail for the same session held it up.
   */
  private keepRefused(control: ControlFrame, live: Session | undefined, leftBy: LeftBy): void {
    if (this.port.isEnded(control.to) || this.aboutUngiven(control)) return
    if (live !== undefined && mayHold(control.instance, live)) return
    if (!this.port.mayReturn(control.to, control.instance)) return
    this.controls.keep(control, this.ctx.now(), leftBy === "close")
  }

  /**
   * Whether the client instance `control` was written to read `message`, its
   * message, given back (WithdrawnCopies.readersOf: this connection's
   * custody, or an earlier connection's mark): a control whose withdrawn
   * message came back and went nowhere is owed to that instance only —
   * another instance, such as one that had the message only in its outbox,
   * never got it (review revba BA3). A look-up, for controls on the close
   * path only.
   */
  private readBy(control: ControlFrame, message: OutboundMessage): boolean {
    const readers = this.withdrawn.readersOf(message)
    return readers !== undefined && readers.some((reader) => reader.receiverKey === control.to && reader.instance === control.instance)
  }

  /**
   * Whether `control` is about a message no client read: withdrawn on its
   * way, an earlier give-back dropped it never written (`requeueForwarded`:
   * `lostUnread`, Receipts.droppedUnread). Such a control goes nowhere: no
   * client of its session got the message (helper sim111: a cancel parked
   * at its sender's reader behind a full outbox reached the old connection
   * of a session whose `unregister` had handed the message back; given
   * back alone at the close, it was kept, and its instance's return got a
   * cancel of a message it never received). A look-up, for controls on the
   * close path only.
   */
  private aboutUngiven(control: ControlFrame): boolean {
    return this.routes.droppedUnread(control.senderKey, control.messageId)
  }

  /**
   * Whether `control` may go to `live`, its session's live connection: the
   * client instance there was given its message — its route (or record)
   * names that instance, moved on when the message was handed on there
   * (Receipts.handedOn) — or a takeover's custody hold there covers it
   * (the old close decides: CustodyHold.ts). With no route or record
   * naming an instance (gone, or dropped with the message), the instance
   * the control was written for (`ControlFrame.instance`). A look-up, for controls on the close path
   * only.
   */
  private reachesLive(control: ControlFrame, live: Session): boolean {
    const given = this.routes.givenMessageOf(control, live)
    if (given === true || this.ctx.output.holds.holdOf(live.peer, control) !== undefined) return true
    return given === undefined && mayHold(control.instance, live)
  }

  /**
   * A message withdrawn on its way that goes no further, its session live or its ask over: when no client
   * read it (never written), a control about it still parked at its sender's reader is dropped with it and
   * its route says it was dropped unread, so a control about it coming back alone reaches no one either
   * (`aboutUngiven`); when a client read it, a control for that client's instance stays, owed to it (review
   * revaq AQ1, AQ2), and one for another instance goes (`readBy`): that one never received the message — it
   * had it only unwritten, and an earlier instance read it — yet refused at its closed connection the
   * control was kept for its return (`keepRefused`, which cannot ask which instance read the message).
   */
  private dropWithdrawn(outbound: OutboundMessage): void {
    const { mail } = outbound
    if (this.withdrawn.readersOf(outbound) !== undefined) {
      this.ctx.output.dropParkedControls(outbound.to, mail.recordKey, (control) => this.readBy(control, outbound))
      return this.routes.lost(mail.senderKey, mail.message.id)
    }
    this.ctx.output.dropParkedControls(outbound.to, mail.recordKey)
    this.routes.lostUnread(mail.senderKey, mail.message.id)
  }

  /** `requeue`: true when the message went to its session's live connection. */
  private requeueForwarded(outbound: OutboundMessage): boolean {
    const { mail } = outbound
    // Withdrawn before a new send under its id, whose record forgot that (DeliveryRecords.withdrawnBeforeResend:
    // that message's fingerprint, received before that send): it goes silently, and touches nothing under its
    // record key — the mailbox's place and the route there are the new message's (review cpback: it replaced the
    // resend in the mailbox, and came back live as not withdrawn). Another message under the id is not it (revcc).
    // Under an id a second send reused, the key's route and record may be another message's: a withdrawal counts
    // only when it names this very message (DeliveryRecords.fateUnderReusedId; reviews revrec R1, R3, revchain D1,
    // D2). Named, it goes as above unless the key's withdrawal is its own (the route names its session).
    const reused = this.ctx.records.fateUnderReusedId(mail, outbound.to)
    if (reused === undefined) {
      if (this.ctx.records.withdrawnBeforeResend(mail.recordKey, mail.brokerReceivedAt, () => fingerprintOfMail(mail))) {
        return false
      }
    } else if (reused !== "live" && !this.routeWithdrawn(mail, outbound.to)) return false
    const now = this.ctx.now()
    // Cancelled or superseded by its sender on its way (Receipts.ts: the record says so, and the store forgot
    // it): not queued again, and not given to a client instance it was not given before the withdrawal.
    const withdrawn = reused === undefined ? this.withdrawnOnTheWay(mail) : reused !== "live"
    const live = liveSession(this.ctx, outbound.to)
    const isLive = live !== undefined
    // A short-lived session that ended by `unregister` will not come back for it.
    const ended = !isLive && this.port.isEnded(outbound.to)
    // An ask that is over goes no further: its recipient would be asked what nobody waits for. But one its
    // sender cancelled (which closes its edge) going back to the mailbox is kept like any cancelled message
    // for the client written it (WithdrawnCopies.keepCancelled, review revi I5).
    const stale = this.stale.isStale(mail, now)
    if (stale && (!withdrawn || isLive || ended)) {
      // Withdrawn, its sender answered already: it goes silently, never as expired (review revl L7), and so
      // does a control about it still parked, unless a client read it (review revaq AQ2: `dropWithdrawn`).
      if (withdrawn) this.dropWithdrawn(outbound)
      else this.stale.drop(mail)
      return false
    }
    if (isLive) {
      // A new instance never gets it (the cancel or supersede went to the one given it, or was refused);
      // the same one — its rejoin, or the connection it was handed on to — gets it with that control.
      if (withdrawn && !this.routes.given(mail, live)) {
        // Nor its control still parked at its sender's reader: that would reach the new instance, which never
        // had the message, whichever instance read it (review revaq AQ1). Taken out, it is kept for the
        // instance it was written to when that one read the message (`readBy`), as the control would be that
        // comes back with it (`keepAlone`): the message goes no further, so that client's only word of the
        // withdrawal is this control (review revba BA3).
        const parked = this.ctx.output.dropParkedControls(outbound.to, mail.recordKey)
        this.dropWithdrawn(outbound)
        for (const [recipient, control] of parked) {
          if (this.readBy(control, outbound)) this.keepRefused(control, live, recipient.leftBy(control.to))
        }
        return false
      }
      this.ctx.output.forceEnqueue(live.peer, outbound)
      this.routes.handedOn(mail, live)
      return true
    }
    if (ended) {
      // Withdrawn already, its sender answered: it goes silently, its record kept (review revi I2).
      if (withdrawn) this.routes.lost(mail.senderKey, mail.message.id)
      else this.port.failEnded(mail, outbound.to)
      return false
    }
    // Away while a takeover's custody hold still waits for the old connection's close (CustodyHold.ts): its
    // sender's older mail comes back at that close, so this waits on the hold, to go back after it.
    if (this.ctx.output.holds.keepWhileAway(outbound)) return false
    // The control that withdrew it is dropped with the recipient away, so the mailbox must not bring it.
    // Nor its route: a cancel again, answered from the record, must send the receiver back no control.
    // Unless it was cancelled and its client read it: kept for that client's return, with a cancel again.
    if (withdrawn) {
      // Its control for this session still parked at its sender's reader (behind a full outbox) shares the
      // message's fate, as one given back with it does: dropped with it, or made again with a kept copy
      // (review revao AO1, AO3, AO4). A scan of the parked lists, for a withdrawn message only.
      this.ctx.output.dropParkedControls(outbound.to, mail.recordKey)
      // A copy the mailbox's bounds push out at once leaves each reader its cancel alone, kept for its return as a
      // control given back without its message is (`keepAlone`; review revaq) — for a reader that can register as
      // itself again only (`mayReturn`; review revbe BE2).
      const keepFor = (control: ControlFrame) => {
        if (this.port.mayReturn(control.to, control.instance)) this.controls.keep(control, now, true)
      }
      const mayReturn = (reader: Reader) => this.port.mayReturn(reader.receiverKey, reader.instance)
      if (this.withdrawn.keepCancelled(outbound, now, mayReturn, keepFor)) return false
      // Its sender was answered already: silently, also an ask past its deadline — never `expired` after its
      // cancel or supersede, nor its record rewritten so (helper ctlback; review revl L7 above). The withdrawal's
      // record rewrite dropped its stored row. Read by no client (never written), the route says so: a control
      // about it still on its way (parked behind a full outbox) then reaches no one (`aboutUngiven`). Read only by
      // instances that can never register as themselves again, it goes as a copy kept for them would at its
      // expiry (`routes.lost`, MailDelivery.prune): nothing more is said to its sender (review revbk BK3).
      if (this.withdrawn.readersOf(outbound) === undefined) this.routes.lostUnread(mail.senderKey, mail.message.id)
      else this.routes.lost(mail.senderKey, mail.message.id)
      return false
    }
    const copy: Mail = { ...mail, queuedAt: now }
    // Not withdrawn, so a note under its mailbox key (its id, for its session) is an older cancelled copy's, which
    // this one replaces (a resend after that copy's record went): it goes with it, or this message would be handed on as that copy
    // (review revl L5, as `queue` does for I4). A size check when nothing is kept.
    this.withdrawn.take(mailKeyOf(copy))
    this.port.put(copy)
    // Read by its client, on this connection or an earlier one: the copy carries the mark (WithdrawnCopies.ts).
    const readers = this.withdrawn.readersOf(outbound)
    if (readers !== undefined) this.withdrawn.markRead(copy, readers)
    // Unless the bounds pushed it out at once: then its record says evicted, and a retry must hear so.
    if (this.port.isQueued(copy)) {
      // Only its own record, not a later message's under the id, delivered: a cancel names that one still, and a
      // retry of it is answered delivered (task cancel2). Give-back path only.
      this.ctx.records.rewrite(mail.senderKey, mail.message.id, QUEUED, undefined, mail.targetKey, () => fingerprintOfMail(mail))
      // Its stored row takes the new date, so a restart keeps this copy's deadline (StoreJournal.mailGivenBack).
      this.ctx.journal?.mailGivenBack(copy)
    }
    return false
  }

  /** Whether the key's route names `heldBy` and keeps a withdrawal: under a reused id, `mail`'s own. */
  private routeWithdrawn(mail: Mail, heldBy: string): boolean {
    const route = this.ctx.records.table.find(mail.senderKey, mail.message.id)
    return route !== undefined && route.withdrawal !== undefined && route.receiverKey === heldBy && this.withdrawnOnTheWay(mail)
  }

  /**
   * Whether `mail`'s sender cancelled or superseded it after it was handed
   * to a connection (its route or its replay record says so:
   * `cancel_message`, or a send that `supersedes` it;
   * DeliveryRecords.withdrawal), so it is not queued again.
   */
  private withdrawnOnTheWay(mail: Mail): boolean {
    return this.ctx.records.withdrawal(mail.senderKey, mail.message.id, this.ctx.now()) !== undefined
  }
}
