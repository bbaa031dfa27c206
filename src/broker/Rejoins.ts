/**
 * Sessions one write finds gone and back (C-BRK-33): a recipient's writer
 * collects the membership feed (MembershipFeed.collect) and meets a session X
 * it saw present that has left and registered again since. Its `session_left`
 * and new `session_joined` do not go first, with the other membership frames:
 * X's old mail still queued in the recipient's outbox (routed live before X
 * left) would come after that `session_left`, and the client fails the asks
 * waiting on X when it reads it (C-ASK-9), so a reply from X among that mail
 * would be lost. Here they wait in the write (`OutputWrites.takeForWrite`) until
 * after the last of X's mail from before its return — and no later than the
 * first of X's mail from since (no message precedes its sender's join).
 *
 * Which incarnation sent a message: each routed message carries its sender's
 * `presentSince` when it was routed (`OutboundMessage.senderSince`), the
 * sequence number of the join its feed entry began with, which changes at
 * each return and not at a takeover (P16). Mail flushed from the mailbox
 * carries 0: it was sent before the recipient registered, by an incarnation
 * before any the recipient can see return.
 *
 * Owned by `OutputWrites`, one instance reused by every write and empty between
 * writes; only filled when a collect meets such a session, so the common
 * write pays one length test. Plain synchronous state.
 */
import type { OutFrame } from "../protocol/framing.ts"
import { sessionLeftFrame } from "./encode.ts"
import type { OutboundItem } from "./Peer.ts"

/** No pending position: every pair was written. */
const NONE = -1

/** How `Encode.registeredFrame` begins. */
const REGISTERED_PREFIX = `{"type":"registered"`

/** The returned sessions one write met, their frames, and where in the write each pair goes. */
export class Rejoins {
  /** Session ids, in the order the feed met their departures. */
  private readonly ids: Array<string> = []
  /** Their registry keys (what `Mail.senderKey` holds), set by `settle`. */
  private readonly keys: Array<string> = []
  /** The `presentSince` of each session's present entry: its mail with another tag is older. */
  private readonly since: Array<number> = []
  /** Each session's new `session_joined`, once the feed met it. */
  private readonly joins: Array<OutFrame | undefined> = []
  /** Where in the outbox's items each pair goes (before the item at that index), set by `plan`. */
  private readonly at: Array<number> = []

  /** Returned sessions met (0 on the common path). */
  get count(): number {
    return this.ids.length
  }

  /** Session `id` left since the recipient saw it present and is present again: its pair waits. */
  left(id: string): void {
    if (this.ids.indexOf(id) >= 0) return
    this.ids.push(id)
    this.since.push(0)
    this.joins.push(undefined)
  }

  /**
   * The feed met session `id`'s new join (`presentSince` its entry's): true
   * when `id`'s departure waits here, and the join now waits with it.
   */
  joined(id: string, frame: OutFrame, presentSince: number): boolean {
    const at = this.ids.indexOf(id)
    if (at < 0) return false
    this.joins[at] = frame
    this.since[at] = presentSince
    return true
  }

  /** Whether session `id`'s pair waits here with its join (an owed join, Membership.collect). */
  waits(id: string): boolean {
    const at = this.ids.indexOf(id)
    return at >= 0 && this.joins[at] !== undefined
  }

  /**
   * After the collect, with the recipient's space key: each session's key.
   * A departure whose join the feed did not write (not expected: the join
   * of a session back since a departure the recipient did not see is after
   * its cursor) goes to `out` as before, first, and is dropped from here.
   */
  settle(keyOf: (id: string) => string, out: Array<OutFrame>): void {
    let kept = 0
    for (let i = 0; i < this.ids.length; i++) {
      const id = this.ids[i]!
      const join = this.joins[i]
      if (join === undefined) {
        out.push(sessionLeftFrame(id))
        continue
      }
      this.ids[kept] = id
      this.since[kept] = this.since[i]!
      this.joins[kept] = join
      this.keys[kept] = keyOf(id)
      kept++
    }
    this.ids.length = this.since.length = this.joins.length = this.keys.length = kept
  }

  /**
   * Where each pair goes among `items` (the outbox, in order): after the
   * last message of the session's from before its return, or first if none
   * — but never before the connection's `registered` when this write carries
   * it (a pair owed to a connection at its takeover, WithheldDepartures.takenOver,
   * whose old mail was all dropped on the way: a client fails a registration
   * answered with anything else first); never after the first of its
   * messages from since. Returns the lowest such index (a scan of the
   * outbox, only on this path).
   */
  plan(items: ReadonlyArray<OutboundItem>): number {
    const count = this.ids.length
    for (let r = 0; r < count; r++) this.at[r] = 0
    const firstNew: Array<number> = new Array<number>(count).fill(NONE)
    // Just past this write's `registered`, if it carries one.
    let floor = 0
    for (let i = 0; i < items.length; i++) {
      const item = items[i]!
      if (typeof item === "string") {
        if (item.startsWith(REGISTERED_PREFIX)) floor = i + 1
        continue
      }
      if (typeof item !== "object" || !("mail" in item)) continue
      const sender = item.mail.senderKey
      for (let r = 0; r < count; r++) {
        if (sender !== this.keys[r]) continue
        if (item.senderSince !== this.since[r]) {
          if (firstNew[r] === NONE) this.at[r] = i + 1
        } else if (firstNew[r] === NONE) firstNew[r] = i
      }
    }
    if (floor > 0) for (let r = 0; r < count; r++) if (this.at[r]! < floor) this.at[r] = floor
    return this.next(NONE)
  }

  /**
   * Appends to `frames` the pairs that go before item `index` (`items.length`:
   * at the end), in the order their departures were met; returns the next
   * index a pair goes at, or -1 when all are written.
   */
  emit(index: number, frames: Array<OutFrame>): number {
    for (let r = 0; r < this.ids.length; r++) {
      if (this.at[r] !== index) continue
      frames.push(sessionLeftFrame(this.ids[r]!))
      frames.push(this.joins[r]!)
    }
    return this.next(index)
  }

  /** Empties it for the next write. */
  clear(): void {
    this.ids.length = this.since.length = this.joins.length = this.keys.length = this.at.length = 0
  }

  /** The lowest position above `after`, or -1. */
  private next(after: number): number {
    let lowest = NONE
    for (let r = 0; r < this.ids.length; r++) {
      const at = this.at[r]!
      if (at > after && (lowest === NONE || at < lowest)) lowest = at
    }
    return lowest
  }
}
