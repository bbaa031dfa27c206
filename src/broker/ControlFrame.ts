/**
 * A `message_control` frame (a sender's cancel or supersede, P72/P73) on
 * its way to the receiver of the message it is about, knowing which: that
 * message's sender and the session it was sent to.
 *
 * To the writer it is a frame like any other (`FrameParts`: its text,
 * written as is). To Output it is ordered like that sender's mail for that
 * session: wherever that mail waits — a takeover's custody hold
 * (CustodyHold.ts), the recipient's own parked mailbox flush (Output's
 * `parkedMail` counts), a withheld return's old output (`Peer.returnWaits`:
 * a control from since its sender's return waits for that departure and
 * join, as the sender's mail from since does) — the control waits behind it, so the receiver never
 * learns of a cancel or supersede before the message it is about (review
 * revh3, C-ORD). Without this a control went straight into the recipient's
 * outbox; its client marked the unknown id replied, then got the message:
 * a withdrawn ask stayed pending.
 *
 * Not mail: it has no `frame` nor `mail` field, so the tests of
 * OutboundItems.ts take it for a frame of the connection's own everywhere
 * but where they ask `isControl`. When it cannot be written where it was
 * queued (its recipient closed while it waited, or a hold it was kept on
 * ended), or was written and never confirmed read by a `received-v1` client
 * (it is held in custody like mail, Custody.ts), or left in the part of a
 * write its socket never took, it goes where its session is now, as mail does
 * (MailReturns.takeBack) — from a closed connection to another instance
 * only with the message it is about, given back in the same close
 * (`messageKey`, MailReturns.giveBack), and from the old outbox at a
 * takeover by another instance only right after that message, handed over
 * with it or kept on a custody hold for the close (OutputEnd.handOver);
 * with the session away it is dropped, as a
 * control needs both sides live (a cancelled ask's message is dropped from
 * the mailbox on its own: `MailDelivery.isStale`) — but one a closed
 * connection gives back without its message, which its client confirmed,
 * is kept for that client instance's return (KeptControls.ts), which it
 * names itself (`instance`).
 *
 * One object per cancel or supersede, never per routed message.
 */
import type { FrameParts } from "../protocol/framing.ts"
import { idOfKey } from "./DeliveryRecords.ts"
import type { SessionInstance } from "./Registry.ts"

/** A `message_control` frame about `senderKey`'s message to session `to` (see the module header). */
export class ControlFrame implements FrameParts {
  /** UTF-16 code units of the frame text. */
  readonly length: number
  /** The registry key of the session the message it is about was sent to: its receiver. */
  readonly to: string
  /** The registry key of that message's sender (the session cancelling or superseding it). */
  readonly senderKey: string
  /**
   * Its sender's incarnation when it was routed (`Session.presentSince`), as
   * `OutboundMessage.senderSince`: a recipient that withholds that sender's
   * departure and return (`Peer.returnWaits`) holds a control from since the
   * return back as it holds the sender's mail from since (Output's
   * `waitsForReturn`, `parkBehindReturn`).
   */
  readonly senderSince: number
  /**
   * The record key of the message it is about (`recordKeyOf(senderKey, messageId)`, as `Mail.recordKey`):
   * given back from a closing connection to another instance, or handed over to one at a takeover, it
   * goes only with that message (MailReturns.giveBack, OutputEnd.handOver).
   */
  readonly messageKey: string
  /**
   * The client instance of session `to` it is written to, which was given the message it is about
   * (`Session.instance` where it is queued). Given back alone with that session away, it is kept for that
   * instance's return (KeptControls.ts): named here, not by the message's receipt route, which goes after
   * an hour while the control may wait unconfirmed longer (review revm M1).
   */
  readonly instance: SessionInstance
  private readonly body: string

  /**
   * @param body the frame text (encode.ts `controlFrame`).
   * @param to the receiver's registry key.
   * @param senderKey the sender's registry key.
   * @param senderSince the sender's `presentSince` as it cancels or supersedes.
   * @param messageKey the record key of the message it is about.
   * @param instance the receiver's client instance it is for (given that message).
   */
  constructor(body: string, to: string, senderKey: string, senderSince: number, messageKey: string, instance: SessionInstance) {
    this.body = body
    this.length = body.length
    this.to = to
    this.senderKey = senderKey
    this.senderSince = senderSince
    this.messageKey = messageKey
    this.instance = instance
  }

  /** The id of the message it is about (read out of `messageKey`: on the close path only). */
  get messageId(): string {
    return idOfKey(this.senderKey, this.messageKey)
  }

  /** Writes the text's UTF-8 bytes into `out` from `offset`; returns how many it wrote. */
  writeUtf8(out: Buffer, offset: number): number {
    return out.write(this.body, offset, "utf8")
  }

  /** The frame text. */
  text(): string {
    return this.body
  }
}
