/**
 * A connection's end and a takeover's hand-over, on the output side: what
 * happens to the output queued or parked on a connection when it is taken
 * over (P16), its session unregisters, or it closes. It runs per connection
 * event, never per frame; the per-frame side (`enqueue`, `place`,
 * `takeForWrite`, `parkFor`, the flushes) is Output.ts's and its parts'
 * (ParkedDrain.ts, OutputWrites.ts).
 *
 * At a takeover (and when a session unregisters, Custody.handBack) the mail
 * and failure notices the old connection's outbox still holds for the
 * session, then those in its own parked list, are taken back at once and in
 * order (`handOver`, `handOverParked`), so they reach the session's new
 * connection ahead of anything queued for it later — a control frame about
 * such mail with it, and, at a takeover by another instance, only right
 * after its message (handed over with it, or kept on a custody hold for the
 * old close): that instance cannot act on a control of a message it never
 * got from here; at an `unregister`, the controls are left to the caller
 * (Custody.handBack), which keeps one whose message its client confirmed
 * for that client's return, as a close does. The answers parked for
 * the old connection itself are forced into its outbox ahead of its
 * `taken_over` (`forceOwnAnswers`). At a close, what the reader had parked
 * for others is forced past the bounds (`forceParked`), its own parked
 * output is kept for the close to give back after its outbox
 * (`takeOwnParked`, `drainOnClose`), and senders waiting for room there are
 * woken to find it shut (`releaseWaiters`). An `ask-expiry-v1` settling
 * answer held behind a reply this close forced follows that reply, and one
 * held for the closing connection itself is dropped (ParkedReplies.ts).
 *
 * Ownership: Output and its parts own a `Peer`'s output fields and the
 * broker-wide output state (the budgets, OutboxBudgets.ts; the readers with
 * parked output, Output's; the departure holds behind them); this module is its close and takeover side, split off
 * by concern. It writes a peer's `outbox`, `parked`, `outboxShut`,
 * `parkedMail`, `leftReturnWaits` and `controlsAtClose` directly, only at those connection
 * events (never in the same synchronous step as Output's own writes), and
 * changes everything else through `OutputSide`: the character budget, the
 * parked readers, the holds; the per-sender counts through ParkedOrder.ts
 * (`uncountParkedMail`). No state of its own.
 */
import type { CustodyHolds } from "./CustodyHold.ts"
import type { DepartureHolds } from "./DepartureHolds.ts"
import type { ControlFrame } from "./ControlFrame.ts"
import type { LeftBy } from "./MailReturns.ts"
import type { ParkedControls } from "./ParkedControls.ts"
import type { ParkedReplies } from "./ParkedReplies.ts"
import { carriesMessage, charsOf, isAnswer, isControl, isMessage, isStranded, isStrandedControl } from "./OutboundItems.ts"
import { uncountParkedMail } from "./ParkedOrder.ts"
import { END_OF_OUTPUT, FEED_TICK, type OutboundItem, type OutboundMessage, type Peer, type Returnable, type Written } from "./Peer.ts"

/** What the close and takeover side asks of Output, the owner of the state it changes. */
export interface OutputSide {
  /** Adds `chars` (negative: takes them off) to `peer`'s and every outbox's character count. */
  readonly charge: (peer: Peer, chars: number) => void
  /**
   * Takes output that can no longer be written where it was queued (MailDelivery): mail, notices, control
   * frames; true when it went to its session's live connection (kept with a takeover's hold there included).
   * `refusedBy`: a control it cannot give there now is kept for the client instance it was written to, if
   * its rule allows, holding the idle exit when that session left by a close; `cameBack`: its message, taken
   * back with it and passed on to no one, which that instance must have read (MailReturns.takeBack).
   */
  readonly takeBack: (item: Returnable | ControlFrame, refusedBy?: LeftBy, cameBack?: OutboundMessage) => boolean
  /** `peer`'s outbox has room again: what waits for it tries again (OutputWrites.roomMade). */
  readonly roomMade: (peer: Peer) => void
  /** Queues `item` for `recipient` past its bounds, behind older mail of its sender (Output.forceEnqueue). */
  readonly forceEnqueue: (recipient: Peer, item: OutboundItem) => void
  /**
   * A parked item whose recipient's connection closed goes back as one its drainer found refused there: a
   * control frame its session's live connection cannot take is kept for the client instance it was written
   * to, if its rule allows (Output.refused, MailReturns.takeBack's `keepRefused`).
   */
  readonly refused: (item: OutboundItem, recipient: Peer) => void
  /** `reader` is no longer among the readers with parked output; true when it was. */
  readonly unpark: (reader: Peer) => boolean
  /** The count of control frames in the parked lists (ParkedControls.ts, Output's): lowered for each control forced, handed over or taken back here. */
  readonly controls: ParkedControls
  /** All of `reader`'s parked output is out: the departures held behind it go (FeedSource.parkedOut). */
  readonly parkedOut: (reader: Peer) => void
  /** The departures held behind recipients' own parked output (Output's). */
  readonly departureHolds: DepartureHolds
  /** The takeovers' custody holds (Output's, CustodyHold.ts): whether one keeps a control handed over. */
  readonly holds: CustodyHolds
  /** The settling `list` answers held behind parked replies to their askers (Output's, ParkedReplies.ts). */
  readonly replies: ParkedReplies
}

/** The output side of a connection's end and of a takeover's hand-over (see the module header). */
export class OutputEnd {
  private readonly side: OutputSide

  /** @param side what this side changes of Output's state, through Output. */
  constructor(side: OutputSide) {
    this.side = side
  }

  /**
   * The reader closed while its output was still parked: what was accepted is
   * delivered anyway, past the recipients' capacity, never dropped (mail for
   * a recipient whose session was taken over since goes where the session is
   * now: Output.forceEnqueue takes it back at once; output for a recipient
   * whose connection closed goes back as its drainer's refused offer would,
   * a control frame kept for the client instance that read its message,
   * `OutputSide.refused`). Its own
   * parked output is not written: it stays in its parked list, with no
   * drainer, for the close to take back (`takeOwnParked`) after the output
   * queued before it (its mailbox, flushed when it registered, goes to its
   * session's next connection or the mailbox in its order; docs/testing.md,
   * known issue 14) — or for a registration of its session meanwhile to hand
   * over (`handOver`), ahead of newer mail for the new connection. Its
   * `parkedMail` count stays until `drainOnClose`: mail for it arriving
   * meanwhile still waits, and is taken back after that output.
   */
  forceParked(reader: Peer): void {
    const own: Array<readonly [Peer, OutboundItem]> = []
    // Taken off first: what is forced here must not be parked back behind this reader (`parkBehindReturn`).
    const entries = reader.parked
    reader.parked = []
    this.side.unpark(reader)
    for (const entry of entries) {
      const [recipient, item] = entry
      if (item === FEED_TICK || item === END_OF_OUTPUT) continue
      if (recipient === reader) {
        own.push(entry)
        continue
      }
      this.side.controls.left(item)
      // Closed: as its drainer's offer would have been refused there — a control kept for its reader's return.
      if (recipient.state === "closed") this.side.refused(item, recipient)
      else this.side.forceEnqueue(recipient, item)
    }
    reader.parked = own
    if (!this.side.departureHolds.isEmpty) this.side.departureHolds.drop(reader)
    this.side.parkedOut(reader)
    // `ask-expiry-v1`: a settling answer held behind a reply forced just now follows it (ParkedReplies.ts).
    if (this.side.replies.holding) this.side.replies.recheck()
  }

  /**
   * A closing reader's own parked output (what `forceParked` left, and mail
   * parked behind it since), taken for the close to give back, in order,
   * after its outbox (`drainOnClose`).
   */
  takeOwnParked(reader: Peer): Array<OutboundItem> {
    const own = reader.parked
    reader.parked = []
    const items: Array<OutboundItem> = []
    for (let i = 0; i < own.length; i++) {
      items.push(own[i]![1])
      this.side.controls.left(own[i]![1])
    }
    return items
  }

  /**
   * `peer` was taken over (P16; its `session` is already cleared): the mail
   * and failure notices its outbox still holds for the session (and the
   * control frames about that mail: ControlFrame.ts), then those
   * in its own parked list (`handOverParked`), are taken back now, in order,
   * so they reach the session's new connection ahead of anything queued for
   * it later — not when the old writer gets to them, which for a client that
   * stopped reading is after its close's grace, and after newer mail. Frames
   * of the old connection's own (answers, its `taken_over`) stay. What its
   * writer already handed the socket is not here: it comes back at close, if
   * the socket never took it. Also called when a session unregisters
   * (Custody.handBack): then its mail goes back to the mailbox.
   *
   * `instance`: the session's new connection, when another client instance
   * took it over (not the client's own rejoin, which gets every control: it
   * may hold the message). A control goes to it only after its message:
   * one taken back before it in this hand-over that went to `instance`, or
   * one the old connection may still give back at its close (in its custody
   * unconfirmed, or in its write in progress) — then a custody hold on
   * `instance` covers its sender (CustodyHold.ts) and keeps the control, or,
   * for a base client's write in progress (no custody, no hold), the control
   * waits for the close on the old connection (`Peer.controlsAtClose`); the
   * close gives it on only right after that message (MailReturns.giveBack).
   * Any other never goes to the new instance, which never got its message
   * from here and cannot act on a cancel or supersede of it
   * (ControlFrame.ts, review ctlho): one whose message is not in this
   * hand-over (the old client confirmed it, or a base one's was written to
   * it) is kept for the return of the instance that read it
   * (MailReturns.takeBack's `keepRefused`, KeptControls.ts); so is one whose
   * message this hand-over took back and did not pass on (withdrawn, it is
   * not the new instance's) when the instance it was written to read that
   * message before (a cancelled copy given to its return: MailReturns'
   * `readBy`; review revba BA3), and otherwise it is dropped (no client
   * read it: an ask that is over, or mail still in the outbox). Kept for
   * an instance only if it can register as itself again (it named itself:
   * MailReturns' `keepRefused`, review revba BA1).
   *
   * `handed`: given when the session unregistered (Custody.handBack, no
   * `instance`): everything taken back is added to it, in order, and its
   * control frames are not taken back here — the caller decides them
   * knowing every message that session's hand-back gave back (a control
   * whose message its client confirmed is kept for that client's return,
   * as at a close: MailReturns.controlsHandedBack). Its mail and notices
   * are taken back at once, as ever, ahead of what the room made here wakes.
   */
  handOver(peer: Peer, instance?: Peer, handed?: Array<Written>): void {
    // The record keys of the messages taken back in this hand-over: true for one that went on to `instance`,
    // the message itself for one that went nowhere. One map per takeover.
    const forwarded = instance === undefined ? undefined : new Map<string, OutboundMessage | true>()
    let took = false
    const items = peer.outboxToEdit()
    if (items !== undefined) {
      let kept = 0
      for (let i = 0; i < items.length; i++) {
        const item = items[i]!
        // A control frame about the session's mail goes with it, behind it (ControlFrame.ts).
        if (isStranded(item, peer) || isStrandedControl(item, peer)) {
          this.side.charge(peer, -charsOf(item))
          this.handOne(peer, item, instance, forwarded, handed)
        } else items[kept++] = item
      }
      took = kept < items.length
      items.length = kept
      peer.dropEmptyOutbox()
    }
    // After the outbox (queued before it): its own parked list's mail and notices for the session.
    if (peer.parked.length > 0) this.handOverParked(peer, instance, forwarded, handed)
    if (took) this.side.roomMade(peer)
  }

  /**
   * One item `handOver` takes back from `peer`: to where its session is
   * now, except a control for another `instance` whose message neither went
   * there before it in this hand-over (`forwarded`) nor is covered by a hold
   * there. Such a control whose message is in `peer`'s write in progress
   * (a base client's: no custody, so no hold) waits for the close
   * (`Peer.controlsAtClose`): the new instance gets that message only if
   * the socket never takes it. Any other is kept for the instance it was
   * written to if that one read its message — taken back here and gone
   * nowhere, or not in this hand-over at all — and can register again
   * (MailReturns.takeBack); dropped otherwise. With `handed` (an
   * `unregister`'s hand-back) the item is added to it, and a control is
   * left to the caller.
   */
  private handOne(
    peer: Peer,
    item: Written,
    instance: Peer | undefined,
    forwarded: Map<string, OutboundMessage | true> | undefined,
    handed?: Array<Written>
  ): void {
    if (instance === undefined || forwarded === undefined) {
      if (handed !== undefined) handed.push(item)
      if (handed === undefined || !isControl(item)) this.side.takeBack(item)
      return
    }
    if (!isControl(item)) {
      const went = this.side.takeBack(item)
      if (isMessage(item)) forwarded.set(item.mail.recordKey, went ? true : item)
      return
    }
    const message = forwarded.get(item.messageKey)
    if (message === true || this.side.holds.holdOf(instance, item) !== undefined) {
      this.side.takeBack(item)
    } else if (carriesMessage(peer.writer.inFlight?.returnable, item.messageKey)) (peer.controlsAtClose ??= []).push(item)
    // Its message not here (the old client confirmed it, or a base one's was written to it), or here and gone nowhere
    // (`message`: kept only if the instance it was written to read it before, review revba BA3): kept for the return
    // of that instance, as a parked control refused at a closed connection is (MailReturns.takeBack). Taken over, not
    // left by `unregister`: kept so, it holds a memory broker's idle exit.
    else this.side.takeBack(item, "close", message)
  }

  /**
   * The mail and notices for `peer`'s former session in `peer`'s own parked
   * list (its mailbox flush that did not fit, and mail parked behind it) are
   * taken back now, in order, as `handOver` takes the outbox's (the controls
   * among them as it says: `instance`, `forwarded`). Left there,
   * they would come back only when its drainer refuses them, which waits
   * while the list's first item waits for room at another recipient, or at
   * its close, which a takeover's `end` holds up to its flush grace —
   * meanwhile a sender's newer mail, routed to the new connection (whose
   * `parkedMail` holds none of it), would overtake its older mail here. The
   * item its drainer waits to offer may be among them: its `offerParked`
   * then ends without offering it (an item it offered and got accepted left
   * the list in that step). Frames of the connection's own, and output for others, stay. The counts
   * go down only once all of it is queued: a count's last one wakes the
   * senders waiting behind it, and a woken fiber may run at once, inside
   * this call (Deferred.doneUnsafe).
   */
  private handOverParked(
    peer: Peer,
    instance: Peer | undefined,
    forwarded: Map<string, OutboundMessage | true> | undefined,
    handed: Array<Written> | undefined
  ): void {
    const parked = peer.parked
    const taken: Array<Returnable | ControlFrame> = []
    let kept = 0
    for (let i = 0; i < parked.length; i++) {
      const entry = parked[i]!
      const item = entry[1]
      if (entry[0] === peer && (isStranded(item, peer) || isStrandedControl(item, peer))) taken.push(item)
      else parked[kept++] = entry
    }
    if (taken.length === 0) return
    parked.length = kept
    for (let i = 0; i < taken.length; i++) {
      this.side.controls.left(taken[i]!)
      this.handOne(peer, taken[i]!, instance, forwarded, handed)
    }
    for (const item of taken) {
      if (!isMessage(item)) continue
      uncountParkedMail(peer, item.mail.senderKey)
      if (!this.side.departureHolds.isEmpty) this.side.departureHolds.offered(peer, item)
    }
    if (kept === 0 && this.side.unpark(peer)) this.side.parkedOut(peer)
  }

  /**
   * `reader`'s session was taken over (P16; `endTakenOver`, after `handOver`
   * took the session's mail and notices): the answers its own parked list
   * still holds for it — `delivered` and the other replies to frames the
   * broker handled, parked behind output that did not fit — are forced into
   * its outbox now, in order, ahead of its `taken_over`: its client learns
   * how those frames ended. Left parked, the close would drop them
   * (`takeOwnParked` gives back only mail). Its messages to others stay
   * where they are: they keep their place in their recipients' order. A
   * list left empty no longer holds departures back (`parkedOut`). Not for
   * a connection already closing: its output ends where its close put it.
   */
  forceOwnAnswers(reader: Peer): void {
    const parked = reader.parked
    if (parked.length === 0 || reader.isClosing) return
    const answers: Array<OutboundItem> = []
    let kept = 0
    for (let i = 0; i < parked.length; i++) {
      const entry = parked[i]!
      if (entry[0] === reader && isAnswer(entry[1])) answers.push(entry[1])
      else parked[kept++] = entry
    }
    if (answers.length === 0) return
    parked.length = kept
    for (let i = 0; i < answers.length; i++) this.side.forceEnqueue(reader, answers[i]!)
    if (kept === 0 && this.side.unpark(reader)) this.side.parkedOut(reader)
  }

  /**
   * Takes what is left in an outbox at close and shuts it, so no item can slip
   * in: later offers are refused (their senders requeue the mail). The caller
   * detaches the peer, then calls `releaseWaiters`.
   */
  drainOnClose(peer: Peer): Array<OutboundItem> {
    const items = peer.takeOutbox()
    peer.outboxShut = true
    peer.parkedMail = undefined
    this.side.charge(peer, -peer.outboxChars)
    // Its held settling answers go with it (ParkedReplies.ts): the replies they waited for are refused here.
    if (this.side.replies.holding) this.side.replies.drop(peer)
    return items
  }

  /**
   * After the detach that took back what `drainOnClose` returned: senders
   * waiting for room here retry, find it shut, and take their items back —
   * after the older ones (a woken sender may resume at once).
   */
  releaseWaiters(peer: Peer): void {
    peer.leftReturnWaits = undefined
    this.side.roomMade(peer)
  }
}
