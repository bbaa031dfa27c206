/**
 * The count of control frames (ControlFrame.ts) in the readers' parked
 * lists (`Peer.parked`), with a drainer at work or left for a close to take:
 * raised where a control joins a list (Output.parkFor, ForcedOutput's
 * parks), lowered where one leaves (ParkedDrain's offers and drops,
 * OutputEnd's force, hand-over and take at a close). While it is zero the
 * close path's drop of a withdrawn message's parked controls
 * (ParkedDrain.dropControls) scans nothing (review revaq AQ3: one scan of
 * every parked list per withdrawn message given back).
 *
 * Owner: Output, which hands this one object to its parts at construction;
 * each raises or lowers it in its caller's synchronous step. Only control
 * frames count: the tests are one `instanceof` per item parked or leaving,
 * on the parked path only.
 */
import { isControl } from "./OutboundItems.ts"
import type { OutboundItem } from "./Peer.ts"

/** Control frames parked in the readers' lists (see the module header). */
export class ParkedControls {
  private count = 0

  /** Control frames in the parked lists now. */
  get size(): number {
    return this.count
  }

  /** `item` joined a parked list: counted when it is a control frame. */
  joined(item: OutboundItem): void {
    if (isControl(item)) this.count++
  }

  /** `item` left a parked list (offered, forced, handed over, taken back, dropped): uncounted when a control frame. */
  left(item: OutboundItem): void {
    if (isControl(item)) this.count--
  }
}
