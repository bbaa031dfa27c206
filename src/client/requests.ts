/**
 * A client's requests to the broker, before they go on the wire: the input
 * of a send, what makes two sends "the same", the send frame's text (refused
 * here when the broker would drop the connection for it or answer it under
 * another id), and how a request waits for its answer.
 */
import { Deferred, Duration, Effect } from "effect"
import { MAX_FRAME_BYTES } from "../protocol/constants.ts"
import { decodeMessage, isFrameDecodeError } from "../protocol/decode.ts"
import { DeliveryCode, Reason } from "../protocol/delivery.ts"
import {
  checkDelivery,
  type DeliveryChoice,
  type DeliveryMode,
  isDefaultDelivery,
  isDeliveryRefusal,
  type QueueMode
} from "../protocol/deliveryModes.ts"
import { ASK_TIMEOUT_V1, DELIVERY_V1, REPLY_ERROR_V1, SUPERVISOR_V1, TRACE_V1 } from "../protocol/features.ts"
import { frameBytes } from "../protocol/framing.ts"
import type { Message } from "../protocol/frames.ts"
import { MAX_REPLY_ERROR_LENGTH } from "../protocol/limits.ts"
import { replyErrorText } from "../protocol/replyError.ts"
import { type ConnectionLost, type DeliveryError, deliveryError, RequestTimeout } from "./errors.ts"

/**
 * The input of `IntercomClient.send` (P40, P47): `to` as the broker resolves
 * it, or an exact send to one live endpoint with `targetId` and `targetEpoch`.
 */
export interface SendRequest {
  /** Exact id, name ignoring case, or id prefix, resolved by the broker (P42). */
  readonly to: string
  readonly message: Message
  readonly targetId?: string
  readonly targetEpoch?: string
  /**
   * For an ask (`expectsReply`): how long the asker will wait, so the broker
   * keeps the ask open as long (`ask-timeout-v1`; ignored by brokers without it).
   */
  readonly askTimeoutMs?: number
  /**
   * For an ask: when the asker first sent it (Clock milliseconds). Each
   * write of the frame — the first, or one after a reconnect — carries
   * `askTimeoutMs` less the time since (`askTimeoutAt`), so the broker's
   * deadline stays the first send's however late the ask reaches it. Not
   * part of what makes two sends the same (C-BRK-8), nor is `askTimeoutMs`.
   */
  readonly askSince?: number
  /**
   * For a reply (`message.replyTo` set): the ask failed here, and its asker
   * gets this text as an error instead of an answer (`reply-error-v1`,
   * C-ASK-7). A broker without the extension gets the reply with its text
   * marked as an error (`replyErrorText`). Without `replyTo` the send is refused.
   */
  readonly replyError?: string
  /**
   * How the message reaches a busy recipient (`delivery-v1`, C-DLV-1):
   * `steer` (default), `queue` or `passive`. An ask is never passive.
   */
  readonly delivery?: DeliveryMode
  /** With `delivery: "queue"`: `stack` (default) or `replace` (needs `threadId`). */
  readonly queueMode?: QueueMode
  /** With `queueMode: "replace"`: the thread whose latest message replaces earlier staged ones. */
  readonly threadId?: string
  /** Legacy, send-only alias for `delivery: "passive"` (C-DLV-3). */
  readonly passive?: boolean
  /**
   * The W3C trace context of the span sending it (`trace-v1`; dropped for a
   * broker without it). `IntercomClient` sets it itself when a tracer is
   * installed (docs/observability.md); it is not part of what makes two
   * sends "the same" (C-BRK-8).
   */
  readonly traceparent?: string
}

/** Why a send failed: the broker refused it, did not answer in time, or the connection dropped (outcome unknown). */
export type SendError = DeliveryError | RequestTimeout | ConnectionLost

/** The frame a send goes in: `send`, or a child's `supervisor_send` (extension `supervisor-v1`). */
export type SendFrameType = "send" | "supervisor_send"

/**
 * What makes two sends with one id "the same" (C-BRK-8): frame, target and authored content. A child's
 * `supervisor_send` is signed under `SUPERVISOR_TO` whichever supervisor a connection addressed it to: it is the same
 * send to the client on every connection (PendingSends.ts `addressedTo`), and the record of sends lost on the way
 * (Resending.ts `lostOnTheWay`) finds its write to a new supervisor as one after the loss of its write to the old
 * (review revbs BS1: signed by its supervisor's id, a retry after a rebinding was read as a send never lost).
 */
export const signatureOf = (request: SendRequest, frameType: SendFrameType): string =>
  JSON.stringify([
    frameType,
    frameType === "supervisor_send" ? SUPERVISOR_TO : request.to,
    request.message.content,
    request.message.replyTo ?? null,
    request.message.expectsReply ?? null,
    request.message.supersedes ?? null,
    request.replyError ?? null,
    request.delivery ?? null,
    request.queueMode ?? null,
    request.threadId ?? null,
    request.passive ?? null
  ])

/**
 * The `askTimeoutMs` a write of `request` at `now` carries: the ask's
 * timeout less the whole milliseconds since it was first sent (`askSince`,
 * which may be fractional: the time since is rounded up, so the broker's
 * deadline is never later than the first send's and the field stays the
 * whole number it accepts), at least 1 ms (the broker's least); the
 * timeout itself without `askSince`. `sendFrameText` writes no ask whose
 * time is up (`askTimeLeft`).
 */
export const askTimeoutAt = (request: SendRequest, now: number): number | undefined =>
  request.askTimeoutMs === undefined || request.askSince === undefined
    ? request.askTimeoutMs
    : Math.max(1, request.askTimeoutMs - Math.max(0, Math.ceil(now - request.askSince)))

/** What is left at `now` of an ask's timeout since its first send; undefined without both `askTimeoutMs` and `askSince`. */
export const askTimeLeft = (request: SendRequest, now: number): number | undefined =>
  request.askTimeoutMs === undefined || request.askSince === undefined
    ? undefined
    : request.askTimeoutMs - Math.max(0, Math.ceil(now - request.askSince))

/**
 * The `to` a child's message to its supervisor (`supervisor_send`) is noted
 * under as the broker acknowledges it (StateEpochs.ts `LostSend.to`), in
 * time or read late (LateVerdicts.ts): a blocking `contact_supervisor`
 * watches its question under it.
 *
 * @category constants
 * @since 0.1.0
 */
export const SUPERVISOR_TO = "supervisor"

/**
 * Why an ask was not written again after a reconnect: its whole timeout,
 * counted from its first send (`askSince`), ran out before the write, so its
 * asker waits for it no longer (`DeliveryCode.DeliveryExpired`; the session's
 * ask ends in `ReplyTimeout`, Ask.ts).
 */
export const ASK_TIMED_OUT_UNWRITTEN =
  "The ask's timeout, counted from its first send, ran out before it could be written again after a reconnect; " +
  "it was not sent again, and nobody waits for its answer any more. Ask again if you still need the answer"

/** Why a `replyError` cannot go out with `message` (the broker's own reasons), or undefined. */
const replyErrorRefusal = (message: Message, replyError: string): string | undefined => {
  if (replyError.trim() === "" || replyError.length > MAX_REPLY_ERROR_LENGTH) {
    return Reason.invalidReplyError(MAX_REPLY_ERROR_LENGTH)
  }
  return message.replyTo === undefined ? Reason.replyErrorWithoutReplyTo : undefined
}

/**
 * The checked delivery choice of a request (C-DLV-2…4, C-ASK-10), or the
 * refusal as the error the send fails with; nothing is sent for a refusal.
 */
export const deliveryOfRequest = (request: SendRequest): DeliveryChoice | DeliveryError => {
  const kind = request.message.expectsReply === true ? "ask" : request.message.replyTo === undefined ? "send" : "reply"
  const choice = checkDelivery(request, kind)
  if (!isDeliveryRefusal(choice)) return choice
  return deliveryError({
    messageId: request.message.id,
    code: DeliveryCode.InvalidMessage,
    reason: choice.reason,
    retryable: false
  })
}

/**
 * Why the `message` of a send frame's text is not what the broker accepts, or
 * `undefined` when it is. Read from the text, since JSON writes `NaN` and
 * `Infinity` as `null`: the refusal names the field and says so.
 */
const invalidMessageReason = (text: string): string | undefined => {
  const frame: unknown = JSON.parse(text)
  if (typeof frame !== "object" || frame === null || !("message" in frame)) return Reason.invalidMessage
  const decoded = decodeMessage(frame.message)
  if (!isFrameDecodeError(decoded)) return undefined
  const field = decoded.field === "" ? "message" : `message.${decoded.field}`
  return `${Reason.invalidMessage}: ${field}: ${decoded.detail} (JSON writes NaN and Infinity as null); ` +
    "nothing was sent: correct that field and send again"
}

/**
 * Why a supervisor frame was not written: the broker did not grant
 * `supervisor-v1`, and a base broker would close the connection over it.
 */
export const SUPERVISOR_UNAVAILABLE =
  `The running broker does not offer the supervisor channel (${SUPERVISOR_V1}); nothing was sent. Ordinary messaging is ` +
  "unaffected; run a broker that supports it (once the old broker's sessions have closed and it has exited, reconnect)"

/**
 * The text of a send frame, or the error the broker would answer. Refused
 * here, as the broker would refuse them: it drops a connection that sends an
 * oversize frame (every peer would see this session leave and rejoin), and it
 * answers an invalid message under the id "unknown" (P48), which no waiting
 * send matches. A non-finite `askSince` is refused (`InvalidMessage`); an
 * ask whose timeout since `askSince` is up at `now` is not written
 * (`DeliveryExpired`, `ASK_TIMED_OUT_UNWRITTEN`). `askTimeoutMs` goes out only to a broker that granted
 * `ask-timeout-v1`, as of `now` (`askTimeoutAt`); `replyError` as the field only to one that granted
 * `reply-error-v1` (else as marked text), and never without `replyTo`. A delivery mode other than the default `steer` goes out
 * only to a broker that granted `delivery-v1`; to any other broker the send is
 * refused here (`DeliveryUnsupported`) rather than delivered as a steer.
 */
export const sendFrameText = (
  request: SendRequest,
  frameType: SendFrameType,
  granted: ReadonlySet<string>,
  now: number
): string | DeliveryError => {
  const messageId = request.message.id
  // JSON would write NaN as null, and a broker gets a field it cannot judge: refused here, by name.
  if (request.askSince !== undefined && !Number.isFinite(request.askSince)) {
    return deliveryError({
      messageId,
      code: DeliveryCode.InvalidMessage,
      reason: `Invalid askSince: it must be a finite Clock time in milliseconds (got ${request.askSince}); nothing was sent`,
      retryable: false
    })
  }
  // A question whose asker's timeout ran out (a resend after a reconnect) is not handed to an answerer.
  const left = askTimeLeft(request, now)
  if (left !== undefined && left <= 0) {
    return deliveryError({ messageId, code: DeliveryCode.DeliveryExpired, reason: ASK_TIMED_OUT_UNWRITTEN, retryable: false })
  }
  // A base broker closes the connection over a frame type it does not know (P03): never write one.
  if (frameType === "supervisor_send" && !granted.has(SUPERVISOR_V1)) {
    return deliveryError({ messageId, code: DeliveryCode.SupervisorUnauthorized, reason: SUPERVISOR_UNAVAILABLE, retryable: false })
  }
  const { replyError } = request
  if (replyError !== undefined) {
    const refused = replyErrorRefusal(request.message, replyError)
    if (refused !== undefined) {
      return deliveryError({ messageId, code: DeliveryCode.InvalidMessage, reason: refused, retryable: false })
    }
  }
  // A broker without `reply-error-v1` gets the failure as marked text: nothing of it is lost.
  const extended = replyError !== undefined && granted.has(REPLY_ERROR_V1)
  const message = replyError === undefined || extended
    ? request.message
    : {
      ...request.message,
      content: { ...request.message.content, text: replyErrorText(replyError, request.message.content.text) }
    }
  const choice = deliveryOfRequest(request)
  if (!("delivery" in choice)) return choice
  const modes = isDefaultDelivery(choice) ? undefined : choice
  if (modes !== undefined && (!granted.has(DELIVERY_V1) || frameType !== "send")) {
    return deliveryError({
      messageId,
      code: DeliveryCode.DeliveryUnsupported,
      reason: frameType === "send"
        ? `The broker does not offer delivery modes (${DELIVERY_V1}): send without delivery, queueMode and threadId, or run a broker that supports them`
        : `Delivery modes apply to send only, not to ${frameType}`,
      retryable: false
    })
  }
  const text = JSON.stringify({
    type: frameType,
    to: request.to,
    message,
    ...(request.targetId === undefined || frameType !== "send"
      ? {}
      : { targetId: request.targetId, targetEpoch: request.targetEpoch }),
    ...(request.askTimeoutMs === undefined || !granted.has(ASK_TIMEOUT_V1) ? {} : { askTimeoutMs: askTimeoutAt(request, now) }),
    ...(extended ? { replyError } : {}),
    ...(modes === undefined ? {} : modes),
    ...(request.traceparent === undefined || !granted.has(TRACE_V1) ? {} : { traceparent: request.traceparent })
  })
  const bytes = frameBytes(text)
  if (bytes > MAX_FRAME_BYTES) {
    return deliveryError({
      messageId,
      code: DeliveryCode.MessageTooLarge,
      reason:
        `Message is too large to send: the send frame would be ${bytes} bytes, over the ${MAX_FRAME_BYTES}-byte frame limit. Send a smaller message or attach less content.`,
      retryable: false
    })
  }
  const invalid = invalidMessageReason(text)
  if (invalid !== undefined) {
    return deliveryError({ messageId, code: DeliveryCode.InvalidMessage, reason: invalid, retryable: false })
  }
  return text
}

/** `effect` within `timeoutMs`; on timeout runs `onTimeout` (forget the request) and fails with `RequestTimeout`. */
const withinRequestTimeout = <A, E>(
  effect: Effect.Effect<A, E>,
  timeoutMs: number,
  operation: RequestTimeout["operation"],
  onTimeout: () => void
): Effect.Effect<A, E | RequestTimeout> =>
  effect.pipe(
    Effect.timeoutOrElse({
      duration: Duration.millis(timeoutMs),
      orElse: () =>
        Effect.sync(onTimeout).pipe(Effect.andThen(Effect.fail(new RequestTimeout({ operation, timeoutMs }))))
    })
  )

/**
 * Writes a request (`write` completes once its frame is handed to the socket)
 * and waits for its answer, both within `timeoutMs`: a broker that stopped
 * reading, whose socket buffer is full, cannot hold a request past its
 * timeout (docs/client.md, `sendTimeoutMs`). On timeout runs `onTimeout`
 * (forget the request) and fails; a frame still queued may go out later, and
 * its answer then finds nobody.
 */
export const writeThenAwait = <A, E, W>(
  write: Effect.Effect<void, W>,
  answer: Deferred.Deferred<A, E>,
  timeoutMs: number,
  operation: RequestTimeout["operation"],
  onTimeout: () => void
): Effect.Effect<A, E | W | RequestTimeout> =>
  withinRequestTimeout(Effect.andThen(write, Deferred.await(answer)), timeoutMs, operation, onTimeout)

/** Waits for `answer` at most `timeoutMs`; on timeout runs `onTimeout` (forget the request) and fails. */
export const awaitAnswer = <A, E>(
  answer: Deferred.Deferred<A, E>,
  timeoutMs: number,
  operation: RequestTimeout["operation"],
  onTimeout: () => void
): Effect.Effect<A, E | RequestTimeout> => withinRequestTimeout(Deferred.await(answer), timeoutMs, operation, onTimeout)
