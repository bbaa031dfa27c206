/**
 * Session membership of one scope (joins, presence changes, leaves) as a
 * compacted change feed. Each session has one entry holding its latest state
 * (and, until compaction, a departed one if it joined again: see below); a
 * change moves the entry to the tail with a new sequence number. A recipient
 * remembers only the sequence number it has seen (its cursor), and its writer
 * pulls what changed since then when it has room to write.
 *
 * Why not enqueue a frame per recipient: a registration storm of N sessions
 * would queue N²/2 frames and stall behind slow readers. Here a change costs
 * O(1), memory is O(sessions), and a lagging recipient catches up with one
 * frame per changed session (the latest state; two for one that left and
 * joined again, see below), never a stale flood.
 *
 * Departed sessions are kept until every recipient has seen them leave; past
 * a bound the owner drops them and remembers, per lagging recipient, the
 * departures it still owes (see Membership.compact).
 *
 * A session that joins again after leaving gets a new entry; the departed one
 * stays in the feed until compaction, so a recipient that saw the earlier
 * join and lags behind both changes still gets its `session_left` (then
 * `session_joined` if the session is back, nothing if it has left again).
 */

import type { OutFrame } from "../protocol/framing.ts"
import { sessionLeftFrame } from "./encode.ts"
import { JoinedFrameParts } from "./frameParts.ts"
import type { Rejoins } from "./Rejoins.ts"

/**
 * A departure one recipient gets only once the holds on it are released
 * (WithheldDepartures.withholdDeparture): kept on the recipient's `Peer`, by the
 * departed session's id.
 */
export interface WithheldDeparture {
  /**
   * The recipient's writer passed a departure of the session it was owed
   * (it is owed when released); false again once the writer wrote the
   * session's new join, which stands for it.
   */
  passed: boolean
  /**
   * Holds not yet released: one per owner of mail the departure waits for
   * (Membership.ts). 0: all were released while the session was back and
   * before the recipient's writer wrote its new join; the entry waits for
   * that writer (`collect`), which deletes it when it writes the join (the
   * join stands for the departure), or when it finds the session gone
   * again first, writing a `session_left` if it had passed a departure.
   */
  holds: number
  /**
   * The session came back while output of its departed self for the
   * recipient was still parked behind backpressure (Membership.joined): the
   * recipient gets neither the departure nor the new join (nor presence)
   * until the last hold goes; then the `session_left` and the new
   * `session_joined` are owed together, written after that output
   * (Rejoins.ts). Unlike the other holds, the new join never stands for the
   * departure here: the recipient must hear the session leave, or the asks
   * it waits on from the departed session would not end (C-ASK-9).
   */
  rejoined: boolean
  /** `rejoined`: the recipient's writer passed over the session's new join or presence. */
  joinPassed: boolean
  /**
   * `rejoined` behind a takeover's custody hold (WithheldDepartures.holdReturnBehindCustody),
   * not behind parked output: the hold's end owes the pair; a takeover of
   * the recipient moves it with the hold (WithheldDepartures.takenOver).
   */
  behindCustody: boolean
  /**
   * `rejoined`: the `presentSince` of the latest departed incarnation whose
   * output the holds wait for; mail of the session tagged later is from
   * since its return (Membership.collect then lets the pair go before it).
   */
  since: number
}

/** A departed entry the feed drops before every recipient collected it (`MembershipFeed.compact`). */
export interface DroppedDeparture {
  readonly id: string
  /** Sequence number of the departure. */
  readonly seq: number
  /** Sequence number of the join the entry began with: a recipient at or past it had seen the session present. */
  readonly presentSince: number
  /** The session's latest entry: it has not joined again since. */
  readonly latest: boolean
}

interface FeedEntry {
  readonly id: string
  /** Sequence number of the latest change. */
  seq: number
  /** Sequence number of the latest (re)join; a recipient that has not seen it gets `session_joined`. */
  joinSeq: number
  /**
   * Sequence number of the join this entry began with: the session has been
   * present from it (takeovers included) until its departure, if any. A
   * recipient whose cursor is at or past it has seen the session present.
   */
  presentSince: number
  present: boolean
  infoJson: string
  /**
   * The `session_joined`, made when first collected: in parts around
   * `infoJson`, so a present session's cached join holds no second copy of
   * its SessionInfo JSON (frameParts.ts).
   */
  joinedFrame: JoinedFrameParts | undefined
  updateFrame: string | undefined
  prev: FeedEntry | undefined
  next: FeedEntry | undefined
}

/** One scope's compacted change feed; see the module header. */
export class MembershipFeed {
  private readonly entries = new Map<string, FeedEntry>()
  private head: FeedEntry | undefined
  private tail: FeedEntry | undefined
  private lastSeq = 0
  private departed = 0

  /** The sequence number of the latest change: a new recipient starts here. */
  get seq(): number {
    return this.lastSeq
  }

  /** Entries kept for sessions that have left, until every cursor has passed them. */
  get departedCount(): number {
    return this.departed
  }

  /** Whether session `id` is present (joined, and not left since). */
  isPresent(id: string): boolean {
    return this.entries.get(id)?.present === true
  }

  /**
   * Whether session `id` is present, and has been only since after `cursor`:
   * a recipient at `cursor` has not seen it join since it was last absent
   * (takeovers do not count: the session stayed present through them).
   */
  returnedSince(id: string, cursor: number): boolean {
    const entry = this.entries.get(id)
    return entry !== undefined && entry.present && entry.presentSince > cursor
  }

  /**
   * The `session_joined` of session `id`, present, for a recipient at
   * `cursor` that is past its join (its writer passed over it: a departure
   * and return withheld together, `WithheldDeparture.rejoined`), with the
   * entry's `presentSince`; undefined when the session is not present, or
   * its join is still ahead of `cursor` (`collect` meets it).
   */
  passedJoin(id: string, cursor: number): readonly [OutFrame, number] | undefined {
    const entry = this.entries.get(id)
    if (entry === undefined || !entry.present || entry.joinSeq > cursor) return undefined
    const frame = entry.joinedFrame ??= new JoinedFrameParts(entry.infoJson)
    return [frame, entry.presentSince]
  }

  /**
   * Session `id` joined (or was taken over: P16); returns its entry's
   * `presentSince`, which a return changes and a takeover keeps (the tag its
   * routed messages carry: Rejoins.ts).
   */
  joined(id: string, infoJson: string): number {
    let entry = this.entries.get(id)
    if (entry === undefined || !entry.present) {
      // A departed entry stays where it is: recipients that saw that join still get its session_left.
      entry = {
        id,
        seq: 0,
        joinSeq: 0,
        presentSince: 0,
        present: true,
        infoJson,
        joinedFrame: undefined,
        updateFrame: undefined,
        prev: undefined,
        next: undefined
      }
      this.entries.set(id, entry)
    } else {
      // A takeover: recipients that saw the old join get session_joined again (P16).
      this.unlink(entry)
    }
    entry.present = true
    entry.infoJson = infoJson
    entry.joinedFrame = undefined
    entry.updateFrame = undefined
    entry.seq = entry.joinSeq = ++this.lastSeq
    if (entry.presentSince === 0) entry.presentSince = entry.joinSeq
    this.append(entry)
    return entry.presentSince
  }

  updated(id: string, infoJson: string): void {
    const entry = this.entries.get(id)
    if (entry === undefined || !entry.present) return
    this.unlink(entry)
    entry.infoJson = infoJson
    entry.joinedFrame = undefined
    entry.updateFrame = undefined
    entry.seq = ++this.lastSeq
    this.append(entry)
  }

  left(id: string): void {
    const entry = this.entries.get(id)
    if (entry === undefined || !entry.present) return
    this.unlink(entry)
    entry.present = false
    entry.joinedFrame = undefined
    entry.updateFrame = undefined
    entry.seq = ++this.lastSeq
    this.departed++
    this.append(entry)
  }

  /**
   * Appends the frames a recipient at `cursor` has not seen yet, skipping its
   * own session, and returns its new cursor. Per session only the latest state
   * is sent: `session_joined` if the recipient has not seen the (re)join,
   * `presence_update` if it has, `session_left` if the session has gone since;
   * nothing for a session that joined and left in between. A session that left
   * and joined again since is `session_left` (if the recipient saw the earlier
   * join), then the latest state of its new entry.
   *
   * A departure of a session that is not present now goes to `departures`
   * (by default `out`): the writer puts those after the output already queued
   * for the recipient, so a session's last messages, queued before it left,
   * reach it before its `session_left` (C-BRK-33: a `session_left` fails
   * the asks waiting on that session, so a reply behind it would be lost).
   * Joins and presence stay first: no message overtakes the join of its
   * sender. A departure followed by a new join that is written too stays
   * with that join: both go to `rejoins` when given, for the writer to put
   * after the session's mail from before its return (Rejoins.ts), else to
   * `out`, before the queued output.
   *
   * A departure whose id is in `withheld` is not sent, whether or not the
   * session joined again since: it is marked passed there, for the owner to
   * send when it is released (WithheldDepartures.releaseDeparture). A new join
   * written meanwhile unmarks it: the recipient hears the session join again
   * (as at a takeover), and the departure it stood for is not owed any more.
   * A session whose entry in `withheld` is `rejoined` (back while output of
   * its departed self for the recipient is parked) has its new join and
   * presence passed over too (`joinPassed`), for the owner to owe with the
   * departure (WithheldDepartures.owePair).
   * An entry whose holds were all released while the session was back
   * (`holds` 0) is settled here and deleted from `withheld`: by the new join
   * when it is written, or, when the session left again before that, by a
   * `session_left` in `departures` if a departure was passed (the recipient
   * still takes the session for present), else by nothing.
   */
  collect(
    cursor: number,
    selfId: string | undefined,
    out: Array<OutFrame>,
    departures: Array<OutFrame> = out,
    withheld: Map<string, WithheldDeparture> | undefined = undefined,
    rejoins: Rejoins | undefined = undefined
  ): number {
    if (cursor >= this.lastSeq) return cursor
    let start = this.tail
    while (start !== undefined && start.prev !== undefined && start.prev.seq > cursor) start = start.prev
    for (let entry = start; entry !== undefined; entry = entry.next) {
      if (entry.id === selfId) continue
      if (entry.present) {
        if (withheld !== undefined) {
          // Back while its departed self's output for the recipient is parked: its join waits with the departure.
          const rejoined = withheld.get(entry.id)
          if (rejoined !== undefined && rejoined.rejoined) {
            rejoined.joinPassed = true
            continue
          }
        }
        if (entry.joinSeq > cursor) {
          const joinedFrame = entry.joinedFrame ??= new JoinedFrameParts(entry.infoJson)
          // Back since a departure met here: the join waits with it (Rejoins.ts).
          if (rejoins === undefined || rejoins.count === 0 || !rejoins.joined(entry.id, joinedFrame, entry.presentSince)) {
            out.push(joinedFrame)
          }
          if (withheld !== undefined) {
            // The join stands for a departure passed over; released already (holds 0), the entry is settled.
            const held = withheld.get(entry.id)
            if (held !== undefined && held.holds === 0) withheld.delete(entry.id)
            else if (held !== undefined) held.passed = false
          }
        } else if (rejoins === undefined || rejoins.count === 0 || !rejoins.waits(entry.id)) {
          // (A join owed with its departure carries the latest state: no update before it.)
          out.push(entry.updateFrame ??= `{"type":"presence_update","session":${entry.infoJson}}`)
        }
      } else {
        const held = withheld === undefined ? undefined : withheld.get(entry.id)
        if (withheld === undefined || held === undefined) {
          // Not present now: after the queued output; back (its new join written next): with that join.
          if (entry.presentSince > cursor) continue
          if (!this.isPresent(entry.id)) departures.push(sessionLeftFrame(entry.id))
          else if (rejoins !== undefined) rejoins.left(entry.id)
          else out.push(sessionLeftFrame(entry.id))
        } else {
          if (entry.presentSince <= cursor) held.passed = true
          // Released while the session was back, and gone again before its join was written: settled now.
          if (held.holds === 0 && this.entries.get(entry.id) === entry) {
            withheld.delete(entry.id)
            if (held.passed) departures.push(sessionLeftFrame(entry.id))
          }
        }
      }
    }
    return this.lastSeq
  }

  /**
   * Forgets departed sessions that every recipient has seen (`minCursor` is
   * the lowest cursor among recipients), and beyond `maxDeparted` the oldest
   * departed ones regardless — handing each such entry to `onDrop` first, so
   * the owner can tell recipients that had not seen the departure yet.
   */
  compact(
    minCursor: number,
    maxDeparted: number,
    onDrop: (departed: DroppedDeparture) => void
  ): void {
    let entry = this.head
    while (entry !== undefined && this.departed > 0) {
      const next = entry.next
      if (!entry.present && (entry.seq <= minCursor || this.departed > maxDeparted)) {
        if (entry.seq > minCursor) {
          onDrop({ id: entry.id, seq: entry.seq, presentSince: entry.presentSince, latest: this.entries.get(entry.id) === entry })
        }
        this.unlink(entry)
        // The session may have joined again since: its new entry stays.
        if (this.entries.get(entry.id) === entry) this.entries.delete(entry.id)
        this.departed--
      } else if (entry.seq > minCursor && this.departed <= maxDeparted) {
        break
      }
      entry = next
    }
  }

  private unlink(entry: FeedEntry): void {
    if (entry.prev !== undefined) entry.prev.next = entry.next
    else this.head = entry.next
    if (entry.next !== undefined) entry.next.prev = entry.prev
    else this.tail = entry.prev
    entry.prev = entry.next = undefined
  }

  private append(entry: FeedEntry): void {
    entry.prev = this.tail
    entry.next = undefined
    if (this.tail !== undefined) this.tail.next = entry
    else this.head = entry
    this.tail = entry
  }
}
