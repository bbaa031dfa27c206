/**
 * Departures held behind a recipient's own parked output: the bookkeeping
 * of which departed senders' mail still waits in a recipient's own parked
 * list (its mailbox flush that did not fit, and mail parked behind it:
 * Output.ts, ForcedOutput.ts), and how many of their messages, so that the last of them
 * being offered releases the hold WithheldDepartures.ts took on that sender's
 * `session_left` for that recipient (C-BRK-33; docs/architecture.md,
 * "Membership frames").
 *
 * Owns one record per (recipient, departed session), and one hold in
 * WithheldDepartures.ts's count for each (`hold` says when to take it). A later
 * departure of the same session while the record still waits (it came
 * back and left again) shares it: the mail it waits for is the same, so
 * one release ends the hold, and a release never ends a hold it did not
 * take. Output drives it: it and its close side (OutputEnd.ts) are the only
 * writers of the parked lists, and tell this module when one of their messages is offered (`offered`),
 * joins them (`requeued`), or is gone with its reader's close (`drop`);
 * WithheldDepartures.ts, when the recipient's session left (`forget`: nothing is
 * released, so no release reaches the connection's next registration).
 *
 * Cost: nothing per routed message; per offered parked item, one check
 * while no record exists (`isEmpty`), else one map look-up. Memory: at most
 * one record per (recipient, sender with mail parked for it), all dropped
 * when the recipient closes.
 */
import type { OutboundMessage, Peer } from "./Peer.ts"

/** A departed session's mail still in a recipient's own parked output: its departure waits for the last of it. */
interface Hold {
  /** The departed session's id (the same at each departure: a session's key names its id). */
  readonly id: string
  /** Its messages still parked. */
  count: number
}

/** The departure holds behind recipients' own parked output; see the module header. */
export class DepartureHolds {
  /** By recipient, then by the departed sender's key. */
  private readonly byRecipient = new Map<Peer, Map<string, Hold>>()
  private readonly release: (recipient: Peer, senderId: string) => void

  /** @param release releases the hold taken for `recipient` on session `senderId`'s departure (WithheldDepartures.releaseDeparture). */
  constructor(release: (recipient: Peer, senderId: string) => void) {
    this.release = release
  }

  /** Whether no hold waits: the parked path's one check. */
  get isEmpty(): boolean {
    return this.byRecipient.size === 0
  }

  /**
   * Session `senderId` (`senderKey`) left with `count` messages in
   * `recipient`'s own parked list. True for a new record: the caller takes
   * its hold (WithheldDepartures.withholdDeparture). False when a record of an
   * earlier departure of the session's still waits for that mail: it covers
   * this departure too, and now counts `count` (the mail parked now).
   */
  hold(recipient: Peer, senderKey: string, senderId: string, count: number): boolean {
    let holds = this.byRecipient.get(recipient)
    if (holds === undefined) this.byRecipient.set(recipient, holds = new Map())
    const hold = holds.get(senderKey)
    if (hold !== undefined) {
      hold.count = count
      return false
    }
    holds.set(senderKey, { id: senderId, count })
    return true
  }

  /** A message in `recipient`'s own parked list was offered: the last of a departed sender's releases its hold. */
  offered(recipient: Peer, item: OutboundMessage): void {
    const holds = this.byRecipient.get(recipient)
    const senderKey = item.mail.senderKey
    const hold = holds?.get(senderKey)
    if (holds === undefined || hold === undefined || --hold.count > 0) return
    holds.delete(senderKey)
    if (holds.size === 0) this.byRecipient.delete(recipient)
    this.release(recipient, hold.id)
  }

  /**
   * `item` joined the end of `recipient`'s own parked list behind its
   * sender's older mail (ForcedOutput.parkOwn: requeued mail, `behindOwnParked`,
   * or a drainer's message parked there by `offer`'s guard): a hold on that
   * sender's departure waits for it too.
   */
  requeued(recipient: Peer, item: OutboundMessage): void {
    const hold = this.byRecipient.get(recipient)?.get(item.mail.senderKey)
    if (hold !== undefined) hold.count++
  }

  /**
   * `recipient`'s session left (it unregistered, or closed) and Membership
   * dropped the departures withheld from it: its records go unreleased. Its
   * drainer still offers the parked list (the session's mail in it is
   * refused and taken back); a release then would reach whatever the
   * connection registered as next, a hold of the same session id there
   * included.
   */
  forget(recipient: Peer): void {
    this.byRecipient.delete(recipient)
  }

  /** `recipient`'s own parked list is gone (it closed): the holds behind it are released. */
  drop(recipient: Peer): void {
    const holds = this.byRecipient.get(recipient)
    if (holds === undefined) return
    this.byRecipient.delete(recipient)
    for (const hold of holds.values()) this.release(recipient, hold.id)
  }
}
