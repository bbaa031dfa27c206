/**
 * Receipts and control (P70–P73). Every delivered message leaves a receipt
 * route — who sent it to whom — for an hour, until either side leaves. Along
 * it a receiver's `message_receipt` is forwarded to the sender, a sender's
 * `cancel_message` becomes the receiver's `message_control` cancel, and a
 * `supersedes` send first tells the receiver the old message is superseded.
 * A `cancel_message` for mail still in the mailbox removes it instead.
 *
 * Routes are keyed by the message's sender and id (ids are per sender: a
 * colliding id of another session never diverts them), and indexed by
 * receiver and id for receipts, which name only the message id: a receipt goes
 * to every live sender of a message with that id to that receiver. Routes
 * remember both sides' incarnations, so they lapse when either side leaves
 * without any bookkeeping at leave time.
 */
import { decodeClientFrame, isFrameDecodeError } from "../protocol/decode.ts"
import { DeliveryCode, Reason } from "../protocol/delivery.ts"
import { AgedMap } from "./AgedMap.ts"
import { recordKeyOf } from "./DeliveryRecords.ts"
import * as Encode from "./encode.ts"
import type { MailDelivery } from "./MailDelivery.ts"
import type { Mail, Peer } from "./Peer.ts"
import type { Session } from "./Registry.ts"
import type { FrameHandlers, RouterContext } from "./RouterContext.ts"
import type { SendStage } from "./Send.ts"

const HOUR = 3_600_000

/** The receiver index key: a receipt names only the receiver (its sender) and the message id. */
const receivedKeyOf = (receiverKey: string, messageId: string) => `${receiverKey}\u0002${messageId}`

interface ReceiptRoute {
  readonly senderKey: string
  readonly senderIncarnation: number
  readonly receiverKey: string
  readonly receiverIncarnation: number
}

/** The receipts concern: receipt routes, `message_receipt`, `cancel_message`, and the supersede stage. */
export class Receipts {
  private readonly ctx: RouterContext
  private readonly mail: MailDelivery
  private readonly forget: (messageKey: string) => void
  /** Receipt routes by record key (sender and id): an hour, at most 65,536. */
  private readonly routes = new AgedMap<string, ReceiptRoute>(65_536)
  /**
   * Record keys of the routes by receiver and message id, for receipts: one
   * key, or (when senders used the same id) several — no array per message.
   */
  private readonly received = new AgedMap<string, string | Array<string>>(65_536)

  /** @param forget drops what other concerns keep for a cancelled message (its ask edge). */
  constructor(ctx: RouterContext, mail: MailDelivery, forget: (messageKey: string) => void) {
    this.ctx = ctx
    this.mail = mail
    this.forget = forget
  }

  readonly frames: FrameHandlers = {
    message_receipt: { handle: (peer, frame) => this.onReceipt(peer, frame) },
    cancel_message: { handle: (peer, frame) => this.onCancel(peer, frame) }
  }

  /** P72: a `supersedes` must name this sender's earlier message to this (live) receiver. */
  readonly supersedes: SendStage = {
    check: (attempt) => {
      const supersedes = attempt.message.supersedes
      if (supersedes === undefined) return undefined
      if (attempt.target === undefined) {
        return { code: DeliveryCode.SupersedeTarget, reason: Reason.supersedeDisconnected }
      }
      const route = this.liveRoute(recordKeyOf(attempt.sender.key, supersedes), attempt.now)
      if (route === undefined || route.sender !== attempt.sender || route.receiver !== attempt.target) {
        return { code: DeliveryCode.SupersedeTarget, reason: Reason.supersedeNoRoute }
      }
      return undefined
    },
    // The receiver learns of the supersede before the new message.
    beforeDelivery: (attempt, target) => {
      const { message, sender } = attempt
      if (message.supersedes === undefined) return
      this.ctx.output.enqueue(
        target.peer,
        Encode.controlFrame(sender.infoJson, {
          messageId: message.supersedes,
          action: "supersede",
          supersededBy: message.id,
          timestamp: attempt.now
        })
      )
      this.ctx.records.rewrite(recordKeyOf(sender.key, message.supersedes), {
        ok: false,
        code: DeliveryCode.DeliverySuperseded,
        reason: Reason.superseded(message.id),
        retryable: false
      })
    },
    delivered: (attempt, mail, target) => this.addRoute(mail, attempt.sender, target, attempt.now)
  }

  /** Records who may exchange receipts about `mail` (also for mail flushed from the mailbox). */
  addRoute(mail: Mail, sender: Session, receiver: Session, now: number): void {
    const recordKey = mail.recordKey
    this.routes.set(recordKey, {
      senderKey: sender.key,
      senderIncarnation: sender.incarnation,
      receiverKey: receiver.key,
      receiverIncarnation: receiver.incarnation
    }, now)
    const key = receivedKeyOf(receiver.key, mail.message.id)
    const known = this.received.get(key)
    if (known === undefined || known === recordKey) this.received.set(key, recordKey, now)
    else if (typeof known === "string") this.received.set(key, [known, recordKey], now)
    else if (!known.includes(recordKey)) known.push(recordKey)
  }

  prune(now: number): void {
    this.routes.expire(now - HOUR - 1)
    this.received.expire(now - HOUR - 1)
  }

  /** The route's two sessions, if it is under an hour old and neither side has left since. */
  private liveRoute(
    messageKey: string,
    now: number
  ): { readonly sender: Session; readonly receiver: Session } | undefined {
    const found = this.routes.lookup(messageKey)
    if (found === undefined || now - found.at > HOUR) return undefined
    const route = found.value
    const sender = this.ctx.registry.byKey.get(route.senderKey)
    const receiver = this.ctx.registry.byKey.get(route.receiverKey)
    if (sender === undefined || sender.incarnation !== route.senderIncarnation) return undefined
    if (receiver === undefined || receiver.incarnation !== route.receiverIncarnation) return undefined
    return { sender, receiver }
  }

  private onReceipt(peer: Peer, raw: unknown): void {
    const frame = decodeClientFrame.message_receipt(raw)
    if (isFrameDecodeError(frame)) return this.ctx.protocolError(peer, frame.message)
    const session = peer.session
    if (session === undefined) return
    const found = this.received.get(receivedKeyOf(session.key, frame.receipt.messageId))
    if (found === undefined) return
    const now = this.ctx.now()
    const receipt = Encode.receiptFrame(session.infoJson, frame.receipt)
    for (const key of typeof found === "string" ? [found] : found) {
      const route = this.liveRoute(key, now)
      if (route !== undefined && route.receiver === session) this.ctx.output.enqueue(route.sender.peer, receipt)
    }
  }

  private onCancel(peer: Peer, raw: unknown): void {
    const frame = decodeClientFrame.cancel_message(raw)
    if (isFrameDecodeError(frame)) return this.ctx.protocolError(peer, frame.message)
    const { output, records } = this.ctx
    const session = peer.session
    const messageId = frame.messageId
    if (session === undefined) return output.enqueue(peer, Encode.bareDeliveryFailedFrame(messageId, Reason.cannotCancel))
    const key = recordKeyOf(session.key, messageId)
    if (this.mail.cancel(session, key)) {
      this.forget(key)
      return output.enqueue(peer, Encode.bareDeliveredFrame(messageId))
    }
    const now = this.ctx.now()
    const route = this.liveRoute(key, now)
    if (route !== undefined && route.sender === session) {
      output.enqueue(route.receiver.peer, Encode.controlFrame(session.infoJson, { messageId, action: "cancel", timestamp: now }))
      this.forget(key)
      records.rewrite(recordKeyOf(session.key, messageId), {
        ok: false,
        code: DeliveryCode.DeliveryCancelled,
        reason: Reason.cancelled,
        retryable: false
      })
      return output.enqueue(peer, Encode.bareDeliveredFrame(messageId))
    }
    output.enqueue(peer, Encode.bareDeliveryFailedFrame(messageId, Reason.cannotCancel))
  }
}
