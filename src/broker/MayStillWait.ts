/**
 * Whether a message its sender withdraws (a cancel, a supersede) may still
 * wait for its receiver unwritten or unconfirmed, so that whoever gives it
 * back must find it withdrawn: read by the cancel (Cancels.ts) and the
 * supersede stage (SupersedeStage.ts) before the withdrawal is kept
 * (Receipts.keepWithdrawal). A scan of what the receiver's connection and
 * the parked lists hold; it owns no state.
 */
import type { ControlFrame } from "./ControlFrame.ts"
import type { Output } from "./Output.ts"
import { carriesMessage, mailAmong, parksMessage } from "./OutboundItems.ts"
import type { Peer } from "./Peer.ts"

/**
 * Whether the message that `control` (its sender's cancel or supersede, for
 * `receiver`'s session) is about may still wait for `receiver`'s connection
 * unwritten or unconfirmed — so that a close or an `unregister` could yet
 * give it back: in `receiver`'s outbox, its write in progress or the part of
 * it never taken, its custody (written, unconfirmed), its own parked list
 * (also at its close, when no drainer offers it any more), a takeover's hold
 * it holds (CustodyHolds.mayGiveBack), or parked anywhere else
 * (`Output.parksWithdrawn`: the batch being handled — a send and its cancel
 * or supersede in one batch — and every reader's parked list — the
 * sender's, an older connection of the sender's session still open after a
 * takeover, a withheld return's reader; review revay AY1, AY2). That very
 * message, found by its record key (review revaw AW1: other output waiting
 * there, an unrelated message parked, says nothing about it): a scan of
 * each of those lists that is not empty — one test per item: the
 * receiver's output, so at most about as much as writing that outbox, and,
 * only while the sender has a message parked somewhere, every reader's
 * parked list (`parksWithdrawn`'s cost). Read on the cancel and supersede
 * paths only, never on the send path.
 */
export const mayStillWait = (receiver: Peer, control: ControlFrame, output: Output): boolean => {
  const key = control.messageKey
  return mailAmong(receiver.outbox, key, receiver.outbox.length) !== undefined ||
    carriesMessage(receiver.writer.inFlight?.returnable, key) || carriesMessage(receiver.untakenRest, key) ||
    receiver.custody?.holdsMessage(key) === true || parksMessage(receiver.parked, key) ||
    output.holds.mayGiveBack(receiver, control) || output.parksWithdrawn(key, control.senderKey)
}
