/**
 * The store journal's entries per message (StoreJournal.ts owns them): a
 * replay record set for a send, mail stored or about to be (with the
 * acknowledgement held until its message is read, when there is one), and an
 * acknowledgement held until a commit or a read. Plain classes, one object
 * per message each, made and read by the Router's synchronous code only.
 */
import type { OutFrame } from "../protocol/framing.ts"
import type { StoredRecord } from "../store/MailStore.ts"
import type { AskEdge } from "./AskEdges.ts"
import { type Outcome, recordKeyOf } from "./DeliveryRecords.ts"
import * as Encode from "./encode.ts"
import type { OutboundRecord } from "./OutboundRecord.ts"
import type { Mail, Peer } from "./Peer.ts"
import type { Holdable } from "./ReadAcks.ts"

/**
 * A replay record set for a send (`recordSent`): its key is built only if
 * something asks for it (the memory store does; the replay block writes the
 * id, replayBlock.ts), so a durable message costs no key string of its own
 * (docs/performance.md, "Durable, seventh stop").
 */
export class SentRecord implements StoredRecord {
  readonly sender: string
  readonly id: string
  readonly fingerprint: OutboundRecord
  readonly outcome: Outcome
  readonly at: number
  constructor(record: OutboundRecord, outcome: Outcome, at: number) {
    this.sender = record.senderKey
    this.id = record.id
    this.fingerprint = record
    this.outcome = outcome
    this.at = at
  }

  get key(): string {
    return recordKeyOf(this.sender, this.id)
  }
}

/**
 * Mail stored or about to be: `pending` while it is put by the next commit
 * (in the journal's `puts`, not yet taken). One entry per message serves both
 * the put and the delete that follows it, so accepting and forgetting a
 * message costs one table entry, not two (docs/performance.md, "Durable,
 * seventh stop"). Found by its sender and id (ByMessage.ts), and among
 * messages under one id for several sessions by its target (`sameId`). A put dropped
 * before it was taken lets its mail go (`drop`): the entry waits in `puts`
 * until the next take, the message, its text and its fields need not
 * (docs/performance.md, "Durable, eighth stop").
 *
 * It also carries the acknowledgement of its message held until the message
 * is read or stored (`ack`, a plain message's or a reply's, from
 * `holdAckUntilRead`): the lookup that finds the entry when the message is
 * read finds the acknowledgement too, and the commit that takes the entry
 * releases it, so such an acknowledgement has no table of its own
 * (docs/performance.md, "Durable, ninth stop").
 *
 * And whether the `expired` of an ask that went silently as answered by this
 * message, a reply, is stored with it or about to be (`silenced`,
 * SilencedJournal.ts): the same lookup that drops the entry ends that debt,
 * with no table of its own, and a reply that already left the store is
 * given none. A reply's entry keeps the edge it closed (`answers`), by which
 * the journal finds the stored reply that answered an ask
 * (SilencedJournal.replyTo; review revz Z4).
 */
export class JournalMail {
  readonly seq: number
  readonly senderKey: string
  readonly id: string
  /** The session the message is for: several messages under one id, for several sessions, each have a row. */
  readonly targetKey: string
  /**
   * The next entry of its sender and id, for another session (StoreJournal's table holds the first: ByMessage.ts);
   * undefined nearly always.
   */
  sameId: JournalMail | undefined = undefined
  /** The message; undefined once dropped before it was stored. */
  mail: Mail | undefined
  pending: boolean
  /** Its message's acknowledgement, held until the message is read or this entry's put is stored (`byReceipt`). */
  ack: HeldAck | undefined = undefined
  /** A debt for an ask silenced as answered by this reply is stored with it, or about to be (StoreJournal.askSilenced). */
  silenced = false
  /** The edge this message, a reply, closed (`Mail.answers`); undefined for any other message. Kept once `mail` goes. */
  readonly answers: AskEdge | undefined
  constructor(seq: number, mail: Mail, pending: boolean) {
    this.seq = seq
    this.senderKey = mail.senderKey
    this.id = mail.message.id
    this.targetKey = mail.targetKey
    this.mail = mail
    this.pending = pending
    this.answers = mail.answers
  }

  /** Dropped before it was stored: no longer pending, and its mail no longer kept. */
  drop(): void {
    this.pending = false
    this.mail = undefined
  }
}

/**
 * An acknowledgement (`delivered`) kept out of its connection's outbox until
 * the changes it reveals are stored (`holdAck`) or its message is read
 * (`holdAckUntilRead`, ReadAcks.ts). It keeps the fields its frame is made of,
 * not the frame: the frame is made when it is released (`frame`), written
 * straight into the framing buffer as every other `delivered` is
 * (frameParts.ts), so nothing but this one object waits per message.
 */
export class HeldAck implements Holdable<HeldAck> {
  readonly peer: Peer
  /** The sender's session key and its message id: the message acknowledged. */
  readonly senderKey: string
  readonly id: string
  readonly delivery: "socket_delivered" | "queued"
  /** The change count it reveals. */
  readonly upTo: number
  readonly byReceipt: boolean
  /**
   * The session the acknowledged send's mail is for, when the answer knows it (a first answer, and a retry's
   * answered from its record whose `to` resolves now): a failed commit refuses a `queued` one, dropping its mail, by
   * that session's row under the id (JournalAcks.refuseHeld; task byid item 2, review rvbf). Undefined: no row is
   * dropped for it, nor is it refused for another send's refusal under the id.
   */
  readonly targetKey: string | undefined
  answered: HeldAck | undefined = undefined
  constructor(
    peer: Peer,
    senderKey: string,
    id: string,
    delivery: "socket_delivered" | "queued",
    upTo: number,
    byReceipt: boolean,
    targetKey?: string
  ) {
    this.peer = peer
    this.senderKey = senderKey
    this.id = id
    this.delivery = delivery
    this.upTo = upTo
    this.byReceipt = byReceipt
    this.targetKey = targetKey
  }

  /** The `delivered` frame to queue once it is released. */
  frame(): OutFrame {
    return Encode.deliveredFrameParts(this.id, this.delivery)
  }

  /** A frame to queue right behind `frame` when it is released (HeldAckWithNotice); none here. */
  trailing(): OutFrame | undefined {
    return undefined
  }
}

/**
 * A held acknowledgement with a frame that must go right behind it — the
 * `ask_answered_elsewhere` notice of a replayed ask (SendReplays.answeredElsewhere,
 * review revp P2): queued at once, the notice would overtake the
 * `delivered` it follows. Released together; refused together after a failed
 * commit (the notice is dropped: a retry of the send is told again). A class
 * of its own, so an ordinary held acknowledgement carries no extra field.
 */
export class HeldAckWithNotice extends HeldAck {
  private readonly notice: OutFrame
  constructor(
    peer: Peer,
    senderKey: string,
    id: string,
    delivery: "socket_delivered" | "queued",
    upTo: number,
    notice: OutFrame,
    targetKey?: string
  ) {
    super(peer, senderKey, id, delivery, upTo, false, targetKey)
    this.notice = notice
  }

  /** The notice, right behind the acknowledgement. */
  override trailing(): OutFrame {
    return this.notice
  }
}
