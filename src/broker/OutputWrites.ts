/**
 * The writer's side of the outboxes: what a connection's writer
 * (PeerWriter.ts) takes from its outbox as one write (`takeForWrite`), the
 * reuse of a completed write's batch (`recycle`), the part of an unfinished
 * write that goes back (`unwrittenOf`), and the room a write makes
 * (`roomMade`): what waits with no reader (a replace-staged message falling
 * due, ReplaceStaging.roomFor) first, then the drainers waiting on that
 * outbox or on all outboxes together.
 *
 * A write takes the joins and presence changes the recipient has not seen
 * first, then the queued items in order, then the departures (a session's
 * last messages precede its `session_left`). A sender gone and back since
 * the recipient last collected has its `session_left` and new join written
 * after its older queued mail (Rejoins.ts). Mail, notices and control frames
 * for a session the connection no longer holds are taken back instead of
 * written; a frame over the 1 MiB limit is never written (`oversize`, a
 * broker bug if reached).
 *
 * Ownership: the spare write batch, the spare outbox array, the departures
 * and the rejoins one write collects (each empty between writes) are this
 * module's. It empties a peer's `outbox` (the one place output leaves it but
 * for a close or a takeover, OutputEnd.ts), charging the budget back item by
 * item (OutboxBudgets.ts), in the writer's synchronous step, and gives the
 * peer the array the previous write took as its new outbox. `takeForWrite`
 * runs once per write: an indexed loop, no closure, the batch and the outbox
 * array reused (docs/performance.md). Reached as `Output.writes`. Split
 * from Output.ts (2026-12-06).
 */
import { MAX_FRAME_BYTES } from "../protocol/constants.ts"
import { frameBytes, frameText, type OutFrame } from "../protocol/framing.ts"
import type { ControlFrame } from "./ControlFrame.ts"
import { belongsTo, charsOf, isControl } from "./OutboundItems.ts"
import type { OutboxBudgets } from "./OutboxBudgets.ts"
import { wakeWaiters } from "./ParkedOrder.ts"
import { END_OF_OUTPUT, FEED_TICK, type OutboundItem, type Peer, type Returnable, type Written } from "./Peer.ts"
import { Rejoins } from "./Rejoins.ts"
import { emptyKeepingSlots, KEEP_BATCH_SLOTS, WriteBatch } from "./WriteBatch.ts"

/** Where a writer gets membership frames from (Membership.ts; `parkedOut` and `releaseDeparture`, WithheldDepartures.ts). */
export interface FeedSource {
  /**
   * Appends the membership frames `peer` has not seen: joins and presence to
   * `out`, written first; departures to `departures`, written after the
   * output already queued; the departure and new join of a session that is
   * back to `rejoins`, written after its older mail (MembershipFeed.collect).
   */
  readonly collect: (
    peer: Peer,
    items: ReadonlyArray<OutboundItem>,
    out: Array<OutFrame>,
    departures: Array<OutFrame>,
    rejoins: Rejoins
  ) => void
  /** `peer`'s writer took the FEED_TICK it was sent: it may be sent another. */
  readonly taken: (peer: Peer) => void
  /**
   * All of `reader`'s parked output reached its recipients' outboxes (or
   * could not: they closed): the departures held behind it go into the feed
   * (WithheldDepartures.left, `parkedOut`).
   */
  readonly parkedOut: (reader: Peer) => void
  /**
   * The mail of session `senderId`'s that `recipient`'s own parked output
   * held when that session left is all offered: the hold it took on the
   * departure withheld from `recipient` is released (WithheldDepartures.releaseDeparture).
   */
  readonly releaseDeparture: (recipient: Peer, senderId: string) => void
  /**
   * A takeover's custody hold ended (or moved on): the hold its holder
   * `recipient` took on session `senderId`'s departure behind it is
   * released (WithheldDepartures.releaseBehindCustody).
   */
  readonly releaseBehindCustody: (recipient: Peer, senderId: string) => void
}

/** Whether a frame is within the 1 MiB limit (cheaply, when it obviously is). */
const fits = (frame: OutFrame): boolean => frame.length * 3 <= MAX_FRAME_BYTES || frameBytes(frame) <= MAX_FRAME_BYTES

/** What the writer's side uses of Output's and the broker's (see the module header). */
export interface WriteSide {
  /** The membership frames a recipient has not seen (Membership). */
  readonly feed: FeedSource
  /** The outbox budgets, charged back as items leave an outbox (OutboxBudgets.ts). */
  readonly budgets: OutboxBudgets
  /**
   * Takes output that can no longer be written where it was queued (MailDelivery): mail, notices, control
   * frames; true when it went to its session's live connection.
   */
  readonly takeBack: (item: Returnable | ControlFrame) => boolean
  /** The broker's log. */
  readonly log: (level: "info" | "warning", message: string) => void
  /** `peer`'s writer took its outbox: output kept back for want of room may be queued now (ReplaceStaging.roomFor). */
  readonly room: (peer: Peer) => void
}

/** The writer's side of the outboxes (see the module header). */
export class OutputWrites {
  private readonly side: WriteSide
  // What every write uses, copied flat from `side`: `takeForWrite` loads them as it did as Output's own.
  private readonly feed: FeedSource
  private readonly budgets: OutboxBudgets
  private readonly takeBack: (item: Returnable | ControlFrame) => boolean
  private readonly room: (peer: Peer) => void
  /** Departures `takeForWrite` collects to write after the queued output; empty between calls. */
  private readonly departures: Array<OutFrame> = []
  /** Sessions gone and back that `takeForWrite` met, whose pairs wait for their older mail; empty between calls. */
  private readonly rejoins = new Rejoins()
  /** A write batch handed back empty (`recycle`), for the next `takeForWrite`. */
  private spare: WriteBatch | undefined = undefined
  /** The outbox array the last `takeForWrite` took, emptied: the next one gives it to its peer as its new outbox. */
  private spareOutbox: Array<OutboundItem> | undefined = undefined

  /** @param side what the writer's side uses of Output's and the broker's. */
  constructor(side: WriteSide) {
    this.side = side
    this.feed = side.feed
    this.budgets = side.budgets
    this.takeBack = side.takeBack
    this.room = side.room
  }

  /** Whether `peer`'s outbox holds anything for its writer. */
  hasOutput(peer: Peer): boolean {
    return peer.outbox.length > 0
  }

  /**
   * Takes everything in `peer`'s outbox as one write: the joins and presence
   * changes it has not seen first, then the items in order, then the
   * departures (a session's last messages precede its `session_left`). A
   * session that left and is back since the recipient last collected has its
   * `session_left` and new `session_joined` put among the items, after its
   * mail from before its return and before its mail from since (Rejoins.ts:
   * a scan of the outbox, only then). Mail, notices and control frames for a
   * session this connection no longer holds (it unregistered, or was taken
   * over) are taken back instead of written; those written are the batch's
   * returnable items (custody, an unfinished write's untaken rest).
   */
  takeForWrite(peer: Peer): WriteBatch {
    const items = peer.outbox
    const budgets = this.budgets
    // The peer gets the array an earlier write took, emptied, not a new one: a fresh array grows a backing store
    // (17 slots, 152 bytes) on its first push, once per write — most of a one-frame write's outbox cost (`ask`;
    // docs/performance.md, "Garbage, seventy-second stop"). Taken, so a write started meanwhile makes its own.
    peer.outbox = this.spareOutbox ?? []
    this.spareOutbox = undefined
    const batch = this.spare ?? new WriteBatch()
    this.spare = undefined
    const frames = batch.frames
    const returnable = batch.returnable
    const departures = this.departures
    const rejoins = this.rejoins
    this.feed.collect(peer, items, frames, departures, rejoins)
    // Where the next pair of a returned session goes (-1: none, the common case).
    let rejoinAt = rejoins.count === 0 ? -1 : rejoins.plan(items)
    // An indexed loop, no closure: this runs once per write (garbage, docs/performance.md).
    for (let i = 0; i < items.length; i++) {
      if (i === rejoinAt) rejoinAt = rejoins.emit(i, frames)
      const item = items[i]!
      budgets.charge(peer, -charsOf(item))
      if (typeof item === "string") {
        if (fits(item)) frames.push(item)
        else this.oversize(peer, item)
      }
      else if (item === FEED_TICK) this.feed.taken(peer)
      else if (item === END_OF_OUTPUT) batch.ending = true
      else if (!("frame" in item)) {
        // A control frame is returnable like mail: unwritten, or unconfirmed by a `received-v1` client, it goes
        // again (Custody.ts). Tested here, among the frames in parts, so mail pays no class test.
        if (!isControl(item)) {
          if (fits(item)) frames.push(item)
          else this.oversize(peer, item)
        } else if (item.to !== peer.session?.key) this.takeBack(item)
        else if (!fits(item)) this.oversize(peer, item)
        else {
          batch.returnableAt.push(frames.length)
          returnable.push(item)
          frames.push(item)
        }
      }
      else if (!belongsTo(item, peer)) this.takeBack(item)
      else if (!fits(item.frame)) this.oversize(peer, item.frame)
      else {
        batch.returnableAt.push(frames.length)
        returnable.push(item)
        frames.push(item.frame)
      }
    }
    if (rejoinAt !== -1) rejoins.emit(items.length, frames)
    if (rejoins.count > 0) rejoins.clear()
    // After what was queued before them: a session's last messages precede its `session_left`.
    if (departures.length > 0) {
      for (let i = 0; i < departures.length; i++) frames.push(departures[i]!)
      departures.length = 0
    }
    // Nothing keeps `items` past this loop (the feed and the rejoins only read it): the next write's outbox.
    if (this.spareOutbox === undefined && items.length <= KEEP_BATCH_SLOTS) {
      emptyKeepingSlots(items)
      this.spareOutbox = items
    }
    this.roomMade(peer)
    return batch
  }

  /**
   * A batch whose write completed and was recorded (`Router.written`): no
   * one holds it any more, and the next `takeForWrite` fills it again. A
   * batch whose write went on in the background is never handed back.
   */
  recycle(batch: WriteBatch): void {
    if (batch.empty()) this.spare = batch
  }

  /**
   * Last line of defence: a frame over 1 MiB is never written (a strict
   * client would drop the connection). Limits on the way in and size checks
   * where frames are built make this unreachable; if it is reached, say so.
   */
  private oversize(peer: Peer, frame: OutFrame): void {
    this.side.log(
      "warning",
      `Did not write a ${frameBytes(frame)}-byte frame to connection ${peer.connection.id}: over the ${MAX_FRAME_BYTES}-byte limit (a broker bug: please report it) — ${frameText(frame).slice(0, 80)}`
    )
  }

  /**
   * The output of a batch whose write did not complete, from the first frame
   * that was not handed over (`written` frames were).
   */
  unwrittenOf(batch: WriteBatch, written: number): Array<Written> {
    const unwritten: Array<Written> = []
    const at = batch.returnableAt
    for (let i = 0; i < at.length; i++) if (at[i]! >= written) unwritten.push(batch.returnable[i]!)
    return unwritten
  }

  /**
   * `peer`'s writer took its outbox (or its close shut it): what waits for
   * room there, or in all outboxes together, may try again.
   */
  roomMade(peer: Peer): void {
    // First what waits with no reader (replace-staged messages due), then the drainers, which offer later.
    this.room(peer)
    wakeWaiters(peer)
    // Below the total, or an outbox emptied (it takes one frame whatever the total): all retry.
    this.budgets.roomMade(peer)
  }
}
