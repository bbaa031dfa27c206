/**
 * Correlated failure replies (extension `reply-error-v1`, C-ASK-7) in the
 * send pipeline: a reply may carry `replyError`, which tells its asker the ask
 * failed at its destination.
 *
 * What this module owns: reading the field (only from a sender granted the
 * extension; a base sender's stray field is ignored, as any unknown field),
 * refusing it where it makes no sense (not a reply, empty, too long), and the
 * form the reply takes for each recipient: the field itself for a recipient
 * granted the extension, the message's text marked as an error
 * (`replyErrorText`) for a base one. Sends without the field never reach
 * anything here but one property read.
 */
import { DeliveryCode, Reason } from "../protocol/delivery.ts"
import { REPLY_ERROR_V1 } from "../protocol/features.ts"
import type { Message } from "../protocol/frames.ts"
import { MAX_REPLY_ERROR_LENGTH } from "../protocol/limits.ts"
import { replyErrorText } from "../protocol/replyError.ts"
import type { Peer } from "./Peer.ts"
import type { SendStage } from "./SendStage.ts"

/**
 * The `replyError` of a send frame as the broker takes it: the string a
 * sender granted `reply-error-v1` put there, else undefined (a base sender's
 * field is not read). Validity is the `stage`'s business.
 */
export const replyErrorOf = (frame: { readonly [key: string]: unknown }, sender: Peer): string | undefined => {
  const value = frame.replyError
  return typeof value === "string" && sender.features.has(REPLY_ERROR_V1) ? value : undefined
}

/**
 * A reply's message and `replyError` as `recipient` gets them: unchanged for
 * a recipient granted `reply-error-v1`; for a base one, no field and the text
 * marked as an error, so it still learns the ask failed and why.
 */
export const replyErrorFor = (
  message: Message,
  replyError: string,
  recipient: Pick<Peer, "features">
): { readonly message: Message; readonly replyError: string | undefined } =>
  recipient.features.has(REPLY_ERROR_V1)
    ? { message, replyError }
    : { message: { ...message, content: { ...message.content, text: replyErrorText(replyError, message.content.text) } }, replyError: undefined }

/**
 * The send stage: `replyError` only on a reply (`message.replyTo`), as a
 * non-empty string of at most `MAX_REPLY_ERROR_LENGTH` characters; anything
 * else is refused (`E_INVALID_MESSAGE`) and nothing is delivered.
 */
export const replyErrorStage: SendStage = {
  check: (attempt) => {
    const value = attempt.frame.replyError
    if (value === undefined || !attempt.sender.peer.features.has(REPLY_ERROR_V1)) return undefined
    if (typeof value !== "string" || value.trim() === "" || value.length > MAX_REPLY_ERROR_LENGTH) {
      return { code: DeliveryCode.InvalidMessage, reason: Reason.invalidReplyError(MAX_REPLY_ERROR_LENGTH) }
    }
    if (attempt.message.replyTo === undefined) {
      return { code: DeliveryCode.InvalidMessage, reason: Reason.replyErrorWithoutReplyTo }
    }
    return undefined
  }
}
