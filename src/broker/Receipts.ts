/**
 * Size: about 500 lines, past the ~400 guideline, a fifth of them this
 * header: one concept, the receipt route — kept, followed by receipts, and
 * read by a cancel and a supersede (their own code is Cancels.ts and
 * SupersedeStage.ts), each step reading and moving the same route records.
 *
 * Receipts and control (P70–P73). Every delivered message leaves a receipt
 * route — which session sent it to which — for an hour. Along it a
 * receiver's `message_receipt` is forwarded to the sender, a sender's
 * `cancel_message` becomes the receiver's `message_control` cancel
 * (Cancels.ts), and a `supersedes` send first tells the receiver the old
 * message is superseded (SupersedeStage.ts; these two only while both
 * sides are live). This module owns the routes — keeping them, and reading
 * them for a cancel and a supersede (`routeOf`, `sessionsOf`, `liveRoute`,
 * `recordedRoute`, `withdrawnBy`, `keepWithdrawal`) — and the receipts; it
 * wires the cancel and the supersede stage, which keep no state of their own.
 *
 * A message its sender cancelled or superseded keeps that fate on its route
 * too (`OutboundRecord.withdrawal`, the
 * outcome object the record was rewritten to, so no allocation), not only
 * in the replay record, which the route can outlive: the records' bounds
 * push a flooding sender's oldest out, and a record ages from the send, a
 * route from the delivery (review revd D1; DeliveryRecords.withdrawal, also
 * read where a closing connection gives a message back:
 * MailReturns.withdrawnOnTheWay). That fate is the routed message's: a
 * later message under the id, recorded after its record left, that takes
 * the route over when flushed (`addRoute`) does not inherit it (task route;
 * DeliveryRecords.forgetEarlier). A durable broker that restarted has replay records but no
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
 * and a supersede naming it is refused. A message
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
 * gone) — unless a takeover's custody hold puts it off (Cancels.ts) — and a
 * supersede delivers its new message alone. A withdrawn message goes back
 * only to the instance its route names (`given`, MailReturns.requeue).
 */
import { decodeClientFrame, isFrameDecodeError } from "../protocol/decode.ts"
import { Cancels, type StagedForCancel } from "./Cancels.ts"
import type { ControlFrame } from "./ControlFrame.ts"
import { fingerprintOfMail, type Outcome, recordKeyOf, sameFingerprint } from "./DeliveryRecords.ts"
import * as Encode from "./encode.ts"
import { HeldReceipts } from "./HeldReceipts.ts"
import type { MailDelivery } from "./MailDelivery.ts"
import { OutboundRecord, ROUTE_TAKEN } from "./OutboundRecord.ts"
import type { OutboundRecords } from "./OutboundRecords.ts"
import type { Mail, Peer } from "./Peer.ts"
import { questionAnsweredBy } from "./Questions.ts"
import type { RegistrationHooks } from "./Registration.ts"
import { mayHold, type Session, type SessionInstance, UNKNOWN_INSTANCE } from "./Registry.ts"
import type { FrameHandlers, RouterContext } from "./RouterContext.ts"
import type { SendStage } from "./SendStage.ts"
import { supersedeStage } from "./SupersedeStage.ts"

const HOUR = 3_600_000

/** Receipt routes kept at most, overall; past it the oldest go first. */
export const MAX_ROUTES = 65_536

/** How long a withdrawal outlives its route (OutboundRecords.ageRoute): a day. */
const WITHDRAWAL_KEPT_MS = 24 * HOUR

/** The receipts concern: receipt routes, `message_receipt`, `cancel_message`, and the supersede stage. */
export class Receipts {
  private readonly ctx: RouterContext
  private readonly liveHolder: (scopeKey: string, id: string) => Session | undefined
  private readonly askOpen: (messageKey: string, now: number) => boolean
  /** The outbound records, whose route part this class keeps: an hour, at most MAX_ROUTES. */
  private readonly routes: OutboundRecords
  /** Receipts along a route whose sender was away, until it registers again. */
  private readonly held = new HeldReceipts()
  /** A sender's `cancel_message` (Cancels.ts). */
  private readonly cancels: Cancels

  /**
   * @param forget drops what other concerns keep for a cancelled message (its ask edge, or the ask as withdrawn).
   * @param staged a sender's staged `replace` messages, as a cancel reads and takes them out (ReplaceStaging).
   * @param liveHolder the live session holding an id in a scope, in whichever group (Groups.liveHolder).
   * @param askOpen whether the ask of a record key is still open at a time (Asks.isOpen).
   */
  constructor(
    ctx: RouterContext,
    mail: MailDelivery,
    forget: (messageKey: string) => void,
    staged: StagedForCancel,
    liveHolder: (scopeKey: string, id: string) => Session | undefined,
    askOpen: (messageKey: string, now: number) => boolean
  ) {
    this.ctx = ctx
    this.liveHolder = liveHolder
    this.askOpen = askOpen
    this.routes = ctx.records.table
    this.cancels = new Cancels(ctx, mail, this, forget, staged)
    this.supersedes = supersedeStage(ctx, mail, this, forget)
  }

  /** `message_receipt` (`onReceipt`) and `cancel_message` (Cancels.ts). */
  readonly frames: FrameHandlers = {
    message_receipt: { handle: (peer, frame) => this.onReceipt(peer, frame) },
    cancel_message: { handle: (peer, frame) => this.cancels.onCancel(peer, frame) }
  }

  /**
   * P72: a `supersedes` must name this sender's earlier message to this
   * (live) receiver; the receiver is told first, and the new message's
   * route recorded (SupersedeStage.ts).
   */
  readonly supersedes: SendStage

  /** A sender that registers again gets the receipts held while it was away. */
  readonly hooks: RegistrationHooks = {
    registered: (session, _previous, now) => {
      for (const frame of this.held.take(session.key, now)) this.ctx.output.enqueue(session.peer, frame)
    }
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
   *
   * Whether the route's message is the one the replay part under its id
   * records (`OutboundRecord.recordLater`; review revdd DD1): on the send
   * path (`record` given) it is — that send's record is kept right after
   * (marked ROUTE_TAKEN for DeliveryRecords.keep) or was at its staging; for
   * mail flushed, it is when no replay part is kept or the mail's
   * fingerprint is the part's (a hash of its text, on the flush path only).
   * Flushed mail of the fingerprint a later send's record holds
   * (`recordLater`, kept or not) is that later message: the route's
   * withdrawal, the earlier message's, is forgotten
   * (DeliveryRecords.forgetEarlier; task route A, review revroute D2);
   * any other flushed mail (the withdrawn message's own copy left in the
   * mailbox) keeps it.
   */
  addRoute(mail: Mail, senderKey: string, receiver: Session, now: number, record?: OutboundRecord): void {
    const routes = this.routes
    const id = mail.message.id
    const claimed = routes.claim(record ?? routes.find(senderKey, id) ?? new OutboundRecord(senderKey, id, undefined))
    if (record !== undefined && claimed !== record) record.parts |= ROUTE_TAKEN
    const flushed = record === undefined && (claimed.recorded || claimed.withdrawal !== undefined) ? fingerprintOfMail(mail) : undefined
    const ofRecord = flushed === undefined || !claimed.recorded || sameFingerprint(flushed, claimed)
    // Flushed, the later message the record's fingerprint is (RECORD_LATER, which outlives its replay part) takes
    // the route over from the earlier one: a withdrawal kept is that earlier message's, not this one's (task
    // route A; review revroute D2). Told by RECORD_LATER and the fingerprint, not by the replay part being kept:
    // other flushed mail — the withdrawn message's own copy left in the mailbox (a superseded one) — stays
    // withdrawn. A send's own record forgets it as it is kept (DeliveryRecords.keep).
    if (flushed !== undefined && claimed.recordLater && claimed.withdrawal !== undefined && sameFingerprint(flushed, claimed)) {
      this.ctx.records.forgetEarlier(claimed, mail.brokerReceivedAt, flushed, now)
    }
    // A supervisor's reply a durable question took as its answer (one field read for any other mail): its route
    // says so, so its sender's cancel is refused as the mailbox copy's is (Cancels.ts; task fixq3).
    routes.keepRoute(claimed, receiver.key, receiver.instance, now, ofRecord, mail.targetKey, questionAnsweredBy(mail))
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

  /**
   * The session whose stored row a withdrawal of `senderKey`'s message
   * `messageId` ends, found by `route` or, with none, by its record
   * (`recordedRoute`) as given to `receiver`: the session the send named,
   * under which the row was stored (`Mail.targetKey`) — not `receiver`'s
   * when P49's other holder took the message (OutboundRecords.rowKeyOf;
   * review rrmk probe 1). A record restored at startup and not routed since
   * names none: its message's row, if stored, was restored to the mailbox
   * (Router.restore), where a cancel finds it first, so `receiver`'s. The
   * cancel and supersede paths only.
   */
  withdrawnRowKey(senderKey: string, messageId: string, route: OutboundRecord | undefined, receiver: Session): string {
    const found = route ?? this.routes.find(senderKey, messageId)
    return found === undefined || found.restored ? receiver.key : this.routes.rowKeyOf(found)
  }

  /** `senderKey`'s route for its message `messageId`, if it has one. */
  routeOf(senderKey: string, messageId: string): OutboundRecord | undefined {
    const record = this.routes.find(senderKey, messageId)
    return record !== undefined && record.routed ? record : undefined
  }

  /**
   * The two live sessions of `senderKey`'s route for `messageId`, if it is
   * under an hour old and both sides are registered now.
   */
  liveRoute(
    senderKey: string,
    messageId: string,
    now: number
  ): { readonly sender: Session; readonly receiver: Session } | undefined {
    const route = this.routeOf(senderKey, messageId)
    return route === undefined ? undefined : this.sessionsOf(route, now)
  }

  /** The sessions now registered under `route`'s two keys, if it is under an hour old and both are. */
  sessionsOf(
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
  recordedRoute(
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
  withdrawnBy(sender: Session, messageId: string, now: number): Outcome | undefined {
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
  keepWithdrawal(
    record: OutboundRecord | undefined,
    withdrawal: Outcome,
    waiting: boolean,
    now: number,
    receiverKey: string
  ): void {
    if (record === undefined) return
    record.withdrawal = withdrawal
    this.ctx.records.noteWithdrawn(record, withdrawal, receiverKey, now)
    if (waiting) this.routes.keepWithdrawal(record, now, receiverKey)
  }

}
