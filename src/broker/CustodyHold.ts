/**
 * A takeover's hold behind the old connection's custody (`received-v1`,
 * P16; simulation seed 81).
 *
 * At a takeover by another client instance (not the client's own rejoin),
 * the mail the old connection wrote and its client never confirmed reading
 * (its custody, Custody.ts), and the part of its write in progress that its
 * socket had taken, stay with the old connection until it closes: its client
 * may still be alive and confirm them while the connection closes
 * (`PeerReader.confirmWhileClosing`), and then they must not be delivered
 * again to the new instance. What is left unconfirmed comes back at that
 * close (`Router.detach`), to the session's new connection. Mail of the same
 * senders reaching the new connection meanwhile — the old outbox's, handed
 * over at once (`Output.handOver`), and newer mail — would overtake it.
 *
 * So the new connection holds, until the old close, the messages of exactly
 * those senders (per sender: others' mail flows at once): routed mail is
 * parked with its sender's batch and its drainer waits (the sender is slowed,
 * as behind a full outbox, so nothing held grows without bound); mail forced
 * to it (handed over, requeued, a due replace message) is kept here, in
 * order — only mail that already existed, so bounded by what the broker
 * holds anyway. At the old close, its custody and untaken write come back
 * first, then what is kept here, and the waiting drainers are woken: the
 * sender's order holds. No hold is taken when nothing of the old
 * connection's is unconfirmed: a takeover of a client that confirmed all it
 * read holds nothing.
 *
 * Only messages queued for the session taken over are held (the holder may
 * leave it and register as another: its mail then flows). A held sender that
 * leaves while the hold lasts is heard leaving after its held mail: its
 * `session_left` is withheld from the holder until the hold ends
 * (`departures`, Output.holdDepartureBehindCustody), as behind a
 * recipient's own parked output (WithheldDepartures.ts).
 *
 * The hold ends with the old close, which a takeover always starts and
 * which is bounded (`endTakenOver` ends the connection; its `finish` waits at
 * most END_GRACE for the flush, then destroys it). Were it never to come, the
 * held senders' mail for that session would wait with it (their readers held
 * back), as they would behind a recipient that never reads.
 *
 * One hold at a time per connection, and the hold is the session's: a
 * takeover of a connection that still holds carries the hold over to the
 * next one (`Output.takeOverHold`), adding the senders of that intermediate
 * connection's own custody, and the hold then ends only when every
 * connection it waits for has closed (`pending`); one closing while another
 * is awaited has its held senders' mail put at the hold's front
 * (`Output.keepReturned`: a sender's custody is older than its mail kept
 * meanwhile). If the new connection closes (or leaves the session) first,
 * what the hold keeps (and what the held drainers offer then) stays with
 * it; the session registering anew before the old close takes the hold
 * over on its new connection (`Output.adoptHold`), its mailbox's flush
 * held with the rest. The holder's own output that the hold covers (its
 * mailbox's flush, output handed over) is kept, not waited for: that
 * drainer gates the connection's reading. It is kept when its batch ends
 * (`Output.parkFor`), not parked for the drainer to bring here: parked, the
 * old close could come first (its custody then forced behind that flush),
 * or a held sender's newer mail kept here ahead of it. What is left: when the old close
 * comes while the session is away, its custody goes to the mailbox after
 * the mail sent to the session meanwhile (the mailbox took that at once),
 * so those senders' newer mail goes first there.
 *
 * Ownership: written only by Output (`Peer.custodyHold`, `Peer.releasesHold`).
 */
import type { OutboundItem, OutboundMessage, Peer } from "./Peer.ts"

/** The senders whose messages a connection holds until an old connection's close, and what it keeps of them. */
export class CustodyHold {
  /** The registry key of the session taken over: only messages queued for it are held. */
  readonly key: string
  /** Sender keys with mail in the custody (or write in progress) of a connection this hold waits for. */
  readonly senders: Set<string>
  /** Messages of those senders forced to the holding connection meanwhile, oldest first. */
  readonly items: Array<OutboundItem> = []
  /**
   * Ids of sessions whose departure the holder withholds until the hold ends
   * (`Output.holdDepartureBehindCustody`): a held sender that left while its
   * mail waited here or in a custody must not be heard leaving before it.
   */
  readonly departures: Array<string> = []
  /** The closes still to come before the hold ends: one per connection taken over with mail unconfirmed. */
  pending = 1
  /** The connection that holds (the session's current one). */
  holder: Peer

  constructor(key: string, senders: Set<string>, holder: Peer) {
    this.key = key
    this.senders = senders
    this.holder = holder
  }

  /** Whether message `item` is one this hold keeps back: for the session taken over, from a held sender. */
  holds(item: OutboundMessage): boolean {
    return item.to === this.key && this.senders.has(item.mail.senderKey)
  }
}

/**
 * The senders of the messages for session `key` that `peer` (taken over,
 * its client another instance) may give back at its close: those in its
 * custody and in its write in progress. Undefined when there are none, or
 * when `peer` has no custody (a base client's written mail is delivered).
 * A scan, at a takeover only.
 */
export const sendersToHold = (peer: Peer, key: string): Set<string> | undefined => {
  const custody = peer.custody
  if (custody === undefined) return undefined
  const senders = new Set<string>()
  custody.sendersFor(key, senders)
  const batch = peer.writer.inFlight
  if (batch !== undefined) {
    for (const item of batch.returnable) if ("mail" in item && item.to === key) senders.add(item.mail.senderKey)
  }
  return senders.size === 0 ? undefined : senders
}
