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
import { ASK_TIMEOUT_V1, REPLY_ERROR_V1 } from "../protocol/features.ts"
import { MAX_REPLY_ERROR_LENGTH } from "../protocol/limits.ts"
import { replyErrorText } from "../protocol/replyError.ts"
import { frameBytes } from "../protocol/framing.ts"
import type { Message } from "../protocol/frames.ts"
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
   * For a reply (`message.replyTo` set): the ask failed here, and its asker
   * gets this text as an error instead of an answer (`reply-error-v1`,
   * C-ASK-7). A broker without the extension gets the reply with its text
   * marked as an error (`replyErrorText`). Without `replyTo` the send is refused.
   */
  readonly replyError?: string
}

/** Why a send failed: the broker refused it, did not answer in time, or the connection dropped (outcome unknown). */
export type SendError = DeliveryError | RequestTimeout | ConnectionLost

/** The frame a send goes in: `send`, or a child's `supervisor_send` (extension `supervisor-v1`). */
export type SendFrameType = "send" | "supervisor_send"

/** What makes two sends with one id "the same" (C-BRK-8): frame, target and authored content. */
export const signatureOf = (request: SendRequest, frameType: SendFrameType): string =>
  JSON.stringify([
    frameType,
    request.to,
    request.message.content,
    request.message.replyTo ?? null,
    request.message.expectsReply ?? null,
    request.message.supersedes ?? null,
    request.replyError ?? null
  ])

/** Why a `replyError` cannot go out with `message` (the broker's own reasons), or undefined. */
const replyErrorRefusal = (message: Message, replyError: string): string | undefined => {
  if (replyError.trim() === "" || replyError.length > MAX_REPLY_ERROR_LENGTH) {
    return Reason.invalidReplyError(MAX_REPLY_ERROR_LENGTH)
  }
  return message.replyTo === undefined ? Reason.replyErrorWithoutReplyTo : undefined
}

/** Whether the `message` of a send frame's text is what the broker accepts (JSON turns NaN into null). */
const isValidMessageJson = (text: string): boolean => {
  const frame: unknown = JSON.parse(text)
  return typeof frame === "object" && frame !== null && "message" in frame &&
    !isFrameDecodeError(decodeMessage(frame.message))
}

/**
 * The text of a send frame, or the error the broker would answer. Refused
 * here, as the broker would refuse them: it drops a connection that sends an
 * oversize frame (every peer would see this session leave and rejoin), and it
 * answers an invalid message under the id "unknown" (P48), which no waiting
 * send matches. `askTimeoutMs` goes out only to a broker that granted
 * `ask-timeout-v1`; `replyError` as the field only to one that granted
 * `reply-error-v1` (else as marked text), and never without `replyTo`.
 */
export const sendFrameText = (
  request: SendRequest,
  frameType: SendFrameType,
  granted: ReadonlySet<string>
): string | DeliveryError => {
  const messageId = request.message.id
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
  const text = JSON.stringify({
    type: frameType,
    to: request.to,
    message,
    ...(request.targetId === undefined || frameType !== "send"
      ? {}
      : { targetId: request.targetId, targetEpoch: request.targetEpoch }),
    ...(request.askTimeoutMs === undefined || !granted.has(ASK_TIMEOUT_V1) ? {} : { askTimeoutMs: request.askTimeoutMs }),
    ...(extended ? { replyError } : {})
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
  if (!isValidMessageJson(text)) {
    return deliveryError({ messageId, code: DeliveryCode.InvalidMessage, reason: Reason.invalidMessage, retryable: false })
  }
  return text
}

/** Waits for `answer` at most `timeoutMs`; on timeout runs `onTimeout` (forget the request) and fails. */
export const awaitAnswer = <A, E>(
  answer: Deferred.Deferred<A, E>,
  timeoutMs: number,
  operation: RequestTimeout["operation"],
  onTimeout: () => void
): Effect.Effect<A, E | RequestTimeout> =>
  Deferred.await(answer).pipe(
    Effect.timeoutOrElse({
      duration: Duration.millis(timeoutMs),
      orElse: () =>
        Effect.sync(onTimeout).pipe(Effect.andThen(Effect.fail(new RequestTimeout({ operation, timeoutMs }))))
    })
  )
