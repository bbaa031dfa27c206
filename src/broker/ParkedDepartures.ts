/**
 * Output's side of the departures withheld behind parked output: what
 * WithheldDepartures.ts asks of it (`ParkedOutput`) when a session leaves,
 * registers again or is taken over — whether a reader's output is parked,
 * which recipients' own parked lists hold a departed sender's mail and how
 * much, the holds taken behind that mail (DepartureHolds.ts) or behind a
 * takeover's custody hold (CustodyHold.ts), and waking the mail that waited
 * for a withheld return. Runs per leave, join or takeover, never per frame.
 *
 * Ownership: no state of its own but the `departuresHeld` count. It reads
 * Output's parked output (the batch's parked list, through `batchParked`;
 * the readers with parked output; a peer's `parked` and `parkedMail`), which
 * Output and its close side (OutputEnd.ts) write; the holds it takes are DepartureHolds' and
 * CustodyHolds' records, written through their methods (it clears a custody
 * hold's `departures` itself when the holder's session leaves). Split from
 * Output.ts (2026-12-05), which hands it those at construction.
 */
import type { CustodyHolds } from "./CustodyHold.ts"
import type { DepartureHolds } from "./DepartureHolds.ts"
import { isMessage } from "./OutboundItems.ts"
import type { OutboundItem, Peer } from "./Peer.ts"
import type { ParkedOutput } from "./WithheldDepartures.ts"

/** What the withheld departures learn of parked output and the holds they take behind it (see the module header). */
export class ParkedDepartures implements ParkedOutput {
  private readonly batchParked: () => ReadonlyArray<readonly [Peer, OutboundItem]>
  private readonly parkedReaders: ReadonlySet<Peer>
  private readonly departureHolds: DepartureHolds
  private readonly holds: CustodyHolds
  private readonly wake: (peer: Peer) => void

  /** Departures held behind a recipient's own parked output since the broker started (stats: `holdBehindParked`). */
  departuresHeld = 0

  /**
   * @param batchParked the output of the batch being handled that did not fit its outbox (Output's).
   * @param parkedReaders the readers whose own parked list may hold output (Output's).
   * @param departureHolds the departures held behind recipients' own parked output (Output's).
   * @param holds the takeovers' custody holds (Output's).
   * @param wake the senders waiting on `peer`'s outbox or parked mail try again (ParkedOrder.wakeWaiters).
   */
  constructor(
    batchParked: () => ReadonlyArray<readonly [Peer, OutboundItem]>,
    parkedReaders: ReadonlySet<Peer>,
    departureHolds: DepartureHolds,
    holds: CustodyHolds,
    wake: (peer: Peer) => void
  ) {
    this.batchParked = batchParked
    this.parkedReaders = parkedReaders
    this.departureHolds = departureHolds
    this.holds = holds
    this.wake = wake
  }

  /**
   * Whether output `reader` produced waits for room: parked in the batch
   * being handled (the reader's own, when it handles its `unregister`) or
   * held by its drainer. A session leaving meanwhile has its departure held
   * until that output is in its recipients' outboxes (`FeedSource.parkedOut`).
   */
  hasParked(reader: Peer): boolean {
    return this.batchParked().length > 0 || reader.parked.length > 0
  }

  /**
   * The recipients whose own parked list holds mail of `senderKey`'s for
   * them (a mailbox flush that did not fit, mail parked behind it), with how
   * many messages, at a leave: a look-up in each parked reader's per-sender
   * counts (`Peer.parkedMail`); nothing while no reader parks output.
   */
  parkedMailOf(senderKey: string): ReadonlyArray<readonly [Peer, number]> {
    if (this.parkedReaders.size === 0) return []
    const found: Array<readonly [Peer, number]> = []
    for (const reader of this.parkedReaders) {
      const count = reader.parkedMail?.get(senderKey)
      if (count !== undefined) found.push([reader, count])
    }
    return found
  }

  /**
   * The recipients of messages of `senderKey`'s that `reader` produced and
   * that wait for room (parked in the batch being handled, or in `reader`'s
   * own list), `reader` itself excepted: a scan, only when a session whose
   * departure waits for that output registers again (Membership.joined).
   */
  parkedRecipientsOf(reader: Peer, senderKey: string): ReadonlyArray<Peer> {
    const found: Array<Peer> = []
    for (const list of [this.batchParked(), reader.parked]) {
      for (let i = 0; i < list.length; i++) {
        const [to, item] = list[i]!
        if (to !== reader && isMessage(item) && item.mail.senderKey === senderKey && !found.includes(to)) found.push(to)
      }
    }
    return found
  }

  /**
   * `recipient` withholds the departure of session `senderId` (`senderKey`)
   * until the `count` messages of its in `recipient`'s own parked list are
   * offered; then `FeedSource.releaseDeparture`, once, or at `recipient`'s
   * close. True for a new hold (the caller takes it: WithheldDepartures.withholdDeparture);
   * false when the hold of an earlier departure of the session's still waits
   * for that mail: it covers this departure too (DepartureHolds.hold).
   */
  holdBehindParked(recipient: Peer, senderKey: string, senderId: string, count: number): boolean {
    const held = this.departureHolds.hold(recipient, senderKey, senderId, count)
    if (held) this.departuresHeld++
    return held
  }

  /**
   * `recipient`'s session left while holds behind its own parked list were
   * taken for it (it unregistered, or closed): they are dropped unreleased
   * (DepartureHolds.forget), so offering that list releases nothing into a
   * later registration of the connection.
   */
  forgetDepartureHolds(recipient: Peer): void {
    if (!this.departureHolds.isEmpty) this.departureHolds.forget(recipient)
    this.holds.forgetDepartures(recipient)
  }

  /**
   * A returned sender's departure and join are owed to `peer`, or no longer
   * withheld (Membership cleared its `returnWaits` entry): its mail that
   * waited for them tries again.
   */
  returned(peer: Peer): void {
    this.wake(peer)
  }

  /**
   * The connections whose custody hold covers `senderKey`'s mail take a hold
   * on session `senderId`'s departure (CustodyHolds.holdDepartureBehindCustody).
   */
  holdDepartureBehindCustody(senderKey: string, senderId: string): ReadonlyArray<Peer> {
    return this.holds.holdDepartureBehindCustody(senderKey, senderId)
  }

  /**
   * The connections that withhold session `senderId`'s departure behind
   * their custody hold, for its return (CustodyHolds.returnBehindCustody).
   */
  returnBehindCustody(senderKey: string, senderId: string): ReadonlyArray<Peer> {
    return this.holds.returnBehindCustody(senderKey, senderId)
  }
}
