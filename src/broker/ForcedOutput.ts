/**
 * Forced output and its order behind parked output: queueing an item past
 * its recipient's outbox bounds (`enqueue`, reached as Output.forceEnqueue)
 * — requeued or taken-back mail, a closing reader's parked output, answers
 * that must go ahead of a `taken_over`, a released settling answer —
 * without letting it overtake older mail of its sender that waits elsewhere.
 *
 * A message forced for a recipient whose own parked output (its mailbox
 * flush) holds older mail of the same sender is parked behind that output
 * (`parkBehind`, `behindOwnParked`, `parkOwn`), so it cannot overtake it;
 * one from since a returned sender's return, for a recipient that withholds
 * the return, is parked behind the old output it waits for
 * (`parkBehindReturn`). One forced at a connection that no longer holds its
 * session is taken back at once, as `ParkedDrain.place` refuses it, to where the
 * session is now; one a takeover's custody hold covers is kept with the
 * hold (CustodyHold.ts). A drainer's offer (`ParkedDrain.place`) parks
 * through `parkOwn` and `parkBehindReturn` too, on its slow branches.
 *
 * Ownership: no state of its own but the `parkedBehindOwn` count. It
 * appends to parked lists Output owns — the batch's (`batchParked`), a
 * recipient's own `Peer.parked`, a withheld return's reader's — and queues
 * into an outbox, charging the budget (OutboxBudgets.ts) and marking it
 * touched through Output (`touch`) — or, parked in a recipient's own list,
 * marking that list and waking its drainer at the batch's end through
 * Output (`ownJoined`) — all in the caller's synchronous step;
 * it counts the mail it parks (ParkedOrder.ts) and tells the departure
 * holds (DepartureHolds.ts). Forced output is never on the per-frame
 * routing path (`Output.enqueue` does not force): it runs for requeued,
 * taken-back and closing output, and its parking only while something is
 * parked. Split from Output.ts (2026-12-06).
 */
import type { ControlFrame } from "./ControlFrame.ts"
import type { CustodyHolds } from "./CustodyHold.ts"
import type { DepartureHolds } from "./DepartureHolds.ts"
import { charsOf, isControl, isMessage, isSenderOrdered, isStranded, type SenderOrdered, senderKeyOf } from "./OutboundItems.ts"
import { isShut, type OutboxBudgets } from "./OutboxBudgets.ts"
import type { ParkedControls } from "./ParkedControls.ts"
import { countParkedMail, returnWaitOf, waitsBehindParked } from "./ParkedOrder.ts"
import type { OutboundItem, Peer, Returnable, ReturnWait } from "./Peer.ts"

/** What forced output uses of Output's, the owner of the outboxes and parked lists (see the module header). */
export interface ForcedSide {
  /**
   * Takes output that can no longer be written where it was queued (MailDelivery): mail, notices, control
   * frames; true when it went to its session's live connection.
   */
  readonly takeBack: (item: Returnable | ControlFrame) => boolean
  /** An item that can no longer reach its connection goes back (Output.undeliverable). */
  readonly undeliverable: (item: OutboundItem) => void
  /** `peer`'s outbox got output: its writer is flushed at the batch's end, or soon (Output's touched list). */
  readonly touch: (peer: Peer) => void
  /** An item that may go ahead of a waiting head joined `reader`'s own parked list (Output.ownJoined: marked, its drainer woken). */
  readonly ownJoined: (reader: Peer) => void
  /** The output of the batch being handled that did not fit its outbox yet (Output's; appended to here). */
  readonly batchParked: () => Array<readonly [Peer, OutboundItem]>
  /** The readers whose own parked list may hold output, with a drainer at work (Output's). */
  readonly parkedReaders: ReadonlySet<Peer>
  /** The count of control frames in the parked lists (ParkedControls.ts, Output's): raised for each control parked here. */
  readonly controls: ParkedControls
  /** The outbox budgets: forced output is charged like any other (OutboxBudgets.ts). */
  readonly budgets: OutboxBudgets
  /** The takeovers' custody holds (CustodyHold.ts): forced output they cover is kept with them. */
  readonly holds: CustodyHolds
  /** The departures held behind recipients' own parked output (DepartureHolds.ts). */
  readonly departureHolds: DepartureHolds
}

/** Whether `parked` holds a message of `senderKey`'s for `recipient` (slow path: a scan). */
const holdsMailOf = (
  parked: ReadonlyArray<readonly [Peer, OutboundItem]>,
  recipient: Peer,
  senderKey: string
): boolean => {
  for (let i = 0; i < parked.length; i++) {
    const [to, item] = parked[i]!
    if (to === recipient && isMessage(item) && item.mail.senderKey === senderKey) return true
  }
  return false
}

/** Output forced past the outbox bounds, kept behind its sender's older parked mail (see the module header). */
export class ForcedOutput {
  private readonly side: ForcedSide

  /**
   * Messages parked at the end of a recipient's own list (`parkOwn`) since
   * the broker started (stats: `BrokerStats.parkedBehindOwn`; slow path only).
   */
  parkedBehindOwn = 0

  /** @param side what forced output uses of Output's state, through Output. */
  constructor(side: ForcedSide) {
    this.side = side
  }

  /**
   * Queues `item` for `recipient` even past its outbox's capacity, after what
   * it already holds. Mail or a notice for a session `recipient` no longer
   * holds (it was taken over, or unregistered, since the item was meant for
   * it) is taken back at once instead, to where that session is now. A
   * message for a recipient whose own parked output
   * (its mailbox, flushed when it registered, waiting for room) holds older
   * mail of the same sender is parked behind that output instead: forced, it
   * would overtake it (`parkBehind`).
   */
  enqueue(recipient: Peer, item: OutboundItem): void {
    // Kept with a takeover's hold until the old connection's close gives back its older mail (CustodyHold.ts).
    const hold = this.side.holds.holdOf(recipient, item)
    if (hold !== undefined) return this.side.holds.keep(hold, item)
    if (isShut(recipient)) return this.side.undeliverable(item)
    // Mail or a notice for a session `recipient` no longer holds (taken over, or unregistered) goes back
    // now, as `ParkedDrain.place` refuses it: to where the session is (its hold, its parked flush, its outbox), or the
    // mailbox. Pushed here, it would wait for the old writer or the old close, after newer mail and the
    // sender's `session_left` there.
    if (isStranded(item, recipient)) {
      this.side.takeBack(item)
      return
    }
    // Behind a withheld return's old output first: parked behind the recipient's own flush instead, mail from
    // since the return would wait there for the pair, which waits for that old output, which waits behind it.
    if (isMessage(item) && (this.parkBehindReturn(recipient, item) || this.parkBehind(recipient, item))) return
    // A control frame about a message (a hold's, given back at its end) goes behind its sender's parked mail,
    // and one from since its sender's withheld return behind that return's old output, as the mail does.
    if (isControl(item) && (this.parkBehindReturn(recipient, item) || this.parkBehind(recipient, item))) return
    this.side.budgets.charge(recipient, charsOf(item))
    recipient.queue(item)
    this.side.touch(recipient)
  }

  /**
   * Parks message `item` behind mail of its sender's parked for `recipient`
   * in the batch being handled, or else in the recipient's own reader's
   * parked list (where its registration parks the mail its mailbox flush
   * could not fit): the drainer that offers that output offers this after it.
   * False when neither holds such mail (then it is forced as usual: only the
   * sender's order binds it, and forced it is queued before a departing
   * sender's `session_left`). Only reached by forced messages while
   * something is parked, so it costs the hot path nothing.
   */
  private parkBehind(recipient: Peer, item: SenderOrdered): boolean {
    const sender = senderKeyOf(item)
    const parked = this.side.batchParked()
    if (parked.length > 0 && holdsMailOf(parked, recipient, sender)) {
      parked.push([recipient, item])
      return true
    }
    return this.behindOwnParked(recipient, item)
  }

  /**
   * Parks message `item` (or a control frame about one), forced (its connection closed, or it comes back
   * from a connection taken over), at the end of the parked output of the
   * connection whose parked output `recipient` withholds the sender's
   * return for (`waitsForReturn`, `ReturnWait.reader`), when it is mail
   * from since that return: that drainer offers it after the old output,
   * so it neither overtakes the old output nor owes the pair early
   * (WithheldDepartures.unwithholdBeforeNewMail, which would put the old output
   * after the `session_left`). False when that output is no longer parked
   * with a drainer (then forced as before). One field test while nothing is
   * withheld so.
   */
  parkBehindReturn(
    recipient: Peer,
    item: SenderOrdered,
    wait: ReturnWait | undefined = returnWaitOf(recipient.returnWaits, item)
  ): boolean {
    if (wait === undefined) return false
    const reader = wait.reader
    if (reader === recipient || reader.parked.length === 0 || !this.side.parkedReaders.has(reader)) return false
    reader.parked.push([recipient, item])
    this.side.controls.joined(item)
    return true
  }

  /**
   * Parks message `item` (or a control frame about one) at the end of
   * `recipient`'s own parked output when that holds older mail of its sender
   * for `recipient` (a mailbox flush that did not fit): there the
   * recipient's drainer offers it after that mail.
   * False for anything else, which is queued as usual. At a closing
   * recipient's, whose list keeps only its own output until the close takes
   * it (`takeOwnParked`), the message is taken back after that output. No
   * scan: the counts of `Peer.parkedMail`.
   */
  private behindOwnParked(recipient: Peer, item: OutboundItem): boolean {
    if (recipient.parked.length === 0 || !isSenderOrdered(item) || !waitsBehindParked(recipient, item)) return false
    this.parkOwn(recipient, item)
    return true
  }

  /**
   * Parks message `item` at the end of `recipient`'s own parked list, which
   * holds mail for it (`parkedMail` is set, so its drainer is at work): the
   * drainer offers it after everything parked there before it.
   */
  parkOwn(recipient: Peer, item: SenderOrdered): void {
    recipient.parked.push([recipient, item])
    this.side.controls.joined(item)
    // Its drainer may offer it ahead of a head that waits for another's room (ParkedDrain.offerOwnAhead).
    this.side.ownJoined(recipient)
    // A control frame is not counted: nothing waits behind it, and its offer uncounts nothing.
    if (!isMessage(item)) return
    countParkedMail(recipient, item.mail.senderKey)
    this.parkedBehindOwn++
    // Mail of a departed sender's coming back (requeued) after its hold was set: the hold waits for it too —
    // not for mail from since a return the recipient withholds (it waits for that departure to be owed).
    if (!this.side.departureHolds.isEmpty && returnWaitOf(recipient.returnWaits, item) === undefined) {
      this.side.departureHolds.requeued(recipient, item)
    }
  }
}
