/**
 * Checks made before anything is sent: attachments (C-TOOL-5) and control
 * characters (C-TOOL-6). Ids, names and labels may hold no control character
 * at all (U+0000–U+001F, U+007F–U+009F); text bodies may hold TAB, LF and CR.
 */
import { Effect, Option, Schema } from "effect"
import {
  checkDelivery,
  type DeliveryChoice,
  type DeliveryInput,
  type DeliveryKind,
  isDeliveryRefusal
} from "../protocol/deliveryModes.ts"
import { Attachment } from "../protocol/frames.ts"
import { LABEL_CONTROL, MAX_REPLY_ERROR_LENGTH, TEXT_CONTROL } from "../protocol/limits.ts"
import { InvalidInput, MissingParameter } from "./errors.ts"

/**
 * True when an id, name or label holds no control character (C-TOOL-6).
 *
 * @category validation
 * @since 0.1.0
 */
export const isSafeLabel = (value: string): boolean => !LABEL_CONTROL.test(value)
/**
 * True when a body holds no control character but TAB, LF and CR (C-TOOL-6).
 *
 * @category validation
 * @since 0.1.0
 */
export const isSafeText = (value: string): boolean => !TEXT_CONTROL.test(value)

const decodeAttachments = Schema.decodeUnknownOption(Schema.Array(Attachment))

const ATTACHMENT_SHAPE =
  `attachments must be an array of { type: "file" | "snippet" | "context", name: string, content: string, language?: string }`

/**
 * Decoded, checked attachments (extra keys dropped), or the reason they are invalid.
 *
 * @category validation
 * @since 0.1.0
 */
export const validateAttachments = (
  input: unknown
): InvalidInput | ReadonlyArray<Attachment> | undefined => {
  if (input === undefined) return undefined
  const decoded = decodeAttachments(input)
  if (Option.isNone(decoded)) return new InvalidInput({ reason: ATTACHMENT_SHAPE })
  const attachments: Array<Attachment> = []
  for (const [index, attachment] of decoded.value.entries()) {
    if (!isSafeLabel(attachment.name)) {
      return new InvalidInput({ reason: `attachments[${index}].name contains a control character` })
    }
    if (!isSafeText(attachment.content)) {
      return new InvalidInput({
        reason: `attachments[${index}].content contains a control character (only TAB, LF and CR are allowed)`
      })
    }
    if (attachment.language !== undefined && !isSafeLabel(attachment.language)) {
      return new InvalidInput({ reason: `attachments[${index}].language contains a control character` })
    }
    attachments.push({
      type: attachment.type,
      name: attachment.name,
      content: attachment.content,
      ...(attachment.language === undefined ? {} : { language: attachment.language })
    })
  }
  return attachments
}

/**
 * An id, name or target: no control characters.
 *
 * @category validation
 * @since 0.1.0
 */
export const checkLabel = (field: string, value: string | undefined): InvalidInput | undefined =>
  value === undefined || isSafeLabel(value)
    ? undefined
    : new InvalidInput({ reason: `${field} contains a control character` })

/**
 * A message body: TAB, LF and CR only.
 *
 * @category validation
 * @since 0.1.0
 */
export const checkText = (field: string, value: string | undefined): InvalidInput | undefined =>
  value === undefined || isSafeText(value)
    ? undefined
    : new InvalidInput({ reason: `${field} contains a control character (only TAB, LF and CR are allowed)` })

/**
 * The fields of an outgoing message that `checkOutgoing` looks at.
 *
 * @category models
 * @since 0.1.0
 */
export interface OutgoingFields {
  readonly to?: string | undefined
  readonly message?: string | undefined
  readonly replyTo?: string | undefined
  readonly attachments?: unknown
}

/**
 * The checks every outgoing message passes before anything is sent (C-TOOL-2,
 * -5, -6): `to` (when `needsTo`) and `message` present, no control characters,
 * well-formed attachments. Succeeds with the decoded attachments.
 *
 * @category validation
 * @since 0.1.0
 */
export const checkOutgoing = (
  request: OutgoingFields,
  needsTo: boolean
): Effect.Effect<ReadonlyArray<Attachment> | undefined, MissingParameter | InvalidInput> =>
  Effect.suspend((): Effect.Effect<ReadonlyArray<Attachment> | undefined, MissingParameter | InvalidInput> => {
    if (needsTo && (request.to === undefined || request.to.trim() === "")) {
      return Effect.fail(new MissingParameter({ required: "to and message" }))
    }
    if (request.message === undefined || request.message === "") {
      return Effect.fail(new MissingParameter({ required: needsTo ? "to and message" : "message" }))
    }
    const invalid = checkLabel("to", request.to) ?? checkLabel("replyTo", request.replyTo) ??
      checkText("message", request.message)
    if (invalid !== undefined) return Effect.fail(invalid)
    const attachments = validateAttachments(request.attachments)
    return attachments instanceof InvalidInput ? Effect.fail(attachments) : Effect.succeed(attachments)
  })

/**
 * A reply's `replyError` (C-ASK-7): absent, or a non-blank text of at most
 * `MAX_REPLY_ERROR_LENGTH` characters with no control characters but TAB, LF and CR.
 * The delivery choice of an outgoing `kind` (C-DLV-2…4, C-ASK-10), checked by
 * the same rules the client and the broker apply (`checkDelivery`); a refused
 * combination is `InvalidInput` and nothing is sent.
 *
 * @category validation
 * @since 0.1.0
 */
export const checkReplyError = (value: string | undefined): InvalidInput | undefined => {
  if (value === undefined) return undefined
  if (value.trim() === "") return new InvalidInput({ reason: "replyError is blank; say what failed, or leave it out" })
  if (value.length > MAX_REPLY_ERROR_LENGTH) {
    return new InvalidInput({ reason: `replyError is longer than ${MAX_REPLY_ERROR_LENGTH} characters` })
  }
  return checkText("replyError", value)
}

/**
 * The body of a reply: its `message`, or, for a failure reply that has none,
 * the failure text itself (what a base asker would see of it).
 *
 * @category validation
 * @since 0.1.0
 */
export const replyBody = (message: string | undefined, replyError: string | undefined): string | undefined =>
  (message === undefined || message === "") && replyError !== undefined ? replyError : message
export const checkDeliveryChoice = (
  request: DeliveryInput,
  kind: DeliveryKind
): Effect.Effect<DeliveryChoice, InvalidInput> => {
  const choice = checkDelivery(request, kind)
  return isDeliveryRefusal(choice) ? Effect.fail(new InvalidInput({ reason: choice.reason })) : Effect.succeed(choice)
}
