/**
 * Size: about 610 lines, past the ~400 guideline, over half of them this
 * header and the JSDoc: one concept, the holds' lifecycle, whose every
 * step (take, carry, adopt, keep, end, the departures behind a hold) reads
 * and writes the same map of holds and the holders' counts; what a hold
 * keeps or may be given back of a reply (`keepsReply`, for a settling
 * answer) or of a withdrawn message (`mayGiveBack`), and which closes it waits for and what it keeps (`awaitedFor`,
 * `keptFor`, for a reply that marks the asks they hold), read the same holds.
 *
 * A takeover's hold behind the old connection's custody (`received-v1`,
 * P16; simulation seed 81).
 *
 * At a takeover by another client instance (not the client's own rejoin),
 * the mail the old connection wrote and its client never confirmed reading
 * (its custody, Custody.ts), and the part of its write in progress that its
 * socket had taken, stay with the old connection until it closes: its client
 * may still be alive and confirm them while the connection closes
 * (`PeerReader.confirmWhileClosing`), and then they must not be delivered
 * again to the new instance. What is left unconfirmed comes back at that
 * close (`Router.detach`), to the session's new connection. Mail of the same
 * senders reaching the new connection meanwhile — the old outbox's, handed
 * over at once (`OutputEnd.handOver`), and newer mail — would overtake it.
 *
 * So the new connection holds, until the old close, the messages of exactly
 * those senders (per sender: others' mail flows at once): routed mail is
 * parked with its sender's batch and its drainer waits (the sender is slowed,
 * as behind a full outbox, so nothing held grows without bound); mail forced
 * to it (handed over, requeued, a due replace message) is kept here, in
 * order — only mail that already existed, so bounded by what the broker
 * holds anyway. A control frame about a held sender's message to the
 * session (a cancel, a supersede: ControlFrame.ts) is held the same way, in
 * its order: routed, it parks with its sender's batch; forced (given back,
 * handed over), it is kept here — so it never reaches the new connection
 * ahead of the message it is about, kept here or in the custody (review
 * revh3). At the old close, its custody and untaken write come back
 * first, then what is kept here, and the waiting drainers are woken: the
 * sender's order holds. No hold is taken when nothing of the old
 * connection's is unconfirmed: a takeover of a client that confirmed all it
 * read holds nothing.
 *
 * Only messages queued for the session taken over are held (the holder may
 * leave it and register as another: its mail then flows). A held sender that
 * leaves while the hold lasts is heard leaving after its held mail: its
 * `session_left` is withheld from the holder until the hold ends
 * (`departures`, `CustodyHolds.holdDepartureBehindCustody`), as behind a
 * recipient's own parked output (WithheldDepartures.ts). One that leaves
 * and registers again meanwhile is a withheld return
 * (`CustodyHolds.returnBehindCustody`, WithheldDepartures.joining): its new
 * join waits with the departure, and the holder hears the pair after the
 * held mail, before the sender's mail from since (held here too).
 *
 * The hold ends with the old close, which a takeover always starts and
 * which is bounded (`endTakenOver` ends the connection; its `finish` waits at
 * most END_GRACE for the flush, then destroys it). Were it never to come, the
 * held senders' mail for that session would wait with it (their readers held
 * back), as they would behind a recipient that never reads.
 *
 * The hold is the session's, one per session (`CustodyHolds` keeps them by
 * session key; `Peer.custodyHolds` only counts a connection's, for the
 * per-message path's one field test): a connection that left a session
 * whose hold it holds and registered as another holds the other's hold
 * apart, and the first stays with it until its own old close. A
 * takeover of the session's connection carries its hold over to the
 * next one (`CustodyHolds.takeOverHold`), adding the senders of that intermediate
 * connection's own custody, and the hold then ends only when every
 * connection it waits for has closed (`pending`); one closing while another
 * is awaited has its held senders' mail put at the hold's front
 * (`CustodyHolds.keepReturned`: a sender's custody is older than its mail kept
 * meanwhile). If the new connection closes (or leaves the session) first,
 * what the hold keeps (and what the held drainers offer then) stays with
 * it; the session registering anew before the old close takes the hold
 * over on its new connection (`CustodyHolds.adoptHold`), its mailbox's flush
 * held with the rest. The holder's own output that the hold covers (its
 * mailbox's flush, output handed over) is kept, not waited for: that
 * drainer gates the connection's reading. It is kept when its batch ends
 * (`Output.parkFor`), not parked for the drainer to bring here: parked, the
 * old close could come first (its custody then forced behind that flush),
 * or a held sender's newer mail kept here ahead of it. While the session
 * is away the hold still waits, and a held sender's message requeued
 * meanwhile (forced at its sender's close, given back by a closing
 * connection) is kept here too (`CustodyHolds.keepWhileAway`, from
 * MailReturns.requeue), to follow the custody into the mailbox. Mail
 * *sent* to the session while it is away goes to the mailbox at once (its
 * bounds, its store, its flush's receipt routes); an old close that comes
 * then puts the held senders' mail the mailbox took meanwhile behind what
 * it gives back (`Router.detach`: `MailDelivery.sentWhileHeld`,
 * `queueBehind`), so the flush still keeps each sender's order.
 *
 * Here too, Output's side of the holds (split from Output.ts, 2026-12-05):
 * the holds not ended yet and their lifecycle (`CustodyHolds`: taken,
 * carried over, adopted, counted down, ended, the departures withheld
 * behind them) and the per-message test of whether one holds an item
 * (`CustodyHolds.holdOf`), and whether a connection the hold waits for
 * (`CustodyHold.awaited`) may still give back the very message a cancel is
 * about — its custody, its write in progress, or that write's untaken rest
 * once its close abandoned it — in which case the cancel is put off until
 * the hold ends (`CustodyHolds.deferCancel`, asked by Receipts: the old
 * client may yet confirm that message as it closes, and only the close
 * tells whether the new instance gets it; a hold kept for the sender's
 * other mail does not bring a message its old client confirmed to the new
 * one). A supersede never waits so: its new message is delivered at once
 * (Receipts.supersedes). Whether a hold may still bring a cancelled or
 * superseded message to its holder — kept, or with a connection it waits
 * for — is asked for the withdrawals' list (`CustodyHolds.mayGiveBack`,
 * MayStillWait.ts's `mayStillWait`). Ownership: `Peer.custodyHolds` and `Peer.releasesHold`
 * are written only by `CustodyHolds`; what a hold keeps (`items`) is put
 * there by Output as it queues, parks or forces output, and at a close by
 * `keepReturned`; its `departures` are cleared when its holder's
 * session leaves (`ParkedDepartures.forgetDepartureHolds` →
 * `CustodyHolds.forgetDepartures`).
 *
 * Counted (`CustodyHolds.counts`, read into `BrokerStats`): holds taken,
 * carried over and adopted, messages kept on a hold, drainer offers that
 * waited for one, departures withheld behind one and returns withheld so,
 * and holds on which a settling answer waited for a reply an awaited close
 * may give back —
 * an increment where a hold is made or used, nothing on the per-message
 * path while none is held; for the simulation's reach (docs/testing.md,
 * "A takeover's custody hold").
 */
import type { ControlFrame } from "./ControlFrame.ts"
import { carriesMessage, isMessage, isSenderOrdered, mailAmong, type SenderOrdered, senderKeyOf } from "./OutboundItems.ts"
import type { OutboundItem, Peer } from "./Peer.ts"

/** How often the custody holds were made and used since the broker started (`BrokerStats.custodyHolds*`). */
export interface CustodyHoldCounts {
  /** Holds taken at a takeover (a new one: the session had none). */
  taken: number
  /** Holds carried over by a further takeover before the old close. */
  carried: number
  /** Holds adopted by a new registration of the session (its holder had closed or left it). */
  adopted: number
  /** Messages kept on a hold: forced to its holder, its own parked flush, or an awaited close's custody. */
  kept: number
  /** Drainer offers that waited for a hold to end (the held sender slowed). */
  waits: number
  /** Departures of held senders withheld from a hold's holder until the hold ends. */
  departures: number
  /** Returns of held senders whose departure a holder withheld: withheld with their new join (`returnBehindCustody`). */
  returns: number
  /**
   * Holds on which a settling answer waited for a reply written to a
   * connection the hold waits for and not confirmed there (`keepsReply`,
   * review settle4), once per hold.
   */
  awaitedReplies: number
}

/** The senders whose messages a connection holds until an old connection's close, and what it keeps of them. */
export class CustodyHold {
  /** The registry key of the session taken over: only messages queued for it are held. */
  readonly key: string
  /** Sender keys with mail in the custody (or write in progress) of a connection this hold waits for. */
  readonly senders: Set<string>
  /**
   * Messages of those senders forced to the holding connection meanwhile,
   * and control frames about their messages (ControlFrame.ts), oldest first.
   */
  readonly items: Array<OutboundItem> = []
  /**
   * Ids of sessions whose departure the holder withholds until the hold ends
   * (`CustodyHolds.holdDepartureBehindCustody`): a held sender that left while its
   * mail waited here or in a custody must not be heard leaving before it.
   */
  readonly departures: Array<string> = []
  /** The closes still to come before the hold ends: one per connection taken over with mail unconfirmed. */
  pending = 1
  /**
   * The connections whose close the hold waits for (`pending` of them):
   * what they may still give back is asked of them by `deferCancel`.
   */
  readonly awaited: Array<Peer> = []
  /** The connection that holds (the session's current one). */
  holder: Peer
  /**
   * Cancels this hold put off until it ends (`CustodyHolds.deferCancel`):
   * each is handled again after the last awaited close gave back what it
   * gives back (Router.detach), oldest first.
   */
  readonly cancels: Array<() => void> = []
  /**
   * Whether a settling answer was found waiting on this hold for a reply a
   * connection it waits for may give back (`CustodyHolds.keepsReply`):
   * counted once per hold (`CustodyHoldCounts.awaitedReplies`).
   */
  awaitedReply = false

  constructor(key: string, senders: Set<string>, holder: Peer) {
    this.key = key
    this.senders = senders
    this.holder = holder
  }

  /**
   * Whether `item` is one this hold keeps back: a message for the session
   * taken over from a held sender, or a control frame about one.
   */
  holds(item: SenderOrdered): boolean {
    return item.to === this.key && this.senders.has(senderKeyOf(item))
  }
}

/**
 * Whether `peer` may still give back, at its close, the message of record
 * key `messageKey`: it is in its custody (written, not confirmed), in its
 * write in progress, or in the untaken rest of a write its close abandoned
 * already (`Peer.untakenRest`, kept from `Router.abandonWrites` until
 * `Router.detach`). A scan, only for a cancel or supersede while a hold
 * waits for `peer` (`CustodyHolds.deferCancel`).
 */
const mayStillGiveBack = (peer: Peer, messageKey: string): boolean => {
  if (peer.custody?.holdsMessage(messageKey) === true) return true
  return carriesMessage(peer.writer.inFlight?.returnable, messageKey) || carriesMessage(peer.untakenRest, messageKey)
}

/** The index of the last reply (a message with `replyTo`) to session `key` among `items`, or -1 (a scan). */
const lastReplyTo = (items: ReadonlyArray<OutboundItem> | undefined, key: string): number => {
  if (items === undefined) return -1
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i]!
    if (isMessage(item) && item.to === key && item.mail.message.replyTo !== undefined) return i
  }
  return -1
}

/**
 * Whether `peer` (a connection a takeover's hold waits for) may still give
 * back, at its close, a reply to session `key`: one in its custody (written,
 * not confirmed), its write in progress, or that write's untaken rest. A
 * scan, only for a settling answer while a hold waits (`CustodyHolds.keepsReply`).
 */
const mayGiveBackReply = (peer: Peer, key: string): boolean =>
  peer.custody?.holdsReplyTo(key) === true || lastReplyTo(peer.writer.inFlight?.returnable, key) >= 0 ||
  lastReplyTo(peer.untakenRest, key) >= 0

/**
 * The senders of the messages for session `key` that `peer` (taken over,
 * its client another instance) may give back at its close: those in its
 * custody and in its write in progress. Undefined when there are none, or
 * when `peer` has no custody (a base client's written mail is delivered).
 * A scan, at a takeover only.
 */
export const sendersToHold = (peer: Peer, key: string): Set<string> | undefined => {
  const custody = peer.custody
  if (custody === undefined) return undefined
  const senders = new Set<string>()
  custody.sendersFor(key, senders)
  const batch = peer.writer.inFlight
  if (batch !== undefined) {
    for (const item of batch.returnable) if ("mail" in item && item.to === key) senders.add(item.mail.senderKey)
  }
  return senders.size === 0 ? undefined : senders
}

/**
 * The takeovers' custody holds not ended yet, and Output's side of them:
 * taking a hold at a takeover (or carrying one over), a new registration
 * adopting it, each awaited close counting it down, and what comes back and
 * goes on at its end. Per connection event only (takeover, registration,
 * close, a leave); the per-message test is `holdOf`, and what a
 * hold keeps is put there by Output (`enqueue`, `place`, `parkFor`,
 * `forceEnqueue`).
 */
export class CustodyHolds {
  /**
   * The holds not ended yet, by the registry key of the session each holds
   * for (one per session): empty but for a takeover's short while.
   */
  private readonly holds = new Map<string, CustodyHold>()
  private readonly wake: (peer: Peer) => void
  private readonly releaseDeparture: (recipient: Peer, senderId: string) => void
  /** How often holds were made and used (module header, "Counted"). */
  readonly counts: CustodyHoldCounts = { taken: 0, carried: 0, adopted: 0, kept: 0, waits: 0, departures: 0, returns: 0, awaitedReplies: 0 }

  /**
   * @param wake the senders waiting on `peer` (its drainers, its held senders') try again (ParkedOrder.wakeWaiters).
   * @param releaseDeparture a departure withheld from `recipient` behind a hold is released (FeedSource.releaseBehindCustody).
   */
  constructor(wake: (peer: Peer) => void, releaseDeparture: (recipient: Peer, senderId: string) => void) {
    this.wake = wake
    this.releaseDeparture = releaseDeparture
  }

  /**
   * `fresh` took session `key` over from `old` (P16), before `old`'s mail is
   * handed over: when `senders` have mail `old` may still give back at its
   * close (its custody: `sendersToHold`), `fresh` holds their messages
   * until then (CustodyHold.ts). A hold session `key` still has for an
   * earlier takeover (held by `old`) is carried over to `fresh` instead —
   * with `senders` added to it, and `old`'s close to wait for too — and the
   * drainers waiting on its holder try again (their mail now goes to
   * `fresh`'s hold). A return withheld behind it moved to `fresh` just
   * before (WithheldDepartures.takenOver) and stays withheld behind it
   * there; the departures withheld behind it alone are released on `old`
   * (no session holds them there now; `fresh`'s feed starts after them, and
   * `fresh` never heard the departed session present).
   * A hold `old` holds for another session, one it left, stays with `old`.
   */
  takeOverHold(old: Peer, fresh: Peer, key: string, senders: Set<string> | undefined): void {
    // The hold is the session's, whichever connection holds it now: one `old` holds for another session
    // it left (and registered this one since) stays where it is, waiting for its own old close.
    const carried = this.holds.get(key)
    if (carried !== undefined) {
      const holder = carried.holder
      this.counts.carried++
      this.releaseCarriedDepartures(carried, fresh)
      this.moveHold(carried, fresh)
      if (senders !== undefined) {
        for (const sender of senders) carried.senders.add(sender)
        carried.pending++
        carried.awaited.push(old)
        old.releasesHold = carried
      }
      this.wake(holder)
      return
    }
    if (senders === undefined) return
    const hold = new CustodyHold(key, senders, fresh)
    this.counts.taken++
    fresh.custodyHolds++
    hold.awaited.push(old)
    old.releasesHold = hold
    this.holds.set(key, hold)
  }

  /**
   * `peer` registered session `key` anew (no takeover) while a hold for it
   * still waits: its holder closed, or left the session, before the old
   * connection's close. The hold is the session's: `peer` takes it, so the
   * held senders' mail to it (the mailbox's flush included) still waits for
   * that close — whatever other session's hold `peer` holds (each is
   * apart). A look-up by key, only while a hold exists.
   */
  adoptHold(peer: Peer, key: string): void {
    if (this.holds.size === 0) return
    const hold = this.holds.get(key)
    if (hold === undefined) return
    const holder = hold.holder
    if (holder === peer || holder.session?.key === key) return
    this.counts.adopted++
    this.releaseHeldDepartures(hold)
    this.moveHold(hold, peer)
    this.wake(holder)
  }

  /**
   * The connections the hold for session `key` still waits for (taken over
   * by another client instance, not closed yet), if one exists: where a copy
   * of an ask its new connection answers may still be held unconfirmed
   * (AnsweredCopies.markAnswered). A size test while no hold exists, else a look-up.
   */
  awaitedFor(key: string): ReadonlyArray<Peer> | undefined {
    if (this.holds.size === 0) return undefined
    return this.holds.get(key)?.awaited
  }

  /**
   * What the hold for session `key` keeps (its held senders' mail forced to
   * its holder meanwhile, oldest first), if one exists: where a copy of an
   * ask the session's new connection answers may wait (AnsweredCopies.markAnswered). A
   * size test while no hold exists, else a look-up.
   */
  keptFor(key: string): ReadonlyArray<OutboundItem> | undefined {
    if (this.holds.size === 0) return undefined
    return this.holds.get(key)?.items
  }

  /**
   * `old` is closing (Router.detach): one of the closes the hold its
   * takeover set waits for, if any. Returned with `pending` counted down:
   * at 0 the hold is ended before `old`'s custody comes back (which must not
   * be held), for its kept mail to go back after that custody, then
   * `heldReleased` and the cancels it put off (`cancels`); above 0 (a carried hold waits for another close),
   * `old`'s held senders' mail goes to the hold's front (`keepReturned`).
   */
  endHold(old: Peer): CustodyHold | undefined {
    const hold = old.releasesHold
    if (hold === undefined) return undefined
    old.releasesHold = undefined
    const at = hold.awaited.indexOf(old)
    if (at >= 0) hold.awaited.splice(at, 1)
    if (--hold.pending > 0) return hold
    hold.holder.custodyHolds--
    this.holds.delete(hold.key)
    return hold
  }

  /**
   * A connection `hold` waits for closed while it waits for another: of
   * what came back (`returned`, oldest first) the held senders' messages go
   * ahead of what the hold keeps — each sender's custody is older than its
   * mail kept meanwhile — and the rest is returned, to go back now.
   */
  keepReturned<A extends OutboundItem>(hold: CustodyHold, returned: ReadonlyArray<A>): ReadonlyArray<A> {
    const kept: Array<OutboundItem> = []
    const rest: Array<A> = []
    for (const item of returned) {
      if (isSenderOrdered(item) && hold.holds(item)) kept.push(item)
      else rest.push(item)
    }
    if (kept.length > 0) {
      hold.items.unshift(...kept)
      this.counts.kept += kept.length
    }
    return rest
  }

  /** `item`, a message `hold` holds, is kept with it (after what it keeps) until it ends: Output's forced or own parked output. */
  keep(hold: CustodyHold, item: OutboundItem): void {
    hold.items.push(item)
    this.counts.kept++
  }

  /**
   * Message `item` comes back (requeued: its connection closed, or it was
   * forced to one that no longer holds its session) while its session is
   * away, and the session's hold still waits for an old close and covers
   * its sender: it is kept with the hold (`keep`), to go back after that
   * close's custody — to the session's next registration (`adoptHold`) or
   * the mailbox — rather than reach the mailbox ahead of it (review revhs,
   * R4). False otherwise (the caller puts it in the mailbox). A look-up by
   * key, only while a hold exists.
   */
  keepWhileAway(item: SenderOrdered): boolean {
    if (this.holds.size === 0) return false
    const hold = this.holds.get(item.to)
    if (hold === undefined || !hold.holds(item)) return false
    this.keep(hold, item)
    return true
  }

  /**
   * Whether the hold on session `key` keeps a reply to it (a message with
   * `replyTo`), or may still be given one back at an old close it waits
   * for: forced to its holder meanwhile (`items`), or written to a
   * connection it waits for and not confirmed read there — in its custody,
   * its write in progress or that write's untaken rest (`mayGiveBackReply`),
   * which that close gives back to the session's connection ahead of what
   * the hold keeps. Either way the broker accepted it, and an
   * `ask-expiry-v1` settling answer for that session waits for it
   * (ParkedReplies.ts) until the hold ends (`ParkedReplies.custodyEnded`) —
   * also when the old client confirms it as it closes after all: then no
   * reply follows, and the answer goes at that close. A size test while no
   * hold exists; else a look-up and a scan of what that hold keeps and of
   * what the connections it waits for may give back — per settling `list`,
   * and per release check while an answer is held, never per message.
   */
  keepsReply(key: string): boolean {
    if (this.holds.size === 0) return false
    const hold = this.holds.get(key)
    if (hold === undefined) return false
    if (lastReplyTo(hold.items, key) >= 0) return true
    for (const old of hold.awaited) {
      if (!mayGiveBackReply(old, key)) continue
      if (!hold.awaitedReply) {
        hold.awaitedReply = true
        this.counts.awaitedReplies++
      }
      return true
    }
    return false
  }

  /**
   * A hold ended and its kept mail went back: the departures its holder
   * withheld behind it are released (after that mail), and the drainers it
   * held offer again.
   */
  heldReleased(hold: CustodyHold): void {
    this.releaseHeldDepartures(hold)
    this.wake(hold.holder)
  }

  /**
   * Session `senderId` (`senderKey`) left: the connections whose custody
   * hold covers its mail withhold its `session_left` until the hold ends
   * (`heldReleased`), as behind their own parked output — its mail may still
   * be in the custody or kept in the hold. Returns those that take a new
   * hold (the caller takes it: WithheldDepartures.withholdDeparture); one
   * per hold and session. One check while no hold exists.
   */
  holdDepartureBehindCustody(senderKey: string, senderId: string): ReadonlyArray<Peer> {
    if (this.holds.size === 0) return []
    const found: Array<Peer> = []
    for (const hold of this.holds.values()) {
      if (!hold.senders.has(senderKey) || hold.holder.session?.key !== hold.key) continue
      if (hold.departures.includes(senderId)) continue
      hold.departures.push(senderId)
      this.counts.departures++
      found.push(hold.holder)
    }
    return found
  }

  /**
   * Session `senderId` (`senderKey`) registers again: the holders that
   * withhold its departure behind their hold (`holdDepartureBehindCustody`)
   * and hold its session still. Each withholds the return with it
   * (WithheldDepartures.joining): the new join must not stand for the
   * departure. Counts the entries that become returns (`counts.returns`),
   * not a second return of the same departure. One check while no hold
   * exists; a registration's, never per message.
   */
  returnBehindCustody(senderKey: string, senderId: string): ReadonlyArray<Peer> {
    if (this.holds.size === 0) return []
    const found: Array<Peer> = []
    for (const hold of this.holds.values()) {
      if (!hold.senders.has(senderKey) || hold.holder.session?.key !== hold.key) continue
      if (!hold.departures.includes(senderId)) continue
      found.push(hold.holder)
      // Counted once per withheld departure that becomes a return: a second return while the first is
      // withheld changes nothing (WithheldDepartures.holdReturnBehindCustody skips it), so it is not counted.
      if (hold.holder.withheldDepartures?.get(senderId)?.rejoined === false) this.counts.returns++
    }
    return found
  }

  /**
   * The hold `peer` keeps `item` back with, when it is a message for a
   * session whose hold `peer` holds (`Peer.custodyHolds`), from a sender
   * whose older mail an old connection may still give back at its close —
   * or a control frame about such a message (ControlFrame.ts: kept in order
   * behind that sender's kept mail, and its custody put at the front at a
   * close, so a cancel never overtakes the message it cancels); else
   * undefined. One field test while `peer` holds none (the per-frame path);
   * a map look-up while it does.
   */
  holdOf(peer: Peer, item: OutboundItem): CustodyHold | undefined {
    if (peer.custodyHolds === 0 || !isSenderOrdered(item)) return undefined
    const hold = this.holds.get(item.to)
    return hold !== undefined && hold.holder === peer && hold.senders.has(senderKeyOf(item)) ? hold : undefined
  }

  /**
   * A cancel about a message the hold `holder` keeps `control` back with
   * (`holdOf`) may not be answered yet when that hold waits for a
   * connection that may still give back the very message (in its custody,
   * its write in progress or that write's untaken rest): its client may
   * yet confirm it while closing (`PeerReader.confirmWhileClosing`), and
   * then the new instance never gets it, and a cancel it were sent would be
   * of a message it does not know. So `again` (the cancel handled anew) is
   * put off until the hold ends (`cancels`), when whether the message went
   * to the session's connection is known; true when it was put off. A hold
   * that covers the control's sender for another message changes nothing
   * (review revrc P2): false. Receipts asks, for a cancel during a hold only.
   */
  deferCancel(holder: Peer, control: ControlFrame, again: () => void): boolean {
    const hold = this.holdOf(holder, control)
    if (hold === undefined) return false
    for (const old of hold.awaited) {
      if (mayStillGiveBack(old, control.messageKey)) {
        hold.cancels.push(again)
        return true
      }
    }
    return false
  }

  /**
   * Whether the message `control` is about (a cancel's or supersede's, for
   * `holder`'s session) may still come to `holder` through a hold it holds:
   * kept there (`items`), or in the custody, write in progress or untaken
   * rest of a connection that hold waits for. False while `holder` holds
   * none (one field test); else a scan of the hold's kept items and of what
   * those connections hold — for a cancel or supersede only (Receipts'
   * `mayStillWait`; review revaw AW1).
   */
  mayGiveBack(holder: Peer, control: ControlFrame): boolean {
    const hold = this.holdOf(holder, control)
    if (hold === undefined) return false
    if (mailAmong(hold.items, control.messageKey, hold.items.length) !== undefined) return true
    for (const old of hold.awaited) if (mayStillGiveBack(old, control.messageKey)) return true
    return false
  }

  /**
   * `recipient`'s session left (ParkedDepartures.forgetDepartureHolds): the
   * departures it withheld behind the holds it holds are dropped unreleased,
   * as its other withheld departures are. The holds stay with it.
   */
  forgetDepartures(recipient: Peer): void {
    if (recipient.custodyHolds === 0) return
    for (const hold of this.holds.values()) if (hold.holder === recipient) hold.departures.length = 0
  }

  /** `hold` is held by `to` from now on (its previous holder's count goes down). */
  private moveHold(hold: CustodyHold, to: Peer): void {
    hold.holder.custodyHolds--
    hold.holder = to
    to.custodyHolds++
  }

  /**
   * `hold` is carried from its holder to `fresh`: the returns that moved to
   * `fresh` with it (WithheldDepartures.takenOver: `fresh` withholds them
   * behind the hold now) stay in `departures`, released at the hold's end;
   * the other departures are released on the old holder, once.
   */
  private releaseCarriedDepartures(hold: CustodyHold, fresh: Peer): void {
    const departures = hold.departures.splice(0)
    for (const id of departures) {
      if (fresh.withheldDepartures?.get(id)?.behindCustody === true) hold.departures.push(id)
      else this.releaseDeparture(hold.holder, id)
    }
  }

  /** The departures `hold`'s holder withheld behind it are released, once. */
  private releaseHeldDepartures(hold: CustodyHold): void {
    const departures = hold.departures.splice(0)
    for (const id of departures) this.releaseDeparture(hold.holder, id)
  }
}
