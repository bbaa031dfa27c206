/**
 * The counts of what the readers' parked lists (`Peer.parked`) hold that a
 * slow path would otherwise look for by scanning them all: control frames
 * (ControlFrame.ts), and messages by their sender's key. Raised where an
 * item joins a list (Output.parkFor, ForcedOutput's parks), lowered where
 * one leaves (ParkedDrain's offers and drops, OutputEnd's force, hand-over
 * and take at a close). While there is no control, the close path's drop of
 * a withdrawn message's parked controls (ParkedDrain.dropControls) scans
 * nothing (review revaq AQ3: one scan of every parked list per withdrawn
 * message given back); while a sender has no message parked, a cancel or
 * supersede of its message looks in no reader's list
 * (Output.parksWithdrawn; review revbc BC1: every cancel scanned all
 * output parked broker-wide, however unrelated).
 *
 * Owner: Output, which hands this one object to its parts at construction;
 * each raises or lowers it in its caller's synchronous step. The tests are
 * one `instanceof` and one field test per item parked or leaving, and one
 * map update per message: on the parked path only, never for output that
 * fits.
 */
import { isControl, isMessage } from "./OutboundItems.ts"
import type { OutboundItem } from "./Peer.ts"

/** Control frames, and messages by sender, parked in the readers' lists (see the module header). */
export class ParkedControls {
  private count = 0
  private readonly bySender = new Map<string, number>()

  /** Control frames in the parked lists now. */
  get size(): number {
    return this.count
  }

  /** Messages of sender `senderKey` (a registry key) in the parked lists now. */
  messagesOf(senderKey: string): number {
    return this.bySender.get(senderKey) ?? 0
  }

  /** `item` joined a parked list: counted when it is a control frame or a message. */
  joined(item: OutboundItem): void {
    if (isControl(item)) this.count++
    else if (isMessage(item)) {
      const sender = item.mail.senderKey
      this.bySender.set(sender, (this.bySender.get(sender) ?? 0) + 1)
    }
  }

  /** `item` left a parked list (offered, forced, handed over, taken back, dropped): uncounted when a control frame or a message. */
  left(item: OutboundItem): void {
    if (isControl(item)) this.count--
    else if (isMessage(item)) {
      const sender = item.mail.senderKey
      const parked = (this.bySender.get(sender) ?? 0) - 1
      if (parked > 0) this.bySender.set(sender, parked)
      else this.bySender.delete(sender)
    }
  }
}
