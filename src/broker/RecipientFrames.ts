/**
 * A `message` frame as one recipient is written it: the base frame (the
 * message with the broker's two stamps) plus the fields of the extensions
 * that recipient was granted — an ask's timeout (`ask-timeout-v1`), a
 * supervisor channel (`supervisor-v1`), a failure reply's mark in the form
 * it understands (ReplyErrors.ts), a delivery mode (`delivery-v1`) and a
 * trace context (`trace-v1`). A base client never sees a field it did not
 * ask for in `register`.
 *
 * Kept apart from the ask edges (Asks.ts), which it used to sit in: every
 * kind of mail is written through it — live sends (Send.ts, `liveFrameFor`,
 * which splices the granted fields into the frame the size check built so
 * the message is stringified once per send, issue 16), mail flushed from the
 * mailbox (MailDelivery.ts), withdrawn copies and questions
 * (`messageFrameFor`). `longestTail` is the run of fields the size checks
 * count: the most any recipient can be written; `fitsFrame` is the check
 * itself, run by the send pipeline (Send.ts) and, for a durable question's
 * notification, by Questions.ts before the question is queued.
 */
import { MAX_FRAME_BYTES } from "../protocol/constants.ts"
import { ASK_TIMEOUT_V1, DELIVERY_V1, SUPERVISOR_V1, TRACE_V1 } from "../protocol/features.ts"
import { frameBytes, type OutFrame } from "../protocol/framing.ts"
import * as Encode from "./encode.ts"
import type { Mail, Peer } from "./Peer.ts"
import { replyErrorFor } from "./ReplyErrors.ts"

/**
 * The `message` frame for `recipient`: with the ask's timeout when it was
 * granted `ask-timeout-v1`, the channel with `supervisor-v1`, a failure
 * reply's `replyError` in the form the recipient understands (ReplyErrors.ts),
 * the delivery mode with `delivery-v1`, and the trace context with `trace-v1`.
 * `deliveredAt` is a broker stamp (BrokerStamps, as the mail's
 * `brokerReceivedAt`): the frame carries it, or the receipt when it is
 * lower, so it is never below the receipt and the gap is the wait in the
 * broker. It is lower only for mail a durable broker restored from above
 * its capped stamp floor, delivered before this run's stamps reach its
 * receipt (Router.restoreStamps; review revcb item 4).
 */
export const messageFrameFor = (mail: Mail, recipient: Pick<Peer, "features">, deliveredAt: number): OutFrame => {
  const failure = mail.replyError === undefined ? undefined : replyErrorFor(mail.message, mail.replyError, recipient)
  const receivedAt = mail.brokerReceivedAt
  return Encode.messageFrame(
    mail.fromJson,
    failure?.message ?? mail.message,
    receivedAt,
    deliveredAt < receivedAt ? receivedAt : deliveredAt,
    mail.askTimeoutMs !== undefined && recipient.features.has(ASK_TIMEOUT_V1) ? mail.askTimeoutMs : undefined,
    mail.channel !== undefined && recipient.features.has(SUPERVISOR_V1) ? mail.channel : undefined,
    failure?.replyError,
    mail.delivery !== undefined && recipient.features.has(DELIVERY_V1) ? mail.delivery : undefined,
    mail.traceparent !== undefined && recipient.features.has(TRACE_V1) ? mail.traceparent : undefined
  )
}

/**
 * Whether `recipient`'s `message` frame for `mail` (`messageFrameFor`) is
 * not the base frame — the message as sent with the broker's two stamps
 * and no other field — because it carries a field `recipient` was granted
 * an extension for, or a failure reply's mark (either form). False: the
 * base frame the send pipeline built for its size check is the one to
 * write, with no second encoding (issue 16). Tests the recipient's grants,
 * not only the mail's fields: an ask always has `askTimeoutMs`, and a base
 * recipient is written it without.
 */
export const extendsBaseFrame = (mail: Mail, recipient: Pick<Peer, "features">): boolean =>
  mail.replyError !== undefined ||
  (mail.askTimeoutMs !== undefined && recipient.features.has(ASK_TIMEOUT_V1)) ||
  (mail.channel !== undefined && recipient.features.has(SUPERVISOR_V1)) ||
  (mail.delivery !== undefined && recipient.features.has(DELIVERY_V1)) ||
  (mail.traceparent !== undefined && recipient.features.has(TRACE_V1))

/**
 * The longest run of extension fields any recipient can be written after
 * `mail`'s message: every field the mail carries, as for a recipient granted
 * every extension (`Encode.messageTail`), `""` when it carries none. The
 * send pipeline's size check adds its bytes to the base frame's, so that no
 * recipient's frame — written now, flushed from the mailbox, staged, or
 * given back and written again — can pass 1 MiB after the send was
 * acknowledged (C-BRK-3). A failure reply's mark is not in it: its form
 * differs by recipient and the size check builds both (Send.ts).
 */
export const longestTail = (mail: TailFields): string =>
  Encode.messageTail(mail.askTimeoutMs, mail.channel, undefined, mail.delivery, mail.traceparent)

/**
 * The fields of a mail that `longestTail` writes: all a size check needs of
 * it besides the base frame.
 *
 * @category models
 * @since 0.1.0
 */
export type TailFields = Pick<Mail, "askTimeoutMs" | "channel" | "delivery" | "traceparent">

/**
 * Whether `frame` with `tail` (the extension fields written after its
 * message, `longestTail`) fits the 1 MiB limit: checked cheaply when it
 * obviously does (three bytes at most per UTF-16 unit), and without
 * building the longer text. The one size check of a `message` frame before
 * the broker takes it on (C-BRK-3): a send (Send.ts) and a durable
 * question's notification (Questions.ts).
 *
 * @category validation
 * @since 0.1.0
 */
export const fitsFrame = (frame: OutFrame, tail: string): boolean =>
  (frame.length + tail.length) * 3 <= MAX_FRAME_BYTES ||
  frameBytes(frame) + Buffer.byteLength(tail, "utf8") <= MAX_FRAME_BYTES

/**
 * The extension fields in `mail`'s `longestTail`, by name, in the order
 * written: what a too-large refusal names as the room they take.
 *
 * @category validation
 * @since 0.1.0
 */
export const tailFieldNames = (mail: TailFields): ReadonlyArray<string> => {
  const names: Array<string> = []
  if (mail.askTimeoutMs !== undefined) names.push("askTimeoutMs")
  if (mail.channel !== undefined) names.push("channel")
  const delivery = mail.delivery
  if (delivery !== undefined) {
    names.push("delivery")
    if (delivery.queueMode !== undefined) names.push("queueMode")
    if (delivery.threadId !== undefined) names.push("threadId")
  }
  if (mail.traceparent !== undefined) names.push("traceparent")
  return names
}

/**
 * `recipient`'s `message` frame for `mail` as the send pipeline writes it
 * live — what `messageFrameFor(mail, recipient, mail.brokerReceivedAt)`
 * builds — made from `base`, the frame the size check built
 * (`Encode.messageFrame` of the mail's sender and message, both stamps
 * `mail.brokerReceivedAt`, no extension field): `base` itself for a
 * recipient that gets no extension field (`extendsBaseFrame`), else `base`
 * with the fields it was granted spliced in after the message, so the
 * message is stringified once whatever the grants (issue 16). `longest`,
 * when given, is `longestTail(mail)`, as the size check built it: reused,
 * not built again, for a recipient granted every field the mail carries. A
 * failure reply's message differs by recipient (ReplyErrors.ts): it is
 * built by `messageFrameFor`, and `base` is not read.
 */
export const liveFrameFor = (base: OutFrame, mail: Mail, recipient: Pick<Peer, "features">, longest?: string): OutFrame => {
  if (!extendsBaseFrame(mail, recipient)) return base
  if (mail.replyError !== undefined) return messageFrameFor(mail, recipient, mail.brokerReceivedAt)
  const features = recipient.features
  const askTimeoutMs = mail.askTimeoutMs !== undefined && features.has(ASK_TIMEOUT_V1) ? mail.askTimeoutMs : undefined
  const channel = mail.channel !== undefined && features.has(SUPERVISOR_V1) ? mail.channel : undefined
  const delivery = mail.delivery !== undefined && features.has(DELIVERY_V1) ? mail.delivery : undefined
  const traceparent = mail.traceparent !== undefined && features.has(TRACE_V1) ? mail.traceparent : undefined
  const grantedAll = askTimeoutMs === mail.askTimeoutMs && channel === mail.channel && delivery === mail.delivery &&
    traceparent === mail.traceparent
  return Encode.withMessageTail(
    base,
    grantedAll && longest !== undefined ? longest : Encode.messageTail(askTimeoutMs, channel, undefined, delivery, traceparent)
  )
}
