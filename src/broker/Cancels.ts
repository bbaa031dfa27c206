/**
 * A sender's `cancel_message` (P71) along its message's receipt route
 * (Receipts.ts): answered to the sender, and sent to the receiver as a
 * `message_control` cancel, kept behind the cancelled message wherever that
 * still waits for the receiver (ControlFrame.ts). It reads the routes
 * through Receipts and keeps no state of its own; the Receipts wire it to
 * the `cancel_message` frame.
 *
 * A `cancel_message` for mail
 * still in the mailbox removes it instead — under a reused id, the newest
 * message under it waiting there, unless the id's newest is elsewhere
 * (`named`): a later one staged is withdrawn there (review rvc2 probe 4), a
 * later one delivered is reached along its route (`deliveredLater`; review
 * revmailkey2 probe 2), and when that newest was withdrawn already (its
 * replay record, or that gone its route, says so) the cancel is a repeat,
 * answered from that fate, withdrawing nothing else (review rvc2 probes
 * 1–3). With nothing under the id in the mailbox, a cancel of a message
 * staged reads the same (`namedPastStaged`): a later one delivered, or the
 * id's newest withdrawn already, leaves the staged one (review rvlate2
 * probe 1, rvstg probe 1). Unless a client read it before
 * it came back there (written, never confirmed): then the copy stays for
 * that client instance's return, with the cancel's control behind it
 * (MailDelivery.cancel, WithdrawnCopies.ts; review revd, helper mbctl). A cancel of a message this
 * sender cancelled already is answered `delivered` again (ours): its first
 * answer may have been lost with a connection or a broker crash, and a
 * retry must tell the sender the message's fate rather than "cannot be
 * cancelled" — and the receiver, told once, is not sent the control again.
 * Nor is a supervisor's reply waiting in the mailbox that a durable question
 * took as its answer when it was queued (`questionAnsweredBy`, Questions.ts):
 * answered "cannot be cancelled" naming the question, it stays queued, as
 * its saved answer stays (task fixq2) — nor, so answered, such a reply
 * delivered to its child, found by its route's mark
 * (`OutboundRecords.answeredBy`): the child is sent no control (task fixq3).
 * Nor is a message its sender superseded cancelled as well
 * (Receipts.withdrawnBy, ours): its fate is settled, so the cancel is
 * answered "cannot be cancelled", with no control and the record left
 * superseded. A cancel's control reveals the cancel as the sender's answer
 * does, so on a durable broker both wait for its commit (StoreJournal.ts).
 *
 * A cancel goes to the receiver's connection only when the client instance
 * its route names was given the message (Receipts.ts). One exception, a
 * cancel of a message still in the custody (or write) of an old connection
 * a takeover's custody hold waits for: that client may yet confirm it as it
 * closes, or not, and only the close tells whether the new instance gets it
 * (review revb D1). So the cancel is put off until the hold ends
 * (`CustodyHolds.deferCancel`) and then handled anew (`cancelAgain`):
 * its answer, control, record rewrite and commit all wait; given back to
 * the new connection, the message is followed by the cancel (answered
 * `delivered`); confirmed by the old client, the cancel is answered "cannot
 * be cancelled"; given back to the mailbox (the session away), it is
 * cancelled there.
 */
import { decodeClientFrame, isFrameDecodeError } from "../protocol/decode.ts"
import { DeliveryCode, Reason } from "../protocol/delivery.ts"
import { ControlFrame } from "./ControlFrame.ts"
import { acceptedLater } from "./BrokerStamps.ts"
import { type Fingerprint, fingerprintOfMail, isRecordOfMail, type Outcome, recordKeyOf, sameFingerprint } from "./DeliveryRecords.ts"
import * as Encode from "./encode.ts"
import type { MailDelivery } from "./MailDelivery.ts"
import { mayStillWait } from "./MayStillWait.ts"
import type { OutboundRecord } from "./OutboundRecord.ts"
import type { OutboundRecords } from "./OutboundRecords.ts"
import type { Mail } from "./Peer.ts"
import type { Peer } from "./Peer.ts"
import { questionAnsweredBy } from "./Questions.ts"
import type { Receipts } from "./Receipts.ts"
import { mayHold, type Session, type SessionInstance } from "./Registry.ts"
import type { RouterContext } from "./RouterContext.ts"

/** The outcome of a delivered message its sender cancelled (`cancel_message`). */
const CANCELLED: Outcome = { ok: false, code: DeliveryCode.DeliveryCancelled, reason: Reason.cancelled, retryable: false }

/** The outcome of a message its sender cancelled while the mailbox held it (MailDelivery.cancel writes its record). */
const CANCELLED_QUEUED: Outcome = {
  ok: false,
  code: DeliveryCode.DeliveryCancelled,
  reason: Reason.cancelledQueued,
  retryable: false
}

/** Whether `outcome` says its sender withdrew its message: cancelled it, or superseded it by another. */
const isWithdrawal = (outcome: Outcome): boolean =>
  !outcome.ok && (outcome.code === DeliveryCode.DeliveryCancelled || outcome.code === DeliveryCode.DeliverySuperseded)

/**
 * Whether `found`, the outbound record of the id (OutboundRecords.find), stands for a message under it accepted
 * after `waiting`, the mailbox's newest under it, and delivered — so the id stands for that one now, not for
 * `waiting`: its replay part is kept and is its route's message (not RECORD_LATER), not the record of
 * `waiting` (`isRecordOfMail`; a replay part holds the last send under its id, so another's is a later message),
 * and says delivered. Without a replay part the mailbox's message is taken (its route's message is not known to be
 * later).
 */
const deliveredLater = (found: OutboundRecord, print: () => Fingerprint): boolean => {
  if (!found.recorded || found.recordLater) return false
  const outcome = found.outcome
  return outcome.ok && outcome.delivery === "socket_delivered" && !isRecordOfMail(found, print())
}

/**
 * With the id's replay record gone: whether `found`, the id's outbound record, says another message than the one
 * `print` hashes (the mailbox's newest, or the newest staged) was withdrawn — a later one: any send under the id
 * forgets a route's withdrawal (DeliveryRecords.keep), and a route naming an earlier message than the id's last send
 * is RECORD_LATER — so a cancel is a repeat, answered from that fate (review rvc2 probes 1–3, rvstg probe 1).
 */
const isLaterWithdrawal = (
  found: OutboundRecord,
  print: () => Fingerprint
): found is OutboundRecord & { readonly withdrawal: Outcome } =>
  found.withdrawal !== undefined && !found.recordLater && found.targetId !== "" && !isRecordOfMail(found, print())

/**
 * Where the message a cancel names is when the mailbox holds one under the id (`Cancels.named`): the mailbox's
 * newest under it (`"mailbox"`), a later one staged (`"staged"`) or delivered (`"route"`) — or the id's newest
 * message was withdrawn already (an Outcome, its fate): the cancel is a repeat, answered from that fate.
 */
type Named = "mailbox" | "staged" | "route" | Outcome

/** A sender's staged `replace` messages, as a cancel reads them and takes them out (ReplaceStaging.ts). */
export interface StagedForCancel {
  /** `senderKey`'s message `messageId` staged or due, if any (ReplaceStaging.stagedMessage). */
  readonly find: (senderKey: string, messageId: string) => Mail | undefined
  /** Takes `senderKey`'s staged message `messageId` out (ReplaceStaging.withdraw); true when it did. */
  readonly withdraw: (senderKey: string, messageId: string) => boolean
}

/**
 * Whether the route `found` takes the fate of `waiting`, the message a mailbox cancel withdrew: when it names
 * `waiting` — its replay part, kept, of `waiting`'s fingerprint and the route's own (not RECORD_LATER); without a
 * replay part, or with another message's after an older route's, the route names `waiting`'s session or a client
 * that read it (given back after a write) — or names an older message than `waiting` (RECORD_LATER, the replay part
 * `waiting`'s): the id's fate is settled with `waiting`, and a cancel again is answered from it, not sent along
 * that route. A route naming a later message, or one of another session not known to be older, is left unmarked:
 * that message was not withdrawn, and given back marked it would come with a cancel.
 */
const routeKeepsFate = (found: OutboundRecord, waiting: Mail, mail: MailDelivery): boolean => {
  if (found.recorded) {
    if (sameFingerprint(found, fingerprintOfMail(waiting))) return true
    if (!found.recordLater) return false
  }
  return found.receiverKey === waiting.targetKey || mail.readByReceiver(waiting, found.receiverKey)
}

/** What a cancel reads and keeps of the receipt routes (Receipts.ts). */
type CancelRoutes = Pick<Receipts, "keepWithdrawal" | "recordedRoute" | "routeOf" | "sessionsOf" | "withdrawnBy" | "withdrawnRowKey">

/** A sender's `cancel_message`; see the module header. */
export class Cancels {
  private readonly ctx: RouterContext
  private readonly mail: MailDelivery
  private readonly receipts: CancelRoutes
  private readonly forget: (messageKey: string) => void
  private readonly staged: StagedForCancel
  /** The outbound records, whose route part a cancel reads and keeps a withdrawal on. */
  private readonly routes: OutboundRecords

  /**
   * @param receipts the routes a cancel reads and keeps the message's fate on.
   * @param forget drops what other concerns keep for a cancelled message (its ask edge, or the ask as withdrawn).
   * @param staged a sender's staged `replace` messages, which a cancel reads and takes out (ReplaceStaging.ts).
   */
  constructor(
    ctx: RouterContext,
    mail: MailDelivery,
    receipts: CancelRoutes,
    forget: (messageKey: string) => void,
    staged: StagedForCancel
  ) {
    this.ctx = ctx
    this.mail = mail
    this.receipts = receipts
    this.forget = forget
    this.staged = staged
    this.routes = ctx.records.table
  }

  /** A `cancel_message` frame from `peer`: `cancel` for its session, or answered "cannot be cancelled" when it has none. */
  onCancel(peer: Peer, raw: unknown): void {
    const frame = decodeClientFrame.cancel_message(raw)
    if (isFrameDecodeError(frame)) return this.ctx.protocolError(peer, frame.message)
    const session = peer.session
    if (session === undefined) return this.answer(peer, frame.messageId, false)
    this.cancel(session, frame.messageId, peer)
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

  /**
   * Answers a cancel on `to`, the connection that sent it, if there is one to answer (`cancelAgain`): a bare
   * `delivered`, or a bare `delivery_failed` with `reason` ("cannot be cancelled" unless another is given).
   */
  private answer(to: Peer | undefined, messageId: string, delivered: boolean, reason: string = Reason.cannotCancel): void {
    if (to === undefined) return
    const { output } = this.ctx
    output.enqueue(to, delivered ? Encode.bareDeliveredFrame(messageId) : Encode.bareDeliveryFailedFrame(messageId, reason))
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
    // The mailbox's newest message under the id, unless the id's newest is elsewhere (`named`): staged or delivered
    // later, or withdrawn already (review revmailkey2 probe 2, rvc2 probes 1–4).
    const waiting = this.mail.newestWaiting(key, session.key)
    const found = waiting === undefined ? undefined : this.routes.find(session.key, messageId)
    const named = waiting === undefined ? undefined : this.named(session.key, messageId, waiting, found)
    if (typeof named === "object") {
      // A repeat: answered from the fate, as the settled path below answers it, withdrawing nothing more.
      if (answerTo !== undefined) this.ctx.journal?.mark(answerTo)
      return this.answer(answerTo, messageId, !named.ok && named.code === DeliveryCode.DeliveryCancelled)
    }
    // A supervisor's reply queued for a durable question's child away is that question's saved answer (the send
    // stage's `queued` hook saved it, Questions.replySent): it cannot be withdrawn, or the sender would be told its
    // reply was withdrawn while the child still gets its answer (task fixq2). Answered as a delivered message's
    // cancel that cannot reach it; the reply stays queued, nothing is rewritten.
    const answered = waiting === undefined || named !== "mailbox" ? undefined : questionAnsweredBy(waiting)
    if (answered !== undefined) return this.answer(answerTo, messageId, false, Reason.cannotCancelAnswer(answered))
    const queued = waiting === undefined || named !== "mailbox" ? "none" : this.mail.cancel(waiting, control)
    if (queued !== "none") {
      // A copy given out again and back (its reader dropped) is kept with a cancel made again: stamped as this one.
      if (queued === "copy") records.noteCancel(session.key, messageId, stamp)
      this.forget(key)
      // Given back to the mailbox after a write (its route kept): its route keeps the fate too (`withdrawnBy`),
      // past its hour while a copy a client read stays (review revao AO2) — not when the mail was deleted
      // outright: nothing of it is left to give back (review revaw AW2). Not a route of another message under the id
      // not known to be older (`routeKeepsFate`): that message was not withdrawn.
      const route = found !== undefined && waiting !== undefined && found.routed && routeKeepsFate(found, waiting, this.mail) ? found : undefined
      if (route !== undefined) {
        route.withdrawal = CANCELLED_QUEUED
        if (queued === "copy") this.routes.keepWithdrawal(route, this.ctx.now())
      }
      if (answerTo !== undefined) this.ctx.journal?.mark(answerTo)
      return this.answer(answerTo, messageId, true)
    }
    // Staged in replace mode (C-DLV-6 reports it queued): cancelled there, before its window closes — not when the
    // id stands for a later message delivered (`named`, `namedPastStaged`), nor, with nothing under the id in the
    // mailbox, when the id's newest was withdrawn already: a repeat, answered from that fate (review rvstg probe 1).
    const pastStaged = waiting === undefined ? this.namedPastStaged(session.key, messageId) : named
    if (typeof pastStaged === "object") {
      if (answerTo !== undefined) this.ctx.journal?.mark(answerTo)
      return this.answer(answerTo, messageId, !pastStaged.ok && pastStaged.code === DeliveryCode.DeliveryCancelled)
    }
    if (pastStaged !== "route" && this.staged.withdraw(session.key, messageId)) {
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
    const settled = this.receipts.withdrawnBy(session, messageId, now)
    if (settled !== undefined) {
      if (answerTo !== undefined) this.ctx.journal?.mark(answerTo)
      return this.answer(answerTo, messageId, !settled.ok && settled.code === DeliveryCode.DeliveryCancelled)
    }
    const route = this.receipts.routeOf(session.key, messageId)
    const live = route === undefined ? this.receipts.recordedRoute(session, messageId, now) : this.receipts.sessionsOf(route, now)
    if (live !== undefined && live.sender === session) {
      // A supervisor's reply delivered to its child and saved as a durable question's answer (`questionAnsweredBy`,
      // marked on its route as it was routed, Receipts.addRoute): refused as the same reply waiting in the mailbox is,
      // with no control and nothing rewritten, or the child would be told to withdraw its answer (task fixq3).
      const record = route ?? this.routes.find(session.key, messageId)
      const answered = record === undefined ? undefined : this.routes.answeredBy(record)
      if (answered !== undefined) return this.answer(answerTo, messageId, false, Reason.cannotCancelAnswer(answered))
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
      // Found by its route, only its own replay record is rewritten: not a later send's under the id, kept after
      // its record left while its route stayed (review revdd DD1). Only its own stored row goes (`withdrawnRowKey`:
      // its send's named session's, review rrmk probe 1), not another message's under the id held unconfirmed by
      // another session (review revmailkey2 probe 1).
      records.rewrite(session.key, messageId, CANCELLED, route, this.receipts.withdrawnRowKey(session.key, messageId, route, live.receiver))
      // Kept with the route too, which may outlive the record (`withdrawnBy`) — or, with the route gone
      // (`recordedRoute` followed the replay record), with that record (review revau AU1) — past both while the
      // message may still wait unwritten (`keepWithdrawal`).
      this.receipts.keepWithdrawal(route ?? this.routes.find(session.key, messageId), CANCELLED, waiting, now, live.receiver.key)
      // The control reveals the cancel as the sender's answer does: both wait for its commit (StoreJournal's
      // promise), so a receiver never drops a message whose record a crash leaves delivered.
      this.ctx.journal?.mark(live.receiver.peer)
      if (answerTo !== undefined) this.ctx.journal?.mark(answerTo)
      return this.answer(answerTo, messageId, true)
    }
    this.answer(answerTo, messageId, false)
  }

  /**
   * With nothing under the id in the mailbox: which message `senderKey`'s cancel names when one is staged under
   * `messageId` (undefined when none is) — the newest staged (`"staged"`), unless the id's replay record, which
   * holds its last send, is of another message, so a later one: delivered since (`"route"`, review rvlate2 probe 1),
   * or withdrawn already (its Outcome: the cancel is a repeat, answered from that fate, withdrawing nothing else —
   * review rvstg probe 1: a first cancel withdrew a later one staged for another recipient, or waiting in the
   * mailbox, and a repeat would otherwise withdraw this older one). With that record gone, the staged one is taken.
   */
  private namedPastStaged(senderKey: string, messageId: string): "staged" | "route" | Outcome | undefined {
    const staged = this.staged.find(senderKey, messageId)
    if (staged === undefined) return undefined
    let hashed: Fingerprint | undefined
    const print = (): Fingerprint => (hashed ??= fingerprintOfMail(staged))
    const found = this.routes.find(senderKey, messageId)
    const record = this.ctx.records.get(senderKey, messageId, this.ctx.now())
    if (record !== undefined) {
      if (isWithdrawal(record.outcome) && !isRecordOfMail(record, print())) return record.outcome
    } else if (found !== undefined && isLaterWithdrawal(found, print)) {
      return found.withdrawal
    }
    return found !== undefined && deliveredLater(found, print) ? "route" : "staged"
  }

  /**
   * Which message under the id `senderKey`'s cancel names, `waiting` being the mailbox's newest under it and `found`
   * the id's outbound record: the id's newest message, in whichever of three places it is — a later one staged
   * (`acceptedLater`), a later one delivered (`deliveredLater`), else `waiting` — unless that newest was withdrawn
   * already (review rvc2 probes 1–3): its replay record, kept, says so (whether or not a route is kept; restored
   * after a restart too), or, with the record gone, the withdrawal of a route naming it does. Either is of another
   * message than `waiting` (not its record: `isRecordOfMail`), and a later one: a replay part holds the id's last
   * send, a route naming an earlier message than that send is RECORD_LATER (not read here), and any send under the
   * id forgets a route's withdrawal (DeliveryRecords.keep). Cancel path only, when the mailbox holds a message under
   * the id; `waiting`'s fingerprint is hashed only when a record or route could name another message.
   */
  private named(senderKey: string, messageId: string, waiting: Mail, found: OutboundRecord | undefined): Named {
    const staged = this.staged.find(senderKey, messageId)
    // Staged after the mailbox's newest — unless the id's record, which holds its last send, is a later message
    // delivered (review rvlate2 probe 1).
    if (staged !== undefined && acceptedLater(staged, waiting)) {
      return found !== undefined && deliveredLater(found, () => fingerprintOfMail(staged)) ? "route" : "staged"
    }
    if (found === undefined) return "mailbox"
    let hashed: Fingerprint | undefined
    const print = (): Fingerprint => (hashed ??= fingerprintOfMail(waiting))
    const record = this.ctx.records.get(senderKey, messageId, this.ctx.now())
    if (record !== undefined) {
      if (isWithdrawal(record.outcome) && !isRecordOfMail(record, print())) return record.outcome
    } else if (isLaterWithdrawal(found, print)) {
      return found.withdrawal
    }
    return deliveredLater(found, print) ? "route" : "mailbox"
  }
}
