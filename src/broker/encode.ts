/**
 * Broker → client frames, built as strings around cached JSON fragments
 * (hot-path.md §4.5): a sender's SessionInfo is encoded once per change and
 * spliced into every frame that carries it. The two frames of every send
 * (`message`, `delivered`) are kept in parts instead (frameParts.ts).
 */
import type { DeliveryCode } from "../protocol/delivery.ts"
import type { DeliveryChoice } from "../protocol/deliveryModes.ts"
import type { Message, MessageControl, MessageReceipt } from "../protocol/frames.ts"
import { frameBytes, frameText, type OutFrame } from "../protocol/framing.ts"
import { DELIVERED_TAIL, DeliveredFrameParts, MessageFrameParts } from "./frameParts.ts"

const q = JSON.stringify

/**
 * `registered` (P12), with the granted features, for a child bound to a
 * supervisor (`supervisor-v1`) the supervisor's id, and for a client granted
 * `state-epoch-v1` the broker's state epoch.
 */
export const registeredFrame = (
  sessionId: string,
  features: ReadonlyArray<string>,
  supervisorSessionId?: string,
  stateEpoch?: string
): string =>
  `{"type":"registered","sessionId":${q(sessionId)},"features":${q(features)}${
    supervisorSessionId === undefined ? "" : `,"supervisorSessionId":${q(supervisorSessionId)}`
  }${stateEpoch === undefined ? "" : `,"stateEpoch":${q(stateEpoch)}`}}`

/** `registration_failed` (`supervisor-v1`): why a registration was refused; the connection ends after it. */
export const registrationFailedFrame = (reason: string, code?: string): string =>
  `{"type":"registration_failed","reason":${q(reason)}${code === undefined ? "" : `,"code":${q(code)}`}}`

/** `taken_over` (`takeover-v1`): another registration took this session's id, giving `pid`; the connection ends after it. */
export const takenOverFrame = (sessionId: string, pid: number): string =>
  `{"type":"taken_over","sessionId":${q(sessionId)},"pid":${q(pid)}}`

/** How every `ask_expired` frame begins (`askExpiredFrame`): what tells one an earlier build stored (MailDelivery.restoreNotice). */
export const ASK_EXPIRED_PREFIX = `{"type":"ask_expired",`

/** `ask_expired` (`ask-expiry-v1`): the edge of the asker's ask `messageId` closed unanswered at `expiredAt`. */
export const askExpiredFrame = (messageId: string, expiredAt: number): string =>
  `${ASK_EXPIRED_PREFIX}"messageId":${q(messageId)},"expiredAt":${q(expiredAt)}}`

/** `ask_answered_elsewhere` (`reply-elsewhere-v1`): the ask `messageId` was answered by `replyId`, handed to another instance. */
export const askAnsweredElsewhereFrame = (messageId: string, replyId: string): string =>
  `{"type":"ask_answered_elsewhere","messageId":${q(messageId)},"replyId":${q(replyId)}}`

/** `supervisor_authorized` (`supervisor-v1`): the capability issued (or restored) for `childName`. */
export const supervisorAuthorizedFrame = (requestId: string, childName: string, capability: string): string =>
  `{"type":"supervisor_authorized","requestId":${q(requestId)},"childName":${q(childName)},"capability":${q(capability)}}`

/** `supervisor_authorization_failed` (`supervisor-v1`): why no capability was issued. */
export const supervisorAuthorizationFailedFrame = (requestId: string, reason: string): string =>
  `{"type":"supervisor_authorization_failed","requestId":${q(requestId)},"reason":${q(reason)}}`

/** `error` (P05, P18). */
export const errorFrame = (error: string): string => `{"type":"error","error":${q(error)}}`

/** `health_ok` (P20). */
export const healthOkFrame = (requestId: string): string =>
  `{"type":"health_ok","requestId":${q(requestId)},"protocol":"pi-intercom","version":1}`

/** `sessions` as the base protocol has it (P31). */
export const sessionsFrame = (requestId: string, infoJsons: ReadonlyArray<string>): string =>
  `{"type":"sessions","requestId":${q(requestId)},"sessions":[${infoJsons.join(",")}]}`

/**
 * UTF-8 bytes of a `sessions` frame besides the session entries and commas (bytes, not UTF-16 units: a request id
 * of 256 units can be 768 bytes).
 */
export const sessionsFrameOverhead = (requestId: string): number => frameBytes(sessionsFrame(requestId, [])) + 16

/** A page of a paged list (`list-page-v1`): the sessions, how many there are in all, and where to go on. */
export const sessionsPageFrame = (
  requestId: string,
  infoJsons: ReadonlyArray<string>,
  total: number,
  nextCursor: string | undefined
): string =>
  `{"type":"sessions","requestId":${q(requestId)},"sessions":[${infoJsons.join(",")}],"total":${total}${
    nextCursor === undefined ? "" : `,"nextCursor":${q(nextCursor)}`
  }}`

/** UTF-8 bytes of a page frame besides the session entries and commas (with room for the longest cursor). */
export const sessionsPageOverhead = (requestId: string, total: number): number =>
  frameBytes(sessionsPageFrame(requestId, [], total, "9999999999999999")) + 16

/** `session_left` (P33). */
export const sessionLeftFrame = (sessionId: string): string =>
  `{"type":"session_left","sessionId":${q(sessionId)}}`

/**
 * A `message` frame. `askTimeoutMs` (extension `ask-timeout-v1`, only for a
 * recipient granted it) says how long the asker waits, from `brokerReceivedAt`;
 * `channel` (extension `supervisor-v1`) marks a child's message to its supervisor;
 * `replyError` (extension `reply-error-v1`) says the ask this reply answers failed.
 * `delivery` (extension `delivery-v1`) carries the sender's delivery mode.
 * `traceparent` (extension `trace-v1`) carries the trace context.
 *
 * The message's JSON with the broker's two timestamps reads as
 * `JSON.stringify({ ...message, brokerReceivedAt, brokerDeliveredAt })`.
 * Without those keys in the message (every send from a well-behaved client)
 * the frame is kept in parts (frameParts.ts): the timestamps go after the
 * message's own JSON, with no copy of the message object per delivery and no
 * frame string to flatten when it is written.
 */
export const messageFrame = (
  fromJson: string,
  message: Message,
  receivedAt: number,
  deliveredAt: number,
  askTimeoutMs?: number,
  channel?: "supervisor",
  replyError?: string,
  delivery?: DeliveryChoice,
  traceparent?: string
): OutFrame => {
  const tail = messageTail(askTimeoutMs, channel, replyError, delivery, traceparent)
  if (message.brokerReceivedAt !== undefined || message.brokerDeliveredAt !== undefined) {
    const stamped = q({ ...message, brokerReceivedAt: receivedAt, brokerDeliveredAt: deliveredAt })
    return `{"type":"message","from":${fromJson},"message":${stamped}${tail}}`
  }
  return new MessageFrameParts(fromJson, q(message), receivedAt, deliveredAt, tail)
}

/**
 * The extension fields of a `message` frame, after the message, in the order
 * `messageFrame` writes them: `""` when there are none (a base recipient).
 */
export const messageTail = (
  askTimeoutMs: number | undefined,
  channel: "supervisor" | undefined,
  replyError: string | undefined,
  delivery: DeliveryChoice | undefined,
  traceparent: string | undefined
): string =>
  `${askTimeoutMs === undefined ? "" : `,"askTimeoutMs":${askTimeoutMs}`}${
    channel === undefined ? "" : `,"channel":"${channel}"`
  }${replyError === undefined ? "" : `,"replyError":${q(replyError)}`}${
    delivery === undefined ? "" : deliveryFields(delivery)
  }${traceparent === undefined ? "" : `,"traceparent":"${traceparent}"`}`

/**
 * `base` — a `message` frame `messageFrame` built with no extension field —
 * with `tail` (`messageTail`) added after its message: the frame
 * `messageFrame` builds for the same message, stamps and fields, without
 * encoding the message again (issue 16). In parts, the new frame shares the
 * base frame's strings; a frame kept as one string (a message carrying
 * broker timestamps of its own) is cut before its closing brace.
 */
export const withMessageTail = (base: OutFrame, tail: string): OutFrame => {
  if (tail === "") return base
  if (base instanceof MessageFrameParts) return base.withTail(tail)
  const text = frameText(base)
  return `${text.slice(0, -1)}${tail}}`
}

/** The `delivery-v1` fields of a forwarded message. */
const deliveryFields = (delivery: DeliveryChoice): string =>
  `,"delivery":"${delivery.delivery}"${delivery.queueMode === undefined ? "" : `,"queueMode":"${delivery.queueMode}"`}${
    delivery.threadId === undefined ? "" : `,"threadId":${q(delivery.threadId)}`
  }`

/** `delivery_queued` (`delivery-v1`): a replace message was staged, due at `deliverAt` (C-DLV-6). */
export const deliveryQueuedFrame = (messageId: string, threadId: string, deliverAt: number): string =>
  `{"type":"delivery_queued","messageId":${q(messageId)},"threadId":${q(threadId)},"deliverAt":${deliverAt}}`

/** `delivered` with delivery details (P41), as one string: what `deliveredFrameParts` writes, byte for byte (its tests). */
export const deliveredFrame = (messageId: string, delivery: "socket_delivered" | "queued"): string =>
  `{"type":"delivered","messageId":${q(messageId)}${DELIVERED_TAIL[delivery]}`

/** `delivered` with delivery details (P41), in parts: written into the framing buffer as it is (frameParts.ts). */
export const deliveredFrameParts = (messageId: string, delivery: "socket_delivered" | "queued"): OutFrame =>
  new DeliveredFrameParts(messageId, delivery)

/** `delivery_failed` with its code and retryability (P45). */
export const deliveryFailedFrame = (
  messageId: string,
  code: DeliveryCode,
  reason: string,
  retryable: boolean
): string =>
  `{"type":"delivery_failed","messageId":${q(messageId)},"reason":${
    q(reason)
  },"delivery":"failed","code":"${code}","retryable":${retryable},"outcomeKnown":true}`

/** `cancel_message` answers carry no delivery details (P71). */
export const bareDeliveredFrame = (messageId: string): string => `{"type":"delivered","messageId":${q(messageId)}}`

/** A bare `delivery_failed`: the answer to a refused `cancel_message` (P71). */
export const bareDeliveryFailedFrame = (messageId: string, reason: string): string =>
  `{"type":"delivery_failed","messageId":${q(messageId)},"reason":${q(reason)}}`

/** A receipt forwarded to a message's sender, `from` its receiver (P70). */
export const receiptFrame = (fromJson: string, receipt: MessageReceipt): string =>
  `{"type":"message_receipt","from":${fromJson},"receipt":${q(receipt)}}`

/** `message_control`: a sender's cancel or supersede, for the receiver (P72, P73). */
export const controlFrame = (fromJson: string, control: MessageControl): string =>
  `{"type":"message_control","from":${fromJson},"control":${q(control)}}`
