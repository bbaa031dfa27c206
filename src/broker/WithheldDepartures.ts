/**
 * Size: about 685 lines, over half of them this header and the JSDoc (the
 * code is about 290). Kept whole: the departures held for everyone, the
 * early releases and the per-recipient holds share one set of records —
 * every release ends in `releaseDeparture` or `owePair` whichever owner
 * took the hold, and a return's `unwithhold`, `holdReturn` and `takenOver`
 * rewrite the early releases' records and the entries they count — so a
 * split would have two modules write the same records. Split off from
 * Membership.ts (2026-12-05), which keeps the feed's side.
 *
 * The departures withheld from recipients: which `session_left` (and, at a
 * held return, which new `session_joined`) a recipient may not hear yet
 * because output of the departed session's is not in its outbox, and when
 * each is released into the feed or owed to that recipient
 * (docs/architecture.md, "Membership frames"). Membership.ts, the feed's
 * side, owns the feed's wake-ups and calls this module at each join, leave
 * and takeover; this module calls back into it to put a departure into the
 * feed and to wake a recipient's writer for what it is owed (`FeedSide`).
 *
 * Owns the departures held for every recipient (`held`), those released
 * early and withheld from the recipients of a parked output
 * (`releasedEarly`), and the holds' side of a `Peer`'s membership fields:
 * it takes and releases the holds counted in `withheldDepartures`, owes
 * what they release (`owedDepartures`, `owedJoins`), and writes the
 * return's waits (`returnWaits`, `leftReturnWaits`). Membership's writer
 * side takes the owed frames (`collect`), and it and the feed's `collect`
 * and `compact` settle entries with no holds left.
 *
 * Departures: a `session_left` must not reach a recipient before the
 * messages its session sent before leaving (C-BRK-33: a client fails the
 * asks waiting on a session when it hears it leave). The writer puts the
 * departures it collects after the output queued for the recipient
 * (OutputWrites.takeForWrite); output of the session's still parked behind a full
 * outbox is not queued yet, so a session that unregisters with output
 * parked (in the batch that unregisters, or by its drainer) has its
 * departure held here (`held`) until that output is in its recipients'
 * outboxes (`parkedOut`: the drainer offered the last of it, or the close
 * forced it through). A session that registers again meanwhile has its held
 * departure go into the feed first, before its new join: the feed keeps one
 * entry per session, so a recipient that saw it present hears it leave (a
 * `session_left` ahead of the new join, as after any leave and return the
 * recipient lags behind; the writer puts that pair after the session's
 * older mail in the outbox, Rejoins.ts) — but each recipient of the parked
 * output withholds the departure and the new join (and presence) together
 * until that output is out (`releaseEarly` with `rejoined`), and is then
 * owed both (`owePair`: `owedDepartures`, `owedJoins`), placed after the
 * output like any pair; the session's mail from since its return waits for
 * that (`Peer.returnWaits`, read by Output, which parks forced mail of
 * the return's behind the old output; `unwithholdBeforeNewMail` owes
 * the pair before any that got through anyway). A second return while
 * the first is withheld adds no hold or wait (`releaseEarly`); a return
 * after the old connection went on as another session makes that
 * connection's withheld departure a withheld return (`holdReturn`); a
 * recipient taken over hands its return holds to its new connection (with
 * the hold of a staged replace message waiting for room there, `StagedHolds`),
 * or owes it the pair at once when only its own flush's hold is left
 * (`takenOver`). So does a session whose
 * connection registers again as another session, whose reader would
 * otherwise hold the departure from every session for as long as one
 * recipient does not read; each recipient of that parked output withholds
 * the departure alone until the output is out. A hold so lasts at most
 * until the connection registers again or the registration timeout closes
 * it (which forces the parked output through); a withheld return, until
 * that output is out.
 *
 * A session whose connection closes has no batch to park with: a replace
 * message of its that waits for room in a recipient's full outbox
 * (ReplaceStaging.ts) stays staged. Its departure goes into the feed for
 * everyone else at once, but that recipient's writer passes over it
 * (`withholdDeparture`, the peer's `withheldDepartures`) until the last
 * such message is queued for it or dropped (`releaseDeparture`); then it is
 * owed, and written after that output like the feed's departures. One
 * recipient that does not read so holds the departure back from itself
 * only, and no outbox goes past its bounds. The same hold covers a
 * departed session's mail in a recipient's own parked output (its mailbox
 * flush that did not fit, and mail parked behind it, ForcedOutput.ts): when the
 * departure goes into the feed (`depart`) each such recipient withholds it
 * until its drainer offered the last of that mail (ParkedDepartures.holdBehindParked).
 * Each owner takes one hold per (recipient, session) and releases it once;
 * the recipient's entry counts them (`WithheldDeparture.holds`).
 *
 * A session that registers again while a recipient withholds its departure
 * (for the holds above, not for its own parked output) releases no hold:
 * its mail still waits there. Leaving again meanwhile, it
 * finds the owners' holds on that mail and takes no second one (one release
 * ends each); the recipient's writer passes over its departures, the one
 * the return superseded included (MembershipFeed.collect), and writes one
 * after the mail. A new join the writer writes meanwhile stands for the
 * departure it passed over (`passed` is cleared: the recipient hears the
 * session join again, as at a takeover). The last hold released while the
 * session is present owes nothing once the recipient's writer wrote that
 * join (a `session_left` now would follow it); before then, the entry stays
 * with no holds, since the session may leave again before the join is
 * written (joined and left unseen, the feed would then send nothing): the
 * writer deletes it when it writes the join, or, finding the session gone
 * again first, writes one `session_left` after the queued output if it had
 * passed a departure (MembershipFeed.collect; Membership.compact does the same when
 * it drops that departure first). Not so behind a takeover's custody hold
 * (CustodyHold.ts): there a return is withheld with its join
 * (`holdReturnBehindCustody`), and the hold's end owes the pair after the
 * held mail, so the holder hears the session leave (C-ASK-9); a takeover
 * of the holder moves that return with the carried hold (`takenOver`), and
 * another owner's hold outlasting the custody hold turns it into an
 * ordinary withheld return with its wait (`releaseBehindCustody`). A recipient whose session leaves
 * (unregisters, or closes) is owed and withheld nothing any more: `left`
 * drops its entries and owed departures, and the parked-output owner forgets
 * its holds on it unreleased (DepartureHolds.forget), so nothing of the old
 * session's reaches the connection's next registration (ReplaceStaging's
 * `left` hook, which runs first, has released its holds on it). Bounded: per
 * recipient, one entry per departed session with mail waiting for it or
 * whose return it has not heard, and at most one hold per owner.
 *
 * Cost: nothing per routed message. The writer's collect calls in here
 * only while a return is withheld with its waits (`unwithholdBeforeNewMail`)
 * or an owed join turned out void (`dropUnseenDepartures`); a join checks
 * two map sizes; the scans of the pending early releases run only while
 * one exists, which is rare.
 */
import type { OutFrame } from "../protocol/framing.ts"
import * as Encode from "./encode.ts"
import type { WithheldDeparture } from "./MembershipFeed.ts"
import type { OutboundItem, Peer } from "./Peer.ts"
import { type Session, sessionKey } from "./Registry.ts"

/** What the holds ask of Output's parked output, and how they wake the mail that waits for a return (ParkedDepartures.ts, Output's `departureSide`). */
export interface ParkedOutput {
  /** Whether output `reader` produced is parked, waiting for room (ParkedDepartures.hasParked). */
  readonly hasParked: (reader: Peer) => boolean
  /**
   * The recipients whose own parked output holds mail of `senderKey`'s for
   * them, with how many such messages (ParkedDepartures.parkedMailOf).
   */
  readonly parkedMailOf: (senderKey: string) => ReadonlyArray<readonly [Peer, number]>
  /**
   * Calls `releaseDeparture` for `recipient` once the `count` messages of
   * `senderKey`'s in its own parked output were offered; true when this is a
   * new hold, false when one from an earlier departure still waits for that
   * mail (ParkedDepartures.holdBehindParked).
   */
  readonly holdBehindParked: (recipient: Peer, senderKey: string, senderId: string, count: number) => boolean
  /**
   * `recipient`'s connection no longer holds the session its holds behind
   * its own parked output were taken for: they are dropped, unreleased
   * (ParkedDepartures.forgetDepartureHolds).
   */
  readonly forgetDepartureHolds: (recipient: Peer) => void
  /**
   * The recipients of `senderKey`'s messages that `reader` produced and
   * that still wait for room (ParkedDepartures.parkedRecipientsOf).
   */
  readonly parkedRecipientsOf: (reader: Peer, senderKey: string) => ReadonlyArray<Peer>
  /**
   * The connections whose takeover custody hold covers `senderKey`'s mail
   * and that take a new hold on session `senderId`'s departure, released
   * when the custody hold ends (CustodyHolds.holdDepartureBehindCustody).
   */
  readonly holdDepartureBehindCustody: (senderKey: string, senderId: string) => ReadonlyArray<Peer>
  /**
   * The connections that withhold session `senderId`'s departure behind
   * their custody hold, as it registers again (CustodyHolds.returnBehindCustody).
   */
  readonly returnBehindCustody: (senderKey: string, senderId: string) => ReadonlyArray<Peer>
  /** `recipient`'s `returnWaits` lost an entry: the mail that waited on it tries again (ParkedDepartures.returned). */
  readonly returned: (recipient: Peer) => void
}

/**
 * The holds a staged replace message takes on its departed sender's
 * `session_left` while it waits for room at a recipient (ReplaceStaging.ts,
 * `DepartureGate`): at a takeover of the recipient they follow its session
 * to the new connection (`WithheldDepartures.takenOver`).
 */
export interface StagedHolds {
  /**
   * `next` took session `recipientKey` over from `previous`: the hold taken
   * on `previous`'s departure of session `senderKey` for a staged message
   * waiting for room now stands on `next`, and is released there. True
   * when there was one.
   */
  readonly moveHold: (previous: Peer, next: Peer, senderKey: string, recipientKey: string) => boolean
}

/** What the holds need of the feed's side (Membership). */
export interface FeedSide {
  /** `session`'s departure goes into its scope's feed, and the scope is marked changed. */
  readonly left: (session: Session) => void
  /** `recipient` is owed frames: its writer is woken, unless a tick waits already (or it is busy). */
  readonly wakeOwed: (recipient: Peer, session: Session) => void
}

/** The departures withheld from recipients until the output they follow is queued; see the module header. */
export class WithheldDepartures {
  private readonly output: ParkedOutput
  private readonly feed: FeedSide
  private readonly staged: StagedHolds
  /**
   * Sessions that unregistered while output of theirs was parked, by session
   * key, in the order they left: their departures are not in the feed until
   * that output is in its recipients' outboxes (`parkedOut`).
   */
  private readonly held = new Map<string, Session>()
  /**
   * Departures released from `held` before the output they waited for was
   * queued (the session, or its connection as another session, registered
   * again), by the reader
   * whose parked output that is: each
   * recipient of that output withholds the departure (`withholdDeparture`)
   * until the reader's parked output is out (`parkedOut`), one hold each.
   */
  private readonly releasedEarly = new Map<Peer, Array<readonly [Peer, string]>>()
  /**
   * Returns while a departure was held (`BrokerStats.returnsHeld`): a session
   * that registered again while output of its old connection was parked, so
   * that at least one recipient of that output withholds its departure and
   * new join together (`releaseEarly` with `rejoined`). Counted on that slow
   * path only, once per return; for the simulation's reach (`--held-return`).
   */
  returnsHeld = 0

  /**
   * @param output what Output tells of its parked output, and wakes the mail that waits for a return (Output).
   * @param feed puts departures into the feed and wakes writers (Membership).
   * @param staged moves a staged replace message's hold to a recipient's new connection at a takeover (ReplaceStaging).
   */
  constructor(output: ParkedOutput, feed: FeedSide, staged: StagedHolds) {
    this.output = output
    this.feed = feed
    this.staged = staged
  }

  /**
   * `session` registers (before its join goes into the feed): a departure
   * held for its id, or for its connection, goes into the feed first,
   * withheld from the recipients of the parked output it waited for
   * (`releaseEarly`); a departure of its id released early and withheld
   * alone becomes a withheld return (`holdReturn`). Two size checks while
   * nothing is held.
   */
  joining(session: Session): void {
    // Back while its departure is held, or its connection registered again as another session: the held
    // departure goes first (see "Departures" in the module header).
    if (this.held.size > 0) {
      for (const held of this.held.values()) {
        // Back: its departure goes first, before its join; the recipients of its parked output withhold both
        // until that output is out. Its connection going on as another session: they withhold the departure.
        if (held.key === session.key) this.releaseEarly(held, true)
        else if (held.peer === session.peer) this.releaseEarly(held, false)
      }
    }
    // Back after its connection went on as another session: the departure that return released is withheld
    // without the join so far; it is a return now, withheld with its join (`holdReturn`).
    if (this.releasedEarly.size > 0) this.holdReturn(session)
    // Back while a takeover's custody hold withholds its departure (CustodyHold.ts): a return too.
    for (const holder of this.output.returnBehindCustody(session.key, session.id)) this.holdReturnBehindCustody(holder, session)
  }

  /**
   * `session` registers again while `holder` withholds its departure behind
   * a takeover's custody hold (its mail from before it left still held
   * there): the entry becomes a withheld return (`WithheldDeparture.rejoined`),
   * so `holder`'s writer passes over the new join and presence too, and the
   * hold's end owes the pair (`owePair`), placed after that mail (Rejoins.ts).
   * Otherwise the new join, written meanwhile, would stand for the departure:
   * the holder would hear the session join again before its held mail and
   * never hear it leave (C-ASK-9). No `returnWaits` while the hold lasts:
   * the session's mail from since its return is held by the same hold (its
   * sender key is held), so it goes after the pair is owed. `behindCustody`: at a takeover of
   * `holder` the return moves to the next connection with the carried
   * hold (`takenOver`, CustodyHolds.takeOverHold), owed there at its end.
   * Called before the join goes into the feed. Another owner's hold on
   * the same departure (a staged replace message waiting for room at
   * `holder`, the sender's mail in `holder`'s own parked flush) may outlast
   * the custody hold: its end then gives the return its wait
   * (`releaseBehindCustody`), so the mail from since waits for the pair.
   */
  private holdReturnBehindCustody(holder: Peer, session: Session): void {
    const departure = holder.withheldDepartures?.get(session.id)
    if (departure === undefined || departure.rejoined) return
    departure.rejoined = true
    departure.behindCustody = true
    departure.since = session.space.feed.seq
  }

  /**
   * `previous`'s session was taken over by `next` (P16; `previous.session`
   * is already cleared, `next.session` set): the returns `previous`
   * withholds (`WithheldDeparture.rejoined`) move to `next` with the
   * return's holds (the early releases' records now name `next`) and its
   * waits (`Peer.returnWaits`), so the session's new mail, taken back to
   * `next`, still waits behind the old output (ForcedOutput.parkBehindReturn) and
   * `next` is owed the pair once that output is out. `next`'s feed starts
   * after both frames, so they count as passed: the session's client heard
   * the old incarnation present and nothing since. A return with no early
   * release left (the old output is out, forced into `previous`'s own parked
   * flush, say, whose hold is the one left) is owed to `next` at once: what
   * `previous` holds of the old mail is handed to `next` right after this
   * (OutputEnd.handOver), so the pair is placed after it. A hold of a
   * staged replace message of the session's waiting for room at the
   * recipient (ReplaceStaging.ts) moves to `next` too (`StagedHolds`): that
   * message is not handed over, it goes to `next` when `next` has room, and
   * the pair waits for it there (review revr3, D2). A return withheld
   * behind a takeover's custody hold (`behindCustody`) moves too, with that
   * hold's hold on it: the custody hold is the session's and `next` carries
   * it on (CustodyHolds.takeOverHold, which releases on `previous` only
   * what did not move), so `next` hears the held mail, then the pair, then
   * the mail from since — the same view as for any return `previous`
   * withheld, whether `next` is the client's own rejoin (whose asks
   * waiting on the departed session must end, C-ASK-9) or another
   * instance (review revhs). Holds of other owners
   * stay on `previous`, whose releases end there with no session to owe.
   * Nothing while `previous` withholds nothing.
   */
  takenOver(previous: Peer, next: Peer): void {
    const withheld = previous.withheldDepartures
    const session = next.session
    if (withheld === undefined || session === undefined || previous === next) return
    for (const [id, departure] of withheld) {
      if (!departure.rejoined) continue
      // A return withheld behind a custody hold moves with the hold, which `next` carries on
      // (CustodyHolds.takeOverHold, right after this): its end owes `next` the pair, after the held mail.
      let holds = departure.behindCustody ? 1 : 0
      for (const early of this.releasedEarly.values()) {
        for (let i = 0; i < early.length; i++) {
          const record = early[i]!
          if (record[0] === previous && record[1] === id) {
            early[i] = [next, id]
            holds++
          }
        }
      }
      const key = sessionKey(session.space.key, id)
      if (this.staged.moveHold(previous, next, key, session.key)) holds++
      const waits = previous.returnWaits
      if (holds === 0) {
        // The old output is out (no early release of the return's is left, no staged message waits): the holds left are other owners',
        // its own parked flush's (which the old output may have been forced into) — handed to `next` right
        // after this, with the old outbox's mail (OutputEnd.handOver), ahead of anything newer. So `next` is owed
        // the pair now, and its writer places it after that mail and before the mail from since (Rejoins.ts).
        // Not woken: `registered` and that mail are queued for it in this step. Mail waiting on `previous` for
        // the pair is refused there (its session is gone) and goes to `next`, once `previous` wakes it.
        ;(next.owedDepartures ??= new Set()).add(id)
        ;(next.owedJoins ??= new Set()).add(id)
        waits?.delete(key)
        continue
      }
      ;(next.withheldDepartures ??= new Map()).set(id, {
        passed: true,
        holds,
        rejoined: true,
        joinPassed: true,
        behindCustody: departure.behindCustody,
        since: departure.since
      })
      const wait = waits?.get(key)
      if (waits !== undefined && wait !== undefined) {
        ;(next.returnWaits ??= new Map()).set(key, wait)
        waits.delete(key)
      }
      departure.holds -= holds
      if (departure.holds === 0) withheld.delete(id)
    }
    if (withheld.size === 0) previous.withheldDepartures = undefined
    if (previous.returnWaits?.size === 0) previous.returnWaits = undefined
  }

  /**
   * `session` left (both callers cleared `peer.session`): what was owed or
   * withheld from it is dropped, its return's waits end (kept readable
   * while its connection is open), and its own departure goes into the
   * feed — once the output of its that was parked is in its recipients'
   * outboxes, when it unregistered with output parked (`unregistered`: its
   * own batch is being handled; a closed connection's parked output was
   * forced through before it left).
   */
  left(session: Session, unregistered: boolean): void {
    const peer = session.peer
    // Its connection no longer holds the session (both callers cleared `peer.session`): what was owed or
    // withheld from that session is nobody's now, and must not reach a later registration of the connection.
    peer.owedDepartures = undefined
    peer.owedJoins = undefined
    // A closed connection keeps its waits, and its waiters sleep on: its close wakes them once it gave
    // back the older mail it held (OutputEnd.releaseWaiters), and the mail that waited goes back after the
    // old output it waited for (ParkedDrain.place, `parkBehindReturn`). Woken here, a drainer runs at once
    // and its refused message reached the mailbox ahead of both. An open connection (unregistered) may
    // register again, so its waits end here; they stay readable for the mail that waited
    // (`leftReturnWaits`), which then goes back behind that old output too rather than racing its drainer.
    if (peer.returnWaits !== undefined && peer.state !== "closed") {
      peer.leftReturnWaits = peer.returnWaits
      peer.returnWaits = undefined
      this.output.returned(peer)
    }
    if (peer.withheldDepartures !== undefined) {
      peer.withheldDepartures = undefined
      this.output.forgetDepartureHolds(peer)
      if (this.releasedEarly.size > 0) this.forgetReleasedEarly(peer)
    }
    if (unregistered && this.output.hasParked(session.peer)) this.held.set(session.key, session)
    else this.depart(session)
  }

  /**
   * Session `departedId` leaves, its connection closed, with replace
   * messages for `recipient` waiting for room in its outbox
   * (ReplaceStaging.ts), or with mail of its in `recipient`'s own parked
   * output (`depart`): `recipient` gets its `session_left` only once they
   * are queued or dropped (`releaseDeparture`). Each owner takes one hold
   * per (recipient, session) and releases it once, whatever number of
   * departures it covers; see "Departures" in the module header.
   */
  withholdDeparture(recipient: Peer, departedId: string): void {
    const withheld = recipient.withheldDepartures ??= new Map()
    const departure = withheld.get(departedId)
    // A second hold keeps what the first saw: whether the writer passed the departure already.
    if (departure === undefined) {
      withheld.set(departedId, { passed: false, holds: 1, rejoined: false, joinPassed: false, behindCustody: false, since: 0 })
    } else departure.holds++
  }

  /**
   * One hold on `recipient`'s departure of session `departedId` is released:
   * the mail it waited for is queued (or dropped). With other holds on it,
   * nothing more; with none, the departure, if the recipient's writer passed
   * it meanwhile, is owed now — written after the output already queued —
   * unless the session is back. Back, and its new join written to the
   * recipient, nothing is owed; back, and that join not written yet, the
   * entry stays with no holds, for the writer to settle
   * (MembershipFeed.collect): the join stands for the departure, or, if the
   * session leaves again before it is written, the recipient still gets
   * one `session_left`. A no-op when none is withheld.
   */
  releaseDeparture(recipient: Peer, departedId: string): void {
    const withheld = recipient.withheldDepartures
    const departure = withheld?.get(departedId)
    if (withheld === undefined || departure === undefined || --departure.holds > 0) return
    if (departure.rejoined) return this.owePair(recipient, departedId, departure)
    const session = recipient.session
    if (session !== undefined && session.peer === recipient) {
      const feed = session.space.feed
      // Back, its join not written yet: it may leave again before it is (see "Departures" in the module header).
      if (feed.returnedSince(departedId, recipient.feedCursor)) return
      // Back, its join written: a session_left now would come after that join.
      if (feed.isPresent(departedId)) departure.passed = false
    }
    withheld.delete(departedId)
    if (withheld.size === 0) recipient.withheldDepartures = undefined
    if (!departure.passed || session === undefined || session.peer !== recipient) return
    ;(recipient.owedDepartures ??= new Set()).add(departedId)
    this.feed.wakeOwed(recipient, session)
  }

  /**
   * The hold `recipient` took on session `departedId`'s departure behind a
   * takeover's custody hold is released: that hold ended (its held mail is
   * back, ahead of anything newer), or moved on to another connection
   * (CustodyHolds.releaseHeldDepartures). A return withheld behind it
   * (`holdReturnBehindCustody`) whose departure another owner still holds
   * — a staged replace message of the session's waiting for room at
   * `recipient` — becomes an ordinary withheld return: the session's mail
   * from since its return, which the custody hold held until now, waits for
   * the pair (`Peer.returnWaits`, with `recipient` as the reader, whose
   * own drainer never offers that mail) instead of overtaking it and the
   * staged message (review revhs, R1). Then `releaseDeparture`.
   */
  releaseBehindCustody(recipient: Peer, departedId: string): void {
    const departure = recipient.withheldDepartures?.get(departedId)
    const session = recipient.session
    if (departure !== undefined && departure.behindCustody) {
      departure.behindCustody = false
      if (departure.holds > 1 && session !== undefined && session.peer === recipient) {
        const key = sessionKey(session.space.key, departedId)
        ;(recipient.returnWaits ??= new Map()).set(key, { id: departedId, since: departure.since, reader: recipient })
      }
    }
    this.releaseDeparture(recipient, departedId)
  }

  /**
   * The last hold on a departure withheld with the session's return
   * (`WithheldDeparture.rejoined`) is gone: what the recipient's writer
   * passed over is owed — the `session_left` if it passed the departure,
   * the new `session_joined` if it passed that — and goes after the queued
   * output, the pair placed after the session's older mail (Rejoins.ts).
   * What it did not pass yet it meets in the feed as usual: a departure and
   * a return (or a second departure, then one `session_left`).
   */
  private owePair(recipient: Peer, departedId: string, departure: WithheldDeparture): void {
    const withheld = recipient.withheldDepartures
    if (withheld !== undefined) {
      withheld.delete(departedId)
      if (withheld.size === 0) recipient.withheldDepartures = undefined
    }
    const session = recipient.session
    if (session === undefined || session.peer !== recipient) return
    if (departure.passed) (recipient.owedDepartures ??= new Set()).add(departedId)
    if (departure.joinPassed) (recipient.owedJoins ??= new Set()).add(departedId)
    if (departure.passed || departure.joinPassed) this.feed.wakeOwed(recipient, session)
    // Owed from now on: the session's mail from since its return may follow the pair. Last: a woken
    // drainer runs at once (Deferred.doneUnsafe), and the writer it flushes must find the pair owed.
    const waits = recipient.returnWaits
    if (waits !== undefined && waits.delete(sessionKey(session.space.key, departedId))) {
      if (waits.size === 0) recipient.returnWaits = undefined
      this.output.returned(recipient)
    }
  }

  /**
   * Mail of session `departedId` from since its return reached `recipient`'s
   * outbox while its departure and return are withheld from it (another
   * connection of the session's routed it there before the departed
   * session's parked output was out): no message may precede its sender's
   * join, so the pair is owed now (the old output may then come after the
   * `session_left`: the price of not holding the new mail back, which
   * `Peer.returnWaits` does for all but forced output), and the entry goes
   * with every hold on it, the return's records here dropped, other owners'
   * releases then finding nothing. Rare: a scan of the pending releases.
   */
  private unwithhold(recipient: Peer, departedId: string, departure: WithheldDeparture): void {
    for (const [reader, early] of this.releasedEarly) {
      const kept = early.filter(([to, id]) => to !== recipient || id !== departedId)
      if (kept.length === 0) this.releasedEarly.delete(reader)
      else if (kept.length !== early.length) this.releasedEarly.set(reader, kept)
    }
    this.owePair(recipient, departedId, departure)
  }

  /**
   * `reader`'s parked output is all in its recipients' outboxes: the
   * departures held behind it go into the feed, and those a return released
   * early are released for the recipients that withheld them.
   */
  parkedOut(reader: Peer): void {
    if (this.releasedEarly.size > 0) {
      const early = this.releasedEarly.get(reader)
      if (early !== undefined) {
        this.releasedEarly.delete(reader)
        for (const [recipient, departedId] of early) this.releaseDeparture(recipient, departedId)
      }
    }
    if (this.held.size === 0) return
    for (const session of this.held.values()) if (session.peer === reader) this.release(session)
  }

  /** `recipient`'s session left: the holds it took for departures released early are dropped unreleased. */
  private forgetReleasedEarly(recipient: Peer): void {
    for (const [reader, early] of this.releasedEarly) {
      const kept = early.filter(([to]) => to !== recipient)
      if (kept.length === 0) this.releasedEarly.delete(reader)
      else if (kept.length !== early.length) this.releasedEarly.set(reader, kept)
    }
  }

  /**
   * A held departure goes into the feed while the session's output still
   * waits for room, because the session registers again (`rejoined`), or its
   * connection registers as another session: each recipient of that output
   * withholds the departure until it is out (`parkedOut`), so none hears the
   * session leave before its last messages (C-BRK-33), and the others hear
   * it at once. At a return the recipient withholds the new join (and
   * presence) too (`WithheldDeparture.rejoined`), and is owed both once the
   * output is out: the join must not stand for the departure, or the
   * recipient would never hear the session leave (C-ASK-9).
   */
  private releaseEarly(session: Session, rejoined: boolean): void {
    const reader = session.peer
    let withheldReturn = false
    for (const recipient of this.output.parkedRecipientsOf(reader, session.key)) {
      const to = recipient.session
      if (to === undefined || to.space !== session.space || to.id === session.id) continue
      // Back again while an earlier return is withheld here (its output, from this reader, waits for that
      // return's pair): the first entry holds, with its wait (its `since`, its reader). The pair is owed once
      // the first old output is out, and this reader's mail comes after it; a second hold or wait would let
      // this reader's mail through first (tagged no later than its own `since`).
      if (rejoined && recipient.withheldDepartures?.get(session.id)?.rejoined === true) continue
      this.withholdDeparture(recipient, session.id)
      if (rejoined) {
        const departure = recipient.withheldDepartures?.get(session.id)
        if (departure !== undefined) {
          withheldReturn = true
          departure.rejoined = true
          departure.since = Math.max(departure.since, session.presentSince)
          // The session's mail from since its return waits for the pair (ParkedOrder.waitsForReturn).
          ;(recipient.returnWaits ??= new Map()).set(session.key, { id: session.id, since: departure.since, reader })
        }
      }
      const early = this.releasedEarly.get(reader)
      if (early === undefined) this.releasedEarly.set(reader, [[recipient, session.id]])
      else early.push([recipient, session.id])
    }
    if (withheldReturn) this.returnsHeld++
    this.release(session)
  }

  /**
   * `session` registers again while departures of its id released early
   * (its old connection registered as another session) are withheld from
   * the recipients of that connection's parked output: each such entry
   * becomes a withheld return (`WithheldDeparture.rejoined`), so the new
   * join waits with the departure and the new mail waits for both
   * (`Peer.returnWaits`); otherwise the join would be written with no
   * `session_left` before it, and the new mail would overtake the old
   * output (C-ASK-9, C-BRK-33). Called before the join goes into the feed:
   * the feed's sequence now is at or past every tag of the old
   * incarnation's and before the new one's. A scan of the pending early
   * releases, which are rare.
   */
  private holdReturn(session: Session): void {
    const since = session.space.feed.seq
    for (const [reader, early] of this.releasedEarly) {
      for (const [recipient, id] of early) {
        if (id !== session.id || recipient.session?.space !== session.space) continue
        const departure = recipient.withheldDepartures?.get(id)
        if (departure === undefined || departure.rejoined) continue
        departure.rejoined = true
        departure.since = since
        ;(recipient.returnWaits ??= new Map()).set(session.key, { id, since, reader })
      }
    }
  }

  /** A held departure goes into the feed: its parked output is out, or the session is back. */
  private release(session: Session): void {
    this.held.delete(session.key)
    this.depart(session)
  }

  /**
   * `session`'s departure goes into the feed. A recipient whose own parked
   * output holds mail of its (a mailbox flush that did not fit, and mail
   * parked behind it: ForcedOutput.ts) withholds it until that mail is offered —
   * also when the session is back already (a held departure released by its
   * return): that recipient passes over the departure the return superseded.
   * One check while no reader parks output.
   */
  private depart(session: Session): void {
    for (const [recipient, count] of this.output.parkedMailOf(session.key)) {
      if (recipient === session.peer || recipient.session?.space !== session.space) continue
      // One hold per recipient: an earlier departure's, still waiting for that mail, covers this one.
      if (this.output.holdBehindParked(recipient, session.key, session.id, count)) this.withholdDeparture(recipient, session.id)
    }
    // Likewise behind a takeover's custody hold on its mail (CustodyHold.ts), until the hold ends.
    for (const holder of this.output.holdDepartureBehindCustody(session.key, session.id)) this.withholdDeparture(holder, session.id)
    this.feed.left(session)
  }

  /**
   * Drops from `departures` (from index `from`: what the feed's collect
   * added) the `session_left` of each session in `gone`: a return whose join
   * its writer passed over while it was withheld, and that left again
   * before the join was owed and written. The recipient never saw that
   * return, so its departure is not one it must hear; the departure it saw
   * is the one owed with the join (`owePair`, written before `from`; none
   * if it never saw the session present). Called by Membership.collect.
   */
  dropUnseenDepartures(gone: ReadonlyArray<string>, departures: Array<OutFrame>, from: number): void {
    for (const id of gone) {
      const frame = Encode.sessionLeftFrame(id)
      const at = departures.indexOf(frame, from)
      if (at >= 0) departures.splice(at, 1)
    }
  }

  /**
   * Ends the withholding of each returned session's departure and join
   * (`WithheldDeparture.rejoined`) whose mail from since its return is among
   * `items` (`peer`'s outbox): `unwithhold`. One scan of the outbox, only
   * while a return is withheld with its waits (`Peer.returnWaits`, keyed by
   * sender key: no key is built here). Rare since forced mail parks behind
   * the old output (ForcedOutput.parkBehindReturn): what reaches the outbox
   * anyway is forced while that output is not parked with a drainer.
   * Called by Membership.collect, before it takes what `peer` is owed.
   */
  unwithholdBeforeNewMail(
    peer: Peer,
    items: ReadonlyArray<OutboundItem>,
    withheld: Map<string, WithheldDeparture>
  ): void {
    for (let i = 0; i < items.length; i++) {
      const item = items[i]!
      if (typeof item !== "object" || !("mail" in item)) continue
      const wait = peer.returnWaits?.get(item.mail.senderKey)
      if (wait === undefined || item.senderSince <= wait.since) continue
      const departure = withheld.get(wait.id)
      if (departure !== undefined && departure.rejoined) this.unwithhold(peer, wait.id, departure)
      if (peer.returnWaits === undefined) return
    }
  }
}
