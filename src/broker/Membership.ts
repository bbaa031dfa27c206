/**
 * The membership feed as the broker uses it: `session_joined`,
 * `presence_update` and `session_left` reach every other session of a scope
 * through that scope's compacted `MembershipFeed`, pulled by each recipient's
 * writer (docs/architecture.md, "Membership frames").
 *
 * This module owns the set of scopes whose membership changed, wakes their
 * recipients' writers once per batch of changes (the notifier fiber calls
 * `notify`), keeps each feed's departed entries bounded, hands each writer
 * what it has not seen (`collect`), and is the only writer of a `Peer`'s
 * `feedCursor` and `feedPending` and of each space's `needsTick` set. The
 * departures withheld from recipients are WithheldDepartures.ts's (`holds`):
 * it takes and releases the holds in a `Peer`'s `withheldDepartures` and
 * owes what they release; this module takes the owed frames (`collect`) and,
 * with the feed's `collect` and `compact`, settles the entries no hold is
 * left on.
 *
 * A writer is woken with a FEED_TICK in its outbox, one at a time: `needsTick`
 * holds the recipients with none pending, so a batch of changes costs one
 * offer per recipient that can take it, and nothing for writers that are
 * already busy or blocked (a storm of joins with slow readers stays linear).
 *
 * Pacing: a round that woke many writers is followed by a short pause
 * (PACE_MS) before the next, so a registration storm in a large scope
 * wakes each writer once per pause with every join since, not once per join
 * (issue 16: 1,000 joins into one scope were 500,000 writer wake-ups and
 * writes). Order is unaffected: a writer collects the feed before anything
 * else it writes (OutputWrites.takeForWrite), so no frame overtakes a join or
 * presence change made before it, and writes departures after what was
 * queued (a session's last messages precede its `session_left`); only the
 * moment an otherwise idle session hears of a change moves, by at most
 * PACE_MS.
 *
 * Departures: a `session_left` must not reach a recipient before the
 * messages its session sent before leaving (C-BRK-33). The writer puts the
 * departures it collects after the output queued for the recipient
 * (OutputWrites.takeForWrite); a departure whose session's output is not queued
 * yet is held, or withheld from some recipients, by WithheldDepartures.ts,
 * which puts it into the feed here (`FeedSide.left`) and wakes the writers
 * it is owed to (`FeedSide.wakeOwed`).
 *
 * When: a connection's batch that changed membership announces it as it
 * ends (`announce`, called by its reader), unless a pause is running; the
 * notifier fiber announces changes made outside a batch (a timeout, a
 * close) and those made during a pause, once it is over. A reader runs
 * from the socket's events, not in a fiber that gives the notifier a turn
 * between two of its batches: without `announce`, a session that
 * registers and leaves in two quick batches would be collected as joined
 * and left at once, which sends nothing (MembershipFeed.collect).
 */
import { Queue } from "effect"
import type { OutFrame } from "../protocol/framing.ts"
import * as Encode from "./encode.ts"
import type { OutboundItem, Peer } from "./Peer.ts"
import type { Rejoins } from "./Rejoins.ts"
import { type ScopeSpace, type Session, sessionKey } from "./Registry.ts"
import { signal } from "./RouterContext.ts"
import { type ParkedOutput, type StagedHolds, WithheldDepartures } from "./WithheldDepartures.ts"

/** Writers woken in one round above which the next round waits PACE_MS. */
export const PACE_ABOVE = 64

/** The pause after a round that woke more than PACE_ABOVE writers, in milliseconds. */
export const PACE_MS = 50

/**
 * How the notifier wakes writers (Output): a FEED_TICK in an outbox, then
 * one flush of all it reached. What the departure holds ask of Output's
 * parked output is given apart (`ParkedOutput`, WithheldDepartures.ts;
 * Output's `departureSide`, ParkedDepartures.ts).
 */
export interface FeedWaker {
  /** Puts a FEED_TICK in `peer`'s outbox; false when the outbox is full (its writer is busy). */
  readonly tick: (peer: Peer) => boolean
  /** Writes what the ticks asked for. */
  readonly wakeTouched: () => void
}

/** The membership concern: feed changes, writer wake-ups, feed compaction. */
export class Membership {
  /** Spaces whose membership changed since the notifier last ran. */
  private readonly dirty = new Set<ScopeSpace>()
  private readonly feedSignal: Queue.Queue<void>
  private readonly waker: FeedWaker
  /** A round woke more than PACE_ABOVE writers: announcements wait for the notifier's pause to end. */
  private pacing = false
  /** The departures withheld from recipients until the output they follow is queued (WithheldDepartures.ts). */
  readonly holds: WithheldDepartures

  /**
   * @param feedSignal wakes the notifier fiber, which calls `notify`.
   * @param waker puts FEED_TICKs in outboxes and flushes them (Output).
   * @param parked what the departure holds ask of parked output (Output.departureSide, ParkedDepartures.ts).
   * @param staged moves a staged replace message's departure hold to a recipient's new connection at a takeover (ReplaceStaging).
   */
  constructor(feedSignal: Queue.Queue<void>, waker: FeedWaker, parked: ParkedOutput, staged: StagedHolds) {
    this.feedSignal = feedSignal
    this.waker = waker
    this.holds = new WithheldDepartures(parked, {
      left: (session) => {
        session.space.feed.left(session.id)
        this.markDirty(session.space)
      },
      wakeOwed: (recipient, session) => this.wakeOwed(recipient, session)
    }, staged)
  }

  /** `session` registered: it sees changes from now on, and the others see it join. */
  joined(session: Session): void {
    // A departure held for its id or its connection goes first (WithheldDepartures.joining).
    this.holds.joining(session)
    const space = session.space
    session.peer.feedCursor = space.feed.seq
    if (!session.peer.feedPending) space.needsTick.add(session.peer)
    session.presentSince = space.feed.joined(session.id, session.infoJson)
    this.markDirty(space)
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
   * connection's parked output was forced through before it left). What was
   * owed to or withheld from it is dropped (WithheldDepartures.left).
   */
  left(session: Session, unregistered: boolean): void {
    session.space.needsTick.delete(session.peer)
    this.holds.left(session, unregistered)
  }

  /** `recipient` is owed frames: its writer collects them before it writes, woken unless a tick waits already (or it is busy). */
  private wakeOwed(recipient: Peer, session: Session): void {
    if (!recipient.feedPending && this.waker.tick(recipient)) {
      recipient.feedPending = true
      session.space.needsTick.delete(recipient)
    }
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
    if (withheld !== undefined && peer.returnWaits !== undefined) this.holds.unwithholdBeforeNewMail(peer, items, withheld)
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
    if (gone !== undefined) this.holds.dropUnseenDepartures(gone, departures, from)
    if (rejoins.count > 0) rejoins.settle((id) => sessionKey(space.key, id), out)
    // It settles the entries released while their session was back (MembershipFeed.collect).
    if (withheld !== undefined && withheld.size === 0) peer.withheldDepartures = undefined
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
