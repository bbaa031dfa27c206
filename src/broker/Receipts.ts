/**
 * Size: about 730 lines, past the ~400 guideline, near half of them this
 * header and the JSDoc: one concept, the receipt route and what travels
 * along it (receipts, a cancel, a supersede), each reading and moving the
 * same route records.
 *
 * Receipts and control (P70–P73). Every delivered message leaves a receipt
 * route — which session sent it to which — for an hour. Along it a
 * receiver's `message_receipt` is forwarded to the sender, a sender's
 * `cancel_message` becomes the receiver's `message_control` cancel, and a
 * `supersedes` send first tells the receiver the old message is superseded
 * (these two only while both sides are live). A `cancel_message` for mail
 * still in the mailbox removes it instead — unless a client read it before
 * it came back there (written, never confirmed): then the copy stays for
 * that client instance's return, with the cancel's control behind it
 * (MailDelivery.cancel, WithdrawnCopies.ts; review revd, helper mbctl). A cancel of a message this
 * sender cancelled already is answered `delivered` again (ours): its first
 * answer may have been lost with a connection or a broker crash, and a
 * retry must tell the sender the message's fate rather than "cannot be
 * cancelled" — and the receiver, told once, is not sent the control again.
 * Nor is a message its sender superseded cancelled as well (`withdrawnBy`,
 * ours): its fate is settled, so the cancel is answered "cannot be
 * cancelled", with no control and the record left superseded; and a
 * `supersedes` naming a message its sender cancelled or superseded already
 * is refused (`E_SUPERSEDE_TARGET`, the reason saying which), though its
 * route, which outlives both, still matches — judged before the route, so a
 * restart that took the route still gets that reason (review revd D4).
 * That fate is kept on the route too (`OutboundRecord.withdrawal`, the
 * outcome object the record was rewritten to, so no allocation), not only
 * in the replay record, which the route can outlive: the records' bounds
 * push a flooding sender's oldest out, and a record ages from the send, a
 * route from the delivery (review revd D1; DeliveryRecords.withdrawal, also
 * read where a closing connection gives a message back:
 * MailReturns.withdrawnOnTheWay). A `replace`-staged message whose target
 * its sender cancelled or superseded while it waited (C-DLV-6 acknowledged
 * it queued) is not refused when its window closes but delivered alone: no
 * control, the record left as it is (review revd D3). A supersede of an
 * ask withdraws it as a cancel does (`forget`: its edge closes; review
 * revd D5). A durable broker that restarted has replay records but no
 * routes (they are not stored): a cancel of a message its record says was
 * delivered goes to the live session of the id delivered it, its target's
 * or the one its outcome names (`recordedRoute`), as it went before the
 * restart, and a `supersedes` send may name it to that session. A record
 * restored at startup (`OutboundRecord.restored`, a bit of its `parts`)
 * names no instance; a message delivered in this run had a route naming the
 * client instance given it, which its record keeps when the route goes (its
 * hour, or MAX_ROUTES newer routes pushed it out while its record is kept):
 * followed only to that instance (review revg G3), never to a session
 * registered since with nothing known of its id — for any other a cancel is
 * answered "cannot be cancelled", as for a route whose instance is gone,
 * and a supersede naming it is refused (helper rrec: otherwise another
 * client registering the id once ClientInstances' bound forgot its holder
 * was sent the cancel). A route dropped because its receiver never got the
 * message (`dropRoute`) names no instance. And not
 * if another client instance took that session over, or registered it
 * after its holder left, since this broker started: that one cannot hold
 * the message: only a session registered with nothing known of its id
 * (`Session.mayBeBeforeStart`) may be the client given it before the
 * restart (`mayHold(UNKNOWN_INSTANCE, ...)`). Nor for an ask
 * that is over (withdrawn, answered or expired; helper ctlsup): its record
 * says delivered as its sender was told, also when its copy came back
 * unread and was dropped as stale (MailDelivery.ts), so it does not say the
 * session back has it, and no route says which client instance was given
 * it — a cancel of it is answered "cannot be cancelled", with no control,
 * and a supersede naming it is refused. A
 * cancel's control reveals the cancel as the sender's answer does, so on a
 * durable broker both wait for its commit (StoreJournal.ts). A supersede's
 * control does not wait for a `received-v1` receiver: its new message goes
 * at once right behind it (StoreJournal.markDelivery), and the control must
 * come first; a crash before the commit leaves the old message's record
 * saying delivered while the receiver dropped it, which hides no loss — it
 * was delivered, the new message that replaces it was written with the
 * control, and its sender's retry of the new one follows the record to the
 * receiver again (docs/protocol.md). A base receiver's waits with its new
 * message (its outbox is held for the commit). A message
 * written to a receiver whose connection closed before confirming it, given
 * back and then dropped by the mailbox (evicted, expired), loses its route
 * (`dropRoute`, called from MailDelivery): its receiver never got it and its
 * sender was told it expired, so a cancel of it is answered as for mail the
 * mailbox dropped ("cannot be cancelled") and sends the receiver no control,
 * and a supersede naming it is refused. So does one its sender cancelled or
 * superseded on its way and that came back so (not queued again): a cancel
 * again is answered from its record, with no control. A control frame is queued as a
 * ControlFrame, which Output orders behind the message it is about
 * wherever that message still waits for the receiver (a takeover's custody
 * hold, its parked mailbox flush).
 *
 * A route is the route part of the message's outbound record
 * (OutboundRecord.ts), beside its replay record: one object per message,
 * found by the message id the message already carries, so the per-message
 * path builds no key string and keeps no object of its own for the route
 * (docs/performance.md). Ids are per sender: a sender's cancel or supersede
 * takes only its own route (a colliding id of another session never diverts
 * it), and a receipt, which names only the message id, goes to every
 * sender of a message with that id to the receiver that sent it.
 *
 * A route names both sides by their registry keys (scope and session id;
 * one string per session, since ids may not hold the control characters the
 * key is joined with: protocol/limits.ts), not by one registration of them:
 * it outlives either side's reconnect, so a
 * receipt the receiver's client kept while it was away (KeptReceipts.ts), or
 * one for a message sent before the sender's reconnect, still reaches the
 * sender (ours; pi-intercom drops the route when either side leaves,
 * docs/protocol.md). A session's key is what the rest of the broker already
 * takes for the session across registrations — its replay records, its mail,
 * a takeover (P16) — so whoever registers it is that session here too. A
 * receipt for a sender that is away is held for its return (HeldReceipts.ts);
 * a cancel or supersede needs both sides live, as it is answered at once.
 *
 * A route also records the client instance given its message
 * (`OutboundRecord.receiverInstance`, `Session.instance`): a takeover by
 * another client is a new instance, which never got the messages routed to
 * the old one, and cannot act on a cancel or supersede of them (review
 * ctl2), and so is another client registering the id after its holder
 * left (the client instances that held an id are kept:
 * ClientInstances.ts, reviews revrc P4, revc L1, L2). A cancel or supersede goes to the
 * session's connection only when that instance was given the message — the route moves on when the
 * message is handed on there (`handedOn`). Otherwise a cancel is answered
 * "cannot be cancelled" (the message was delivered, to an instance that is
 * gone), and a supersede delivers its new message alone. One exception, a
 * cancel of a message still in the custody (or write) of an old connection
 * a takeover's custody hold waits for: that client may yet confirm it as it
 * closes, or not, and only the close tells whether the new instance gets it
 * (review revb D1). So the cancel is put off until the hold ends
 * (`CustodyHolds.deferCancel`) and then handled anew (`cancelAgain`):
 * its answer, control, record rewrite and commit all wait; given back to
 * the new connection, the message is followed by the cancel (answered
 * `delivered`); confirmed by the old client, the cancel is answered "cannot
 * be cancelled"; given back to the mailbox (the session away), it is
 * cancelled there. A supersede does not wait (its new message goes now): it
 * is recorded and its new message delivered alone, and the old message,
 * given back at that close, is withdrawn on its way — so the new instance
 * gets the new message alone either way. A withdrawn message goes back
 * only to the instance its route names (`given`, MailReturns.requeue).
 */
import { decodeClientFrame, isFrameDecodeError } from "../protocol/decode.ts"
import { DeliveryCode, Reason } from "../protocol/delivery.ts"
import { ControlFrame } from "./ControlFrame.ts"
import type { Output } from "./Output.ts"
import { type Outcome, recordKeyOf } from "./DeliveryRecords.ts"
import * as Encode from "./encode.ts"
import { HeldReceipts } from "./HeldReceipts.ts"
import type { MailDelivery } from "./MailDelivery.ts"
import { carriesMessage, mailAmong, parksMessage } from "./OutboundItems.ts"
import { OutboundRecord } from "./OutboundRecord.ts"
import type { OutboundRecords } from "./OutboundRecords.ts"
import type { Mail, Peer } from "./Peer.ts"
import type { RegistrationHooks } from "./Registration.ts"
import { mayHold, type Session, type SessionInstance, UNKNOWN_INSTANCE } from "./Registry.ts"
import type { FrameHandlers, RouterContext } from "./RouterContext.ts"
import type { SendStage } from "./SendStage.ts"

const HOUR = 3_600_000

/** The outcome of a delivered message its sender cancelled (`cancel_message`). */
const CANCELLED: Outcome = { ok: false, code: DeliveryCode.DeliveryCancelled, reason: Reason.cancelled, retryable: false }

/** The outcome of a message its sender cancelled while the mailbox held it (MailDelivery.cancel writes its record). */
const CANCELLED_QUEUED: Outcome = {
  ok: false,
  code: DeliveryCode.DeliveryCancelled,
  reason: Reason.cancelledQueued,
  retryable: false
}

/**
 * Whether the message that `control` (its sender's cancel or supersede, for
 * `receiver`'s session) is about may still wait for `receiver`'s connection
 * unwritten or unconfirmed — so that a close or an `unregister` could yet
 * give it back: in `receiver`'s outbox, its write in progress or the part of
 * it never taken, its custody (written, unconfirmed), its own parked list
 * (also at its close, when no drainer offers it any more), a takeover's hold
 * it holds (CustodyHolds.mayGiveBack), or parked anywhere else
 * (`Output.parksWithdrawn`: the batch being handled — a send and its cancel
 * or supersede in one batch — and every reader's parked list — the
 * sender's, an older connection of the sender's session still open after a
 * takeover, a withheld return's reader; review revay AY1, AY2). That very
 * message, found by its record key (review revaw AW1: other output waiting
 * there, an unrelated message parked, says nothing about it): a scan of
 * each of those lists that is not empty — one test per item: the
 * receiver's output, so at most about as much as writing that outbox, and,
 * only while the sender has a message parked somewhere, every reader's
 * parked list (`parksWithdrawn`'s cost). Read on the cancel and supersede
 * paths only, never on the send path.
 */
const mayStillWait = (receiver: Peer, control: ControlFrame, output: Output): boolean => {
  const key = control.messageKey
  return mailAmong(receiver.outbox, key, receiver.outbox.length) !== undefined ||
    carriesMessage(receiver.writer.inFlight?.returnable, key) || carriesMessage(receiver.untakenRest, key) ||
    receiver.custody?.holdsMessage(key) === true || parksMessage(receiver.parked, key) ||
    output.holds.mayGiveBack(receiver, control) || output.parksWithdrawn(key, control.senderKey)
}

/** Receipt routes kept at most, overall; past it the oldest go first. */
export const MAX_ROUTES = 65_536

/** How long a withdrawal outlives its route (OutboundRecords.ageRoute): a day. */
const WITHDRAWAL_KEPT_MS = 24 * HOUR


/** The receipts concern: receipt routes, `message_receipt`, `cancel_message`, and the supersede stage. */
export class Receipts {
  private readonly ctx: RouterContext
  private readonly mail: MailDelivery
  private readonly withdrawStaged: (senderKey: string, messageId: string) => boolean
  private readonly forget: (messageKey: string) => void
  private readonly liveHolder: (scopeKey: string, id: string) => Session | undefined
  private readonly askOpen: (messageKey: string, now: number) => boolean
  /** The outbound records, whose route part this class keeps: an hour, at most MAX_ROUTES. */
  private readonly routes: OutboundRecords
  /** Receipts along a route whose sender was away, until it registers again. */
  private readonly held = new HeldReceipts()

  /**
   * @param forget drops what other concerns keep for a cancelled message (its ask edge, or the ask as withdrawn).
   * @param withdrawStaged takes a sender's staged `replace` message out (ReplaceStaging.withdraw); true when it did.
   * @param liveHolder the live session holding an id in a scope, in whichever group (Groups.liveHolder).
   * @param askOpen whether the ask of a record key is still open at a time (Asks.isOpen).
   */
  constructor(
    ctx: RouterContext,
    mail: MailDelivery,
    forget: (messageKey: string) => void,
    withdrawStaged: (senderKey: string, messageId: string) => boolean,
    liveHolder: (scopeKey: string, id: string) => Session | undefined,
    askOpen: (messageKey: string, now: number) => boolean
  ) {
    this.ctx = ctx
    this.mail = mail
    this.forget = forget
    this.withdrawStaged = withdrawStaged
    this.liveHolder = liveHolder
    this.askOpen = askOpen
    this.routes = ctx.records.table
  }

  readonly frames: FrameHandlers = {
    message_receipt: { handle: (peer, frame) => this.onReceipt(peer, frame) },
    cancel_message: { handle: (peer, frame) => this.onCancel(peer, frame) }
  }

  /** A sender that registers again gets the receipts held while it was away. */
  readonly hooks: RegistrationHooks = {
    registered: (session, _previous, now) => {
      for (const frame of this.held.take(session.key, now)) this.ctx.output.enqueue(session.peer, frame)
    }
  }

  /**
   * P72: a `supersedes` must name this sender's earlier message to this
   * (live) receiver, by its route or its record (`recordedRoute`), that its
   * sender has not cancelled or superseded already (`withdrawnBy`).
   */
  readonly supersedes: SendStage = {
    check: (attempt) => {
      const supersedes = attempt.message.supersedes
      if (supersedes === undefined) return undefined
      if (attempt.target === undefined) {
        return { code: DeliveryCode.SupersedeTarget, reason: Reason.supersedeDisconnected }
      }
      // Its fate settled already by this sender (a route outlives a cancel or supersede): a second control or a
      // rewritten record would tell its receiver, and a retry, another fate. Judged before the route, which a
      // restart or the routes' bound may have taken (`recordedRoute` turns a settled record away), so the
      // refusal says which. A staged message checked again as its window closes was accepted before that: it
      // goes alone (`beforeDelivery`).
      const settled = this.withdrawnBy(attempt.sender, supersedes, attempt.now)
      if (settled !== undefined && !settled.ok) {
        if (attempt.staged) return undefined
        const reason = settled.code === DeliveryCode.DeliveryCancelled
          ? Reason.supersedeCancelled
          : Reason.supersedeSuperseded(settled.reason)
        return { code: DeliveryCode.SupersedeTarget, reason }
      }
      const route = this.liveRoute(attempt.sender.key, supersedes, attempt.now) ??
        this.recordedRoute(attempt.sender, supersedes, attempt.now)
      if (route === undefined || route.sender !== attempt.sender || route.receiver !== attempt.target) {
        return { code: DeliveryCode.SupersedeTarget, reason: Reason.supersedeNoRoute }
      }
      return undefined
    },
    // Settled meanwhile, a staged message's `supersedes` goes too: with no control before it, the field would tell
    // a receiver whose control was dropped (a restart) to withdraw the old message again, under another fate (bt1).
    supersedesSettled: (attempt) =>
      attempt.staged && attempt.message.supersedes !== undefined &&
      this.withdrawnBy(attempt.sender, attempt.message.supersedes, attempt.now) !== undefined,
    // The receiver learns of the supersede before the new message.
    beforeDelivery: (attempt, target) => {
      const { message, sender } = attempt
      if (message.supersedes === undefined) return
      // Settled already (a `replace`-staged message whose sender cancelled or superseded its target while it
      // waited: the check let it through): the new message goes alone — no control, the record left as it is, and
      // no `supersedes` (`supersedesSettled`).
      if (this.withdrawnBy(sender, message.supersedes, attempt.now) !== undefined) return
      // Only to the client instance given the superseded message (a takeover's new one cannot act on it; it
      // gets the new message alone, and the old one never: MailReturns.requeue).
      // With no route (a durable broker restarted), the one its replay record implies (`recordedRoute`,
      // which the check above passed).
      const route = this.routeOf(sender.key, message.supersedes)
      const recorded = route === undefined ? this.recordedRoute(sender, message.supersedes, attempt.now) : undefined
      // Kept behind the superseded message wherever that still waits for the receiver (ControlFrame.ts).
      const text = Encode.controlFrame(sender.infoJson, {
        messageId: message.supersedes,
        action: "supersede",
        supersededBy: message.id,
        timestamp: attempt.stamp
      })
      const messageKey = recordKeyOf(sender.key, message.supersedes)
      const control = new ControlFrame(text, target.key, sender.key, sender.presentSince, messageKey, target.instance)
      const waiting = mayStillWait(target.peer, control, this.ctx.output)
      // Never by a takeover's custody hold (review revb D1): whether the new instance gets the superseded
      // message is known only at the old close, while the new message goes now. Not sent, the old one given
      // back at that close is withdrawn on its way, so the new instance gets the new message alone either way.
      const told = route !== undefined ? mayHold(route.receiverInstance, target) : recorded?.receiver === target
      if (told) this.ctx.output.enqueue(target.peer, control)
      const superseded: Outcome = {
        ok: false,
        code: DeliveryCode.DeliverySuperseded,
        reason: Reason.superseded(message.id),
        retryable: false
      }
      // A copy of it waiting in the mailbox for another session of its identity (given back by P49's other holder,
      // told now) goes with it: only the copy that reader read, told by the mark on that mail object, never a
      // later message under a reused id, which must not be lost (reviews revcc item 1, revcg CG1) — nor its stored
      // row: while mail under the key stays in the mailbox, the rewrite leaves its row (`mailStays`).
      const copyLeft = told && this.mail.superseded(messageKey, target)
      this.ctx.records.rewrite(sender.key, message.supersedes, superseded, !copyLeft && this.mail.holds(messageKey))
      // Kept with the route too, which may outlive the record (`withdrawnBy`) — or, with the route gone (the
      // check followed the replay record), with that record (review revau AU1) — past both while the message
      // may still wait unwritten (`keepWithdrawal`).
      this.keepWithdrawal(route ?? this.routes.find(sender.key, message.supersedes), superseded, waiting, attempt.now, target.key)
      // An ask superseded is withdrawn by its asker, as a cancelled one is: its edge closes (the receiver may
      // ask back; a reply to it is refused as to any ask that is over).
      if ((route ?? this.routes.find(sender.key, message.supersedes))?.expectsReply === true) this.forget(messageKey)
    },
    delivered: (attempt, mail, target) => this.addRoute(mail, attempt.sender.key, target, attempt.now, attempt.record)
  }

  /**
   * Records who may exchange receipts about `mail`, sent by the session
   * `senderKey`, in `record` when the send pipeline made it (no lookup).
   * Also for mail flushed from the mailbox, whether or not its sender is
   * registered now: the route names the client instance the flush gave it
   * to, which a cancel, a withdrawn copy (`givenTo`) and an answered ask
   * (AnsweredAsks.ts) read — left naming an instance the mail was written to
   * before and given back from, they would follow it to a client that never
   * had it (review revp P1). A receipt along it for an away sender is held
   * for its return, as for any route (HeldReceipts' bounds), and the route
   * counts against MAX_ROUTES and its hour as any does.
   */
  addRoute(mail: Mail, senderKey: string, receiver: Session, now: number, record?: OutboundRecord): void {
    const routes = this.routes
    const id = mail.message.id
    const claimed = routes.claim(record ?? routes.find(senderKey, id) ?? new OutboundRecord(senderKey, id, undefined))
    routes.keepRoute(claimed, receiver.key, receiver.instance, now)
    // Over the bound: the routes added longest ago go first.
    while (routes.routes > MAX_ROUTES) {
      const oldest = routes.oldestRoute
      if (oldest === undefined) break
      routes.ageRoute(oldest, now)
    }
  }

  /**
   * `mail`, routed to an earlier connection of `receiver`'s session, was
   * handed on to `receiver`'s connection (a takeover's hand-over, a closed
   * connection's give-back: MailReturns.requeue): its route records that
   * client instance as the one given it, so its sender's cancel or
   * supersede reaches it there. So does its record when newer routes pushed
   * the route out (MAX_ROUTES): `recordedRoute` follows the record to the
   * instance it names, and a cancel was refused while the instance now
   * holding the message was live. Not a record that names none (restored,
   * or dropped as never received). A look-up, on those paths only.
   */
  handedOn(mail: Mail, receiver: Session): void {
    const found = this.routes.find(mail.senderKey, mail.message.id)
    if (found === undefined || found.receiverKey !== receiver.key) return
    if (found.routed || found.receiverInstance !== UNKNOWN_INSTANCE) found.receiverInstance = receiver.instance
  }

  /**
   * Whether `receiver`'s client instance was given `mail`: a message its
   * sender cancelled or superseded on its way goes back only to that
   * instance, never to a new one (MailReturns.requeue). Its route says so;
   * once newer routes pushed the route out, its record does, naming that
   * very instance (as `givenTo` and `handedOn` follow it: review revk K1).
   * False when neither names one.
   */
  given(mail: Mail, receiver: Session): boolean {
    return this.givenBy(mail.senderKey, mail.message.id, receiver) === true
  }

  /**
   * Whether the message `control` is about went to `receiver`'s client
   * instance, as its route — or, once that is gone, its record — names it
   * (`given`); undefined when neither names an instance (none left, or its
   * route dropped with the message: `dropRoute`). Read on the close path
   * for a control given back alone (MailReturns.takeBack).
   */
  givenMessageOf(control: ControlFrame, receiver: Session): boolean | undefined {
    return this.givenBy(control.senderKey, control.messageId, receiver)
  }

  /** `given` of `senderKey`'s message `messageId`; undefined when no route or record names an instance. */
  private givenBy(senderKey: string, messageId: string, receiver: Session): boolean | undefined {
    const found = this.routes.find(senderKey, messageId)
    if (found === undefined) return undefined
    if (found.routed) return found.receiverKey === receiver.key && mayHold(found.receiverInstance, receiver)
    if (found.receiverInstance === UNKNOWN_INSTANCE) return undefined
    return found.receiverKey === receiver.key && found.receiverInstance === receiver.instance
  }

  /**
   * The session key and client instance a write gave `senderKey`'s message
   * `messageId` to, as its route names them — or, once the route aged or was
   * pushed out, its record (review revg G3). Undefined when no instance was
   * given it: never written, its route dropped as never got (`dropRoute`),
   * or its record restored from the store. Read on the cancel path only
   * (MailDelivery.cancel, WithdrawnCopies.ts).
   */
  givenTo(senderKey: string, messageId: string): { readonly receiverKey: string; readonly receiverInstance: SessionInstance } | undefined {
    const found = this.routes.find(senderKey, messageId)
    return found === undefined || found.receiverInstance === UNKNOWN_INSTANCE ? undefined : found
  }

  /**
   * Whether `senderKey`'s route for its message `messageId` was dropped in
   * this run with that message, which no client instance read
   * (`dropRoute` with `unread`: withdrawn on its way and given back never
   * written; OutboundRecord.droppedUnread). A control about it reaches no
   * one (MailReturns.takeBack, `keepAlone`; helper sim111). False when no
   * record is left to say so.
   */
  droppedUnread(senderKey: string, messageId: string): boolean {
    return this.routes.find(senderKey, messageId)?.droppedUnread === true
  }

  /**
   * Drops `senderKey`'s route for its message `messageId`, if it has one:
   * the mailbox dropped that message (expired, evicted, or withdrawn by its
   * sender on its way) after a write its receiver never confirmed gave it
   * back, so the receiver never got it and its fate is settled; a cancel or
   * supersede of it must not reach the receiver (MailRoutes.lost).
   * `unread`: no client read it either (never written: MailRoutes.lostUnread),
   * which the record keeps (`droppedUnread`).
   */
  dropRoute(senderKey: string, messageId: string, unread = false): void {
    const found = this.routes.find(senderKey, messageId)
    if (found === undefined || !(found.routed || found.withdrawalKept)) return
    // Its receiver never got it: no instance was given it, so `recordedRoute` does not follow the record.
    found.receiverInstance = UNKNOWN_INSTANCE
    // Its route aged out before this give-back, its withdrawal kept (`prune`): that stays, marked so.
    if (found.withdrawalKept) return this.routes.settleKept(found, unread)
    this.routes.dropRoute(found, unread)
  }

  /**
   * Routes past their hour go; one that keeps its sender's withdrawal
   * leaves it on the withdrawals' list (OutboundRecords.ageRoute, as the
   * MAX_ROUTES bound does), where it stays a day, at most
   * MAX_KEPT_WITHDRAWALS of them (KeptWithdrawals.ts: past it the oldest of
   * the receiver holding the most goes, as a new one joins, not here): its message may
   * still wait unwritten in an outbox or a parked list, and must not be
   * delivered after its withdrawal when it is given back (review revao AO2).
   */
  prune(now: number): void {
    const routes = this.routes
    const cutoff = now - HOUR - 1
    for (let oldest = routes.oldestRoute; oldest !== undefined && oldest.routedAt <= cutoff; oldest = routes.oldestRoute) {
      routes.ageRoute(oldest, now)
    }
    routes.pruneKept(now - WITHDRAWAL_KEPT_MS - 1, now)
    this.held.expire(now)
  }

  /** `senderKey`'s route for its message `messageId`, if it has one. */
  private routeOf(senderKey: string, messageId: string): OutboundRecord | undefined {
    const record = this.routes.find(senderKey, messageId)
    return record !== undefined && record.routed ? record : undefined
  }

  /**
   * The two live sessions of `senderKey`'s route for `messageId`, if it is
   * under an hour old and both sides are registered now.
   */
  private liveRoute(
    senderKey: string,
    messageId: string,
    now: number
  ): { readonly sender: Session; readonly receiver: Session } | undefined {
    const route = this.routeOf(senderKey, messageId)
    return route === undefined ? undefined : this.sessionsOf(route, now)
  }

  /** The sessions now registered under `route`'s two keys, if it is under an hour old and both are. */
  private sessionsOf(
    route: OutboundRecord,
    now: number
  ): { readonly sender: Session; readonly receiver: Session } | undefined {
    if (!route.routed || now - route.routedAt > HOUR) return undefined
    const sender = this.ctx.registry.byKey.get(route.senderKey)
    const receiver = this.ctx.registry.byKey.get(route.receiverKey)
    if (sender === undefined || receiver === undefined) return undefined
    return { sender, receiver }
  }

  /**
   * For a message whose route is gone — a durable broker restarted from its
   * store, which keeps replay records but not routes (its record restored at
   * startup, `OutboundRecord.restored`), or a route of this run that aged or
   * was pushed out, whose record keeps the instance it named — the route its
   * replay record implies: the message was delivered
   * (`socket_delivered`), to the session its outcome names (P49's other
   * holder) or else to its target, and that session is live now, in the
   * sender's scope (ids are one session per scope, whatever its group) —
   * unless it is an ask that is over (`askOpen` false): the record of one
   * whose copy came back unread and was dropped still says delivered. So a
   * cancel or supersede after a restart is carried out as before it (but for
   * such an ask, which only a route could tie to the client given it); while
   * the receiver is away it cannot be, as before. A message whose route is kept
   * is judged by that route alone.
   */
  private recordedRoute(
    sender: Session,
    messageId: string,
    now: number
  ): { readonly sender: Session; readonly receiver: Session } | undefined {
    if (this.routeOf(sender.key, messageId) !== undefined) return undefined
    // A record from before the restart names no instance; one kept in this run had a route naming the
    // client instance given it, which the record keeps when the route goes (its hour, the routes' bound):
    // followed only to that instance (review revg G3), never to one registered since with nothing known.
    const found = this.routes.find(sender.key, messageId)
    if (found === undefined || (!found.restored && found.receiverInstance === UNKNOWN_INSTANCE)) return undefined
    const record = this.ctx.records.get(sender.key, messageId, now)
    const outcome = record?.outcome
    if (record === undefined || outcome === undefined || !outcome.ok || outcome.delivery !== "socket_delivered") return undefined
    // An ask that is over (withdrawn, answered, expired; not one that is also a reply, whose copy is kept): its
    // record says delivered as its sender was told, also when its copy came back unread and was dropped
    // (StaleAsks.drop), so it does not say the receiver has it.
    if (record.expectsReply === true && record.replyTo === undefined && !this.askOpen(recordKeyOf(sender.key, messageId), now)) {
      return undefined
    }
    const receiver = this.liveHolder(sender.scopeKey, outcome.receiverId ?? record.targetId)
    if (receiver === undefined || receiver === sender || this.ctx.registry.byKey.get(receiver.key) !== receiver) return undefined
    // Taken over, or registered after its holder left, by another client instance since this broker started:
    // not the one given the message. Of a restored record only one registered with nothing known of the id
    // may be that client; of this run's, only the instance its route named.
    if (found.restored ? !mayHold(UNKNOWN_INSTANCE, receiver) : receiver.instance !== found.receiverInstance) return undefined
    return { sender, receiver }
  }

  /**
   * How `sender` settled its message `messageId` already, if it did: the
   * outcome that says it cancelled it (`DeliveryCancelled`) or superseded it
   * (`DeliverySuperseded`, the reason naming the new message), as its route
   * keeps it (`OutboundRecord.withdrawal`: the route can outlive the replay
   * record) or else its replay record (DeliveryRecords.withdrawal). Read on
   * the cancel and supersede paths only.
   */
  private withdrawnBy(sender: Session, messageId: string, now: number): Outcome | undefined {
    return this.ctx.records.withdrawal(sender.key, messageId, now)
  }

  private onReceipt(peer: Peer, raw: unknown): void {
    const frame = decodeClientFrame.message_receipt(raw)
    if (isFrameDecodeError(frame)) return this.ctx.protocolError(peer, frame.message)
    const session = peer.session
    if (session === undefined) return
    let candidate = this.routes.firstWithId(frame.receipt.messageId)
    if (candidate === undefined) return
    const now = this.ctx.now()
    const receipt = Encode.receiptFrame(session.infoJson, frame.receipt)
    while (candidate !== undefined) {
      const next = this.routes.nextWithId(candidate)
      this.forward(candidate, session, receipt, now)
      candidate = next
    }
  }

  /**
   * Forwards `receipt` from `receiver` along `route` if it is the receiver's
   * and under an hour old: to its sender now, or, while no session holds
   * the sender's key, when one registers it again.
   */
  private forward(route: OutboundRecord, receiver: Session, receipt: string, now: number): void {
    if (!route.routed || route.receiverKey !== receiver.key || now - route.routedAt > HOUR) return
    const registry = this.ctx.registry
    if (registry.byKey.get(receiver.key) !== receiver) return
    const sender = registry.byKey.get(route.senderKey)
    if (sender !== undefined) this.ctx.output.enqueue(sender.peer, receipt)
    else this.held.hold(route.senderKey, receipt, now)
  }

  private onCancel(peer: Peer, raw: unknown): void {
    const frame = decodeClientFrame.cancel_message(raw)
    if (isFrameDecodeError(frame)) return this.ctx.protocolError(peer, frame.message)
    const session = peer.session
    if (session === undefined) return this.answer(peer, frame.messageId, false)
    this.cancel(session, frame.messageId, peer)
  }

  /**
   * Keeps `withdrawal` (a cancel's, a supersede's) on `record`, the route or,
   * with that gone, the replay record of the withdrawn message: and, while
   * that message may still wait unwritten or unconfirmed (`waiting`:
   * `mayStillWait`: that very message), past the route and the
   * record (OutboundRecords.keepWithdrawal: the withdrawals' list, a day),
   * so whoever gives it back finds it withdrawn (review revau AU1, AU2),
   * in the share of `receiverKey`, the session it was for (review revay).
   * Cancel and supersede paths only.
   */
  private keepWithdrawal(
    record: OutboundRecord | undefined,
    withdrawal: Outcome,
    waiting: boolean,
    now: number,
    receiverKey: string
  ): void {
    if (record === undefined) return
    record.withdrawal = withdrawal
    if (waiting) this.routes.keepWithdrawal(record, now, receiverKey)
  }

  /**
   * A cancel put off behind a takeover's custody hold (`CustodyHolds.deferCancel`)
   * is handled anew now that the hold ended, for whichever registration
   * holds `sender`'s session now (the sender asked for it, and the broker
   * took the frame): answered only on the connection that sent it, if that
   * still holds the session — an answer to a connection that is gone is lost
   * as any is, and a retry is answered from the record. With the sender's
   * session away it is dropped, as a cancel from an away sender would be
   * refused (it needs both sides registered): the message stays delivered.
   */
  private cancelAgain(sender: Session, messageId: string): void {
    const current = this.ctx.registry.byKey.get(sender.key)
    if (current === undefined) return
    this.cancel(current, messageId, current === sender && sender.peer.session === sender ? sender.peer : undefined)
  }

  /** Answers a cancel on `to`, the connection that sent it, if there is one to answer (`cancelAgain`). */
  private answer(to: Peer | undefined, messageId: string, delivered: boolean): void {
    if (to === undefined) return
    const { output } = this.ctx
    output.enqueue(to, delivered ? Encode.bareDeliveredFrame(messageId) : Encode.bareDeliveryFailedFrame(messageId, Reason.cannotCancel))
  }

  /** `session`'s cancel of its message `messageId`, answered on `answerTo` (undefined: `cancelAgain` answers no one). */
  private cancel(session: Session, messageId: string, answerTo: Peer | undefined): void {
    const { output, records } = this.ctx
    const key = recordKeyOf(session.key, messageId)
    const stamp = this.ctx.stamps.next()
    // Kept with a copy a client read before it came back to the mailbox, for that client (WithdrawnCopies.ts).
    const control = (receiverKey: string, instance: SessionInstance) =>
      new ControlFrame(
        Encode.controlFrame(session.infoJson, { messageId, action: "cancel", timestamp: stamp }),
        receiverKey,
        session.key,
        session.presentSince,
        key,
        instance
      )
    const queued = this.mail.cancel(session, key, control)
    if (queued !== "none") {
      // A copy given out again and back (its reader dropped) is kept with a cancel made again: stamped as this one.
      if (queued === "copy") records.noteCancel(session.key, messageId, stamp)
      this.forget(key)
      // Given back to the mailbox after a write (its route kept): its route keeps the fate too (`withdrawnBy`),
      // past its hour while a copy a client read stays (review revao AO2) — not when the mail was deleted
      // outright: nothing of it is left to give back (review revaw AW2).
      const route = this.routeOf(session.key, messageId)
      if (route !== undefined) {
        route.withdrawal = CANCELLED_QUEUED
        if (queued === "copy") this.routes.keepWithdrawal(route, this.ctx.now())
      }
      if (answerTo !== undefined) this.ctx.journal?.mark(answerTo)
      return this.answer(answerTo, messageId, true)
    }
    // Staged in replace mode (C-DLV-6 reports it queued): cancelled there, before its window closes.
    if (this.withdrawStaged(session.key, messageId)) {
      if (answerTo !== undefined) this.ctx.journal?.mark(answerTo)
      return this.answer(answerTo, messageId, true)
    }
    const now = this.ctx.now()
    // Cancelled already, by this sender: a cancel again (its first answer lost with a connection, or with a
    // broker that crashed after storing it) is answered as the first was, so the sender learns the fate —
    // and the receiver, told once, is not sent the control again.
    // Superseded already, by this sender: its receiver was told so, and its record says so; it cannot be
    // cancelled as well (no control, no rewrite: a resend still hears superseded), as mail whose fate the
    // mailbox settled cannot. The answer reveals the supersede, so it waits for its commit too.
    const settled = this.withdrawnBy(session, messageId, now)
    if (settled !== undefined) {
      if (answerTo !== undefined) this.ctx.journal?.mark(answerTo)
      return this.answer(answerTo, messageId, !settled.ok && settled.code === DeliveryCode.DeliveryCancelled)
    }
    const route = this.routeOf(session.key, messageId)
    const live = route === undefined ? this.recordedRoute(session, messageId, now) : this.sessionsOf(route, now)
    if (live !== undefined && live.sender === session) {
      // Kept behind the cancelled message wherever that still waits for the receiver (ControlFrame.ts).
      const text = Encode.controlFrame(session.infoJson, { messageId, action: "cancel", timestamp: stamp })
      const control = new ControlFrame(text, live.receiver.key, session.key, session.presentSince, key, live.receiver.instance)
      // Its message given back unconfirmed is kept with a cancel made again (WithdrawnCopies.keepCancelled): stamped as
      // this one, which its client may have read (review revbm BM2).
      records.noteCancel(session.key, messageId, stamp)
      if (route !== undefined && !mayHold(route.receiverInstance, live.receiver)) {
        // Still in the custody (or write) of an old connection a takeover's custody hold waits for: its
        // client may yet confirm it as it closes, so whether the new instance gets it is known only then
        // (review revb D1). Handled again when the hold ends: the answer, the control, the record all wait.
        if (output.holds.deferCancel(live.receiver.peer, control, () => this.cancelAgain(session, messageId))) return
        // Given to a client instance that is gone (the session taken over since): the new one cannot act on
        // the cancel, and the message stays delivered — answered as a message that cannot be cancelled.
        return this.answer(answerTo, messageId, false)
      }
      const waiting = mayStillWait(live.receiver.peer, control, output)
      output.enqueue(live.receiver.peer, control)
      this.forget(key)
      records.rewrite(session.key, messageId, CANCELLED)
      // Kept with the route too, which may outlive the record (`withdrawnBy`) — or, with the route gone
      // (`recordedRoute` followed the replay record), with that record (review revau AU1) — past both while the
      // message may still wait unwritten (`keepWithdrawal`).
      this.keepWithdrawal(route ?? this.routes.find(session.key, messageId), CANCELLED, waiting, now, live.receiver.key)
      // The control reveals the cancel as the sender's answer does: both wait for its commit (StoreJournal's
      // promise), so a receiver never drops a message whose record a crash leaves delivered.
      this.ctx.journal?.mark(live.receiver.peer)
      if (answerTo !== undefined) this.ctx.journal?.mark(answerTo)
      return this.answer(answerTo, messageId, true)
    }
    this.answer(answerTo, messageId, false)
  }
}
