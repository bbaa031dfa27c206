/**
 * The membership feed as the broker uses it: `session_joined`,
 * `presence_update` and `session_left` reach every other session of a scope
 * through that scope's compacted `MembershipFeed`, pulled by each recipient's
 * writer (docs/architecture.md, "Membership frames").
 *
 * This module owns the set of scopes whose membership changed, wakes their
 * recipients' writers once per batch of changes (the notifier fiber calls
 * `notify`), keeps each feed's departed entries bounded, and is the only
 * writer of a `Peer`'s membership fields (`feedCursor`, `owedDepartures`, `withheldDepartures`,
 * `feedPending`; the feed's `collect`, which it calls, marks and settles that map's entries) and
 * of each space's `needsTick` set.
 *
 * A writer is woken with a FEED_TICK in its outbox, one at a time: `needsTick`
 * holds the recipients with none pending, so a batch of changes costs one
 * offer per recipient that can take it, and nothing for writers that are
 * already busy or blocked (a storm of joins with slow readers stays linear).
 *
 * Pacing: a round that woke many writers is followed by a short pause
 * (`paceAfter`) before the next, so a registration storm in a large scope
 * wakes each writer once per pause with every join since, not once per join
 * (issue 16: 1,000 joins into one scope were 500,000 writer wake-ups and
 * writes). Order is unaffected: a writer collects the feed before anything
 * else it writes (Output.takeForWrite), so no frame overtakes a join or
 * presence change made before it, and writes departures after what was
 * queued (a session's last messages precede its `session_left`); only the
 * moment an otherwise idle session hears of a change moves, by at most
 * PACE_MS.
 *
 * Departures: a `session_left` must not reach a recipient before the
 * messages its session sent before leaving (C-BRK-33: a client fails the
 * asks waiting on a session when it hears it leave). The writer puts the
 * departures it collects after the output queued for the recipient
 * (Output.takeForWrite); output of the session's still parked behind a full
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
 * recipient taken over hands its return holds to its new connection
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
 * flush that did not fit, and mail parked behind it, Output.ts): when the
 * departure goes into the feed (`depart`) each such recipient withholds it
 * until its drainer offered the last of that mail (Output.holdBehindParked).
 * Each owner takes one hold per (recipient, session) and releases it once;
 * the recipient's entry counts them (`WithheldDeparture.holds`).
 *
 * A session that registers again while a recipient withholds its departure
 * (for the holds below, not for its own parked output) releases no hold:
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
 * passed a departure (MembershipFeed.collect; `compact` does the same when
 * it drops that departure first). A recipient whose session leaves
 * (unregisters, or closes) is owed and withheld nothing any more: `left`
 * drops its entries and owed departures, and the parked-output owner forgets
 * its holds on it unreleased (DepartureHolds.forget), so nothing of the old
 * session's reaches the connection's next registration (ReplaceStaging's
 * `left` hook, which runs first, has released its holds on it). Bounded: per
 * recipient, one entry per departed session with mail waiting for it or
 * whose return it has not heard, and at most one hold per owner.
 *
 * When: a connection's batch that changed membership announces it as it
 * ends (`announce`, called by its reader), unless a pause is running; the
 * notifier fiber announces changes made outside a batch (a timeout, a
 * close) and those made during a pause, once it is over. A reader runs
 * from the socket's events, not in a fiber that gives the notifier a turn
 * between two of its batches: without `announce`, a session that
 * registers and leaves in two quick batches would be collected as joined
 * and left at once, which sends nothing (MembershipFeed.collect).
 *
 * Size: about 740 lines, over a third of them this header and the JSDoc
 * (`releaseEarly`, a departure released early when its connection registers
 * again, and the withheld return with `owePair` and `unwithholdBeforeNewMail`,
 * are the latest parts, then `holdReturn` and `takenOver`); kept whole because this class is the single writer of a `Peer`'s feed
 * fields, which the departure holds and the feed's wake-ups both write. A
 * split would move the departure holds (`withholdDeparture` to `owePair`,
 * with `releasedEarly`) to a module of their own writing those fields; the
 * held return (2026-12-05) makes that split due, and it is not done in the
 * stop that grew it, while its fixes were still being reviewed.
 */
import { Queue } from "effect"
import type { OutFrame } from "../protocol/framing.ts"
import * as Encode from "./encode.ts"
import type { FeedSource } from "./Output.ts"
import type { WithheldDeparture } from "./MembershipFeed.ts"
import type { OutboundItem, Peer } from "./Peer.ts"
import type { Rejoins } from "./Rejoins.ts"
import { type ScopeSpace, type Session, sessionKey } from "./Registry.ts"
import { signal } from "./RouterContext.ts"

/** Writers woken in one round above which the next round waits PACE_MS. */
export const PACE_ABOVE = 64

/** The pause after a round that woke more than PACE_ABOVE writers, in milliseconds. */
export const PACE_MS = 50

/** How the notifier wakes writers (Output): a FEED_TICK in an outbox, then one flush of all it reached. */
export interface FeedWaker {
  /** Puts a FEED_TICK in `peer`'s outbox; false when the outbox is full (its writer is busy). */
  readonly tick: (peer: Peer) => boolean
  /** Writes what the ticks asked for. */
  readonly wakeTouched: () => void
  /** Whether output `reader` produced is parked, waiting for room (Output.hasParked). */
  readonly hasParked: (reader: Peer) => boolean
  /**
   * The recipients whose own parked output holds mail of `senderKey`'s for
   * them, with how many such messages (Output.parkedMailOf).
   */
  readonly parkedMailOf: (senderKey: string) => ReadonlyArray<readonly [Peer, number]>
  /**
   * Calls `releaseDeparture` for `recipient` once the `count` messages of
   * `senderKey`'s in its own parked output were offered; true when this is a
   * new hold, false when one from an earlier departure still waits for that
   * mail (Output.holdBehindParked).
   */
  readonly holdBehindParked: (recipient: Peer, senderKey: string, senderId: string, count: number) => boolean
  /**
   * `recipient`'s connection no longer holds the session its holds behind
   * its own parked output were taken for: they are dropped, unreleased
   * (Output.forgetDepartureHolds).
   */
  readonly forgetDepartureHolds: (recipient: Peer) => void
  /**
   * The recipients of `senderKey`'s messages that `reader` produced and
   * that still wait for room (Output.parkedRecipientsOf).
   */
  readonly parkedRecipientsOf: (reader: Peer, senderKey: string) => ReadonlyArray<Peer>
  /** `recipient`'s `returnWaits` lost an entry: the mail that waited on it tries again (Output.returned). */
  readonly returned: (recipient: Peer) => void
}

/** The membership concern: feed changes, writer wake-ups, feed compaction. */
export class Membership implements FeedSource {
  /** Spaces whose membership changed since the notifier last ran. */
  private readonly dirty = new Set<ScopeSpace>()
  private readonly feedSignal: Queue.Queue<void>
  private readonly waker: FeedWaker
  /** A round woke more than PACE_ABOVE writers: announcements wait for the notifier's pause to end. */
  private pacing = false
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
   * @param feedSignal wakes the notifier fiber, which calls `notify`.
   * @param waker puts FEED_TICKs in outboxes and flushes them (Output).
   */
  constructor(feedSignal: Queue.Queue<void>, waker: FeedWaker) {
    this.feedSignal = feedSignal
    this.waker = waker
  }

  /** `session` registered: it sees changes from now on, and the others see it join. */
  joined(session: Session): void {
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
    const space = session.space
    // Back after its connection went on as another session: the departure that return released is withheld
    // without the join so far; it is a return now, withheld with its join (`holdReturn`).
    if (this.releasedEarly.size > 0) this.holdReturn(session)
    session.peer.feedCursor = space.feed.seq
    if (!session.peer.feedPending) space.needsTick.add(session.peer)
    session.presentSince = space.feed.joined(session.id, session.infoJson)
    this.markDirty(space)
  }

  /**
   * `previous`'s session was taken over by `next` (P16; `previous.session`
   * is already cleared, `next.session` set): the returns `previous`
   * withholds (`WithheldDeparture.rejoined`) move to `next` with the
   * return's holds (the early releases' records now name `next`) and its
   * waits (`Peer.returnWaits`), so the session's new mail, taken back to
   * `next`, still waits behind the old output (Output.parkBehindReturn) and
   * `next` is owed the pair once that output is out. `next`'s feed starts
   * after both frames, so they count as passed: the session's client heard
   * the old incarnation present and nothing since. Holds of other owners
   * stay on `previous`, whose releases end there with no session to owe.
   * Nothing while `previous` withholds nothing.
   */
  takenOver(previous: Peer, next: Peer): void {
    const withheld = previous.withheldDepartures
    const session = next.session
    if (withheld === undefined || session === undefined || previous === next) return
    for (const [id, departure] of withheld) {
      if (!departure.rejoined) continue
      let holds = 0
      for (const early of this.releasedEarly.values()) {
        for (let i = 0; i < early.length; i++) {
          const record = early[i]!
          if (record[0] === previous && record[1] === id) {
            early[i] = [next, id]
            holds++
          }
        }
      }
      if (holds === 0) continue
      ;(next.withheldDepartures ??= new Map()).set(id, {
        passed: true,
        holds,
        rejoined: true,
        joinPassed: true,
        since: departure.since
      })
      const key = sessionKey(session.space.key, id)
      const waits = previous.returnWaits
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

  /** `session`'s SessionInfo changed (presence, P32). */
  updated(session: Session): void {
    session.space.feed.updated(session.id, session.infoJson)
    this.markDirty(session.space)
  }

  /**
   * `session` left: the others see it leave — once the output of its that was
   * parked is in its recipients' outboxes, when it unregistered with output
   * parked (`unregistered`: its own batch is being handled; a closed
   * connection's parked output was forced through before it left).
   */
  left(session: Session, unregistered: boolean): void {
    const peer = session.peer
    session.space.needsTick.delete(peer)
    // Its connection no longer holds the session (both callers cleared `peer.session`): what was owed or
    // withheld from that session is nobody's now, and must not reach a later registration of the connection.
    peer.owedDepartures = undefined
    peer.owedJoins = undefined
    // A closed connection keeps its waits, and its waiters sleep on: its close wakes them once it gave
    // back the older mail it held (Output.releaseWaiters), and the mail that waited goes back after the
    // old output it waited for (Output.place, `parkBehindReturn`). Woken here, a drainer runs at once
    // and its refused message reached the mailbox ahead of both. An open connection (unregistered) may
    // register again, so its waits end here; they stay readable for the mail that waited
    // (`leftReturnWaits`), which then goes back behind that old output too rather than racing its drainer.
    if (peer.returnWaits !== undefined && peer.state !== "closed") {
      peer.leftReturnWaits = peer.returnWaits
      peer.returnWaits = undefined
      this.waker.returned(peer)
    }
    if (peer.withheldDepartures !== undefined) {
      peer.withheldDepartures = undefined
      this.waker.forgetDepartureHolds(peer)
      if (this.releasedEarly.size > 0) this.forgetReleasedEarly(peer)
    }
    if (unregistered && this.waker.hasParked(session.peer)) this.held.set(session.key, session)
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
      withheld.set(departedId, { passed: false, holds: 1, rejoined: false, joinPassed: false, since: 0 })
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
    this.wakeOwed(recipient, session)
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
    if (departure.passed || departure.joinPassed) this.wakeOwed(recipient, session)
    // Owed from now on: the session's mail from since its return may follow the pair. Last: a woken
    // drainer runs at once (Deferred.doneUnsafe), and the writer it flushes must find the pair owed.
    const waits = recipient.returnWaits
    if (waits !== undefined && waits.delete(sessionKey(session.space.key, departedId))) {
      if (waits.size === 0) recipient.returnWaits = undefined
      this.waker.returned(recipient)
    }
  }

  /** `recipient` is owed frames: its writer collects them before it writes, woken unless a tick waits already (or it is busy). */
  private wakeOwed(recipient: Peer, session: Session): void {
    if (!recipient.feedPending && this.waker.tick(recipient)) {
      recipient.feedPending = true
      session.space.needsTick.delete(recipient)
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
    for (const recipient of this.waker.parkedRecipientsOf(reader, session.key)) {
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
          // The session's mail from since its return waits for the pair (Output.waitsForReturn).
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
   * parked behind it: Output.ts) withholds it until that mail is offered —
   * also when the session is back already (a held departure released by its
   * return): that recipient passes over the departure the return superseded.
   * One check while no reader parks output.
   */
  private depart(session: Session): void {
    for (const [recipient, count] of this.waker.parkedMailOf(session.key)) {
      if (recipient === session.peer || recipient.session?.space !== session.space) continue
      // One hold per recipient: an earlier departure's, still waiting for that mail, covers this one.
      if (this.waker.holdBehindParked(recipient, session.key, session.id, count)) this.withholdDeparture(recipient, session.id)
    }
    session.space.feed.left(session.id)
    this.markDirty(session.space)
  }

  /** `peer`'s writer took its FEED_TICK: the next change wakes it again. */
  taken(peer: Peer): void {
    peer.feedPending = false
    const session = peer.session
    if (session !== undefined && session.peer === peer) session.space.needsTick.add(peer)
  }

  /**
   * Appends the membership changes `peer` has not seen (called by its writer,
   * through Output): joins and presence to `out`; departures of sessions
   * gone to `departures`; the departure and new join of a session that is
   * back to `rejoins`, for the writer to place after that session's older
   * mail (Rejoins.ts).
   */
  collect(
    peer: Peer,
    items: ReadonlyArray<OutboundItem>,
    out: Array<OutFrame>,
    departures: Array<OutFrame>,
    rejoins: Rejoins
  ): void {
    const session = peer.session
    if (session === undefined) return
    const space = session.space
    const feed = space.feed
    const withheld = peer.withheldDepartures
    // A message of a returned session's from since its return is queued: its withheld pair goes before it.
    if (withheld !== undefined && peer.returnWaits !== undefined) this.unwithholdBeforeNewMail(peer, items, withheld)
    if (peer.owedDepartures !== undefined) {
      // Like the feed's own: after the queued output, unless the session is back (with its new join).
      for (const id of peer.owedDepartures) {
        const departure = withheld === undefined ? undefined : withheld.get(id)
        if (departure !== undefined) departure.passed = true
        else if (feed.isPresent(id)) rejoins.left(id)
        else departures.push(Encode.sessionLeftFrame(id))
      }
      peer.owedDepartures = undefined
    }
    // Sessions whose owed join is void (gone again): the feed's departure of that unseen return is not written.
    let gone: Array<string> | undefined
    if (peer.owedJoins !== undefined) {
      // Joins passed over while withheld with their departure: with it (Rejoins.ts), or first if it was not seen.
      for (const id of peer.owedJoins) {
        const join = feed.passedJoin(id, peer.feedCursor)
        if (join !== undefined) {
          if (!rejoins.joined(id, join[0], join[1])) out.push(join[0])
        } else if (!feed.isPresent(id)) (gone ??= []).push(id)
      }
      peer.owedJoins = undefined
    }
    const from = departures.length
    peer.feedCursor = feed.collect(peer.feedCursor, session.id, out, departures, withheld, rejoins)
    if (gone !== undefined) this.dropUnseenDepartures(gone, departures, from)
    if (rejoins.count > 0) rejoins.settle((id) => sessionKey(space.key, id), out)
    // It settles the entries released while their session was back (MembershipFeed.collect).
    if (withheld !== undefined && withheld.size === 0) peer.withheldDepartures = undefined
  }

  /**
   * Drops from `departures` (from index `from`: what the feed's collect
   * added) the `session_left` of each session in `gone`: a return whose join
   * its writer passed over while it was withheld, and that left again
   * before the join was owed and written. The recipient never saw that
   * return, so its departure is not one it must hear; the departure it saw
   * is the one owed with the join (`owePair`, written before `from`; none
   * if it never saw the session present).
   */
  private dropUnseenDepartures(gone: ReadonlyArray<string>, departures: Array<OutFrame>, from: number): void {
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
   * the old output (Output.parkBehindReturn): what reaches the outbox
   * anyway is forced while that output is not parked with a drainer.
   */
  private unwithholdBeforeNewMail(
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

  /**
   * At the end of a reader's batch: wakes the writers of the spaces whose
   * membership it changed, now, unless a pause is running (see "When" in
   * the module header).
   */
  announce(): void {
    if (this.dirty.size === 0 || this.pacing) return
    if (this.notify() > 0) signal(this.feedSignal) // the notifier sleeps the pause out
  }

  /**
   * How long the notifier waits before its next round (milliseconds, 0 for
   * none): the rest of a pause `announce` started, or none.
   */
  get pause(): number {
    return this.pacing ? PACE_MS : 0
  }

  /** The notifier slept the pause out: announcements go on. */
  paused(): void {
    this.pacing = false
  }

  /**
   * Wakes the writers of every session in a changed space, once per batch of
   * changes; returns how long the notifier waits before its next round
   * (milliseconds, 0 for none: see "Pacing" in the module header).
   */
  notify(): number {
    let woken = 0
    for (const space of this.dirty) {
      for (const peer of space.needsTick) {
        if (peer.isClosing || peer.session === undefined) {
          space.needsTick.delete(peer)
        } else if (this.waker.tick(peer)) {
          // A full outbox keeps the peer here: its writer is busy and collects the feed before writing anyway.
          peer.feedPending = true
          space.needsTick.delete(peer)
          woken++
        }
      }
      if (space.feed.departedCount > 64 + space.sessions.size) this.compact(space)
    }
    this.dirty.clear()
    // A writer's flush may ask for its next tick (`taken`): only after the loop.
    this.waker.wakeTouched()
    this.pacing = woken > PACE_ABOVE
    return this.pacing ? PACE_MS : 0
  }

  private markDirty(space: ScopeSpace): void {
    if (this.dirty.size === 0) signal(this.feedSignal)
    this.dirty.add(space)
  }

  /**
   * Keeps a feed's departed entries bounded. An entry dropped before a lagging
   * recipient saw it becomes a departure owed to that recipient, if it had
   * seen the session present: it still gets its `session_left`.
   */
  private compact(space: ScopeSpace): void {
    const feed = space.feed
    let minCursor = feed.seq
    for (const session of space.sessions.values()) minCursor = Math.min(minCursor, session.peer.feedCursor)
    const lagging = minCursor === feed.seq
      ? []
      : [...space.sessions.values()].filter((session) => session.peer.feedCursor < feed.seq)
    feed.compact(minCursor, 4 * space.sessions.size + 1024, (departed) => {
      for (const session of lagging) {
        const peer = session.peer
        if (peer.feedCursor >= departed.seq || session.id === departed.id) continue
        const withheld = peer.withheldDepartures
        const released = withheld?.get(departed.id)
        if (withheld !== undefined && released !== undefined && released.holds === 0 && departed.latest) {
          // Released while the session was back, gone again before its join was written: settled as collect would.
          if (departed.presentSince <= peer.feedCursor) released.passed = true
          withheld.delete(departed.id)
          if (withheld.size === 0) peer.withheldDepartures = undefined
          if (!released.passed) continue
        } else if (departed.presentSince > peer.feedCursor) continue
        const owed = peer.owedDepartures ?? new Set<string>()
        owed.add(departed.id)
        peer.owedDepartures = owed
      }
    })
  }
}
