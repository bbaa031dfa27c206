/**
 * Decoding of inbound frame text, compiled once at module load and called
 * synchronously on the per-frame path (hot-path.md §4.2). Failures are values,
 * not exceptions, and name the frame type and the offending field.
 */
import { Data, Exit, Schema, SchemaIssue } from "effect"
import * as Frames from "./frames.ts"
import * as Limits from "./limits.ts"
import * as Observe from "./observe.ts"
import * as Results from "./results.ts"
import * as Questions from "./questions.ts"
import * as Stats from "./stats.ts"
import * as Topics from "./topics.ts"

/**
 * A frame that could not be decoded: not JSON, not an object with a string
 * `type`, or a field of the wrong shape. Decoders return it as a value (test
 * with `isFrameDecodeError`); its `message` names the frame type and field,
 * e.g. `Invalid "delivered" frame at field "messageId": Missing key`.
 */
export class FrameDecodeError extends Data.TaggedError("FrameDecodeError")<{
  /** The frame's `type`, or `"(unknown)"` when it has none. */
  readonly frameType: string
  /** Dotted path of the offending field, or `""` for the frame as a whole. */
  readonly field: string
  /** What is wrong there, e.g. `Expected string` or `payload is not valid JSON`. */
  readonly detail: string
}> {
  override get message(): string {
    const where = this.field === "" ? "" : ` at field "${this.field}"`
    return `Invalid "${this.frameType}" frame${where}: ${this.detail}`
  }
}

const formatIssue = SchemaIssue.makeFormatterStandardSchemaV1()

const toDecodeError = (frameType: string, error: Schema.SchemaError): FrameDecodeError => {
  const first = formatIssue(error.issue).issues[0]
  const field = first?.path?.map((segment) => String(typeof segment === "object" ? segment.key : segment)).join(".") ?? ""
  return new FrameDecodeError({ frameType, field, detail: first?.message ?? error.message })
}

/** A compiled decoder for one frame shape, returning the value or a `FrameDecodeError`. */
export const compileDecoder = <S extends Schema.Decoder<unknown>>(frameType: string, schema: S) => {
  const decode = Schema.decodeUnknownExit(schema)
  return (input: unknown): S["Type"] | FrameDecodeError => {
    const exit = decode(input)
    if (Exit.isSuccess(exit)) return exit.value
    const error = exit.cause.reasons.find((reason) => reason._tag === "Fail")
    return error !== undefined && Schema.isSchemaError(error.error)
      ? toDecodeError(frameType, error.error)
      : new FrameDecodeError({ frameType, field: "", detail: "could not be decoded" })
  }
}

/** Parses frame text to an object carrying a string `type`, or says why not. */
export const parseFrameText = (text: string): { readonly type: string; readonly [key: string]: unknown } | FrameDecodeError => {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return new FrameDecodeError({ frameType: "(unknown)", field: "", detail: "payload is not valid JSON" })
  }
  if (!isJsonObject(value)) {
    return new FrameDecodeError({ frameType: "(unknown)", field: "", detail: "payload is not a JSON object" })
  }
  if (!hasStringType(value)) {
    return new FrameDecodeError({ frameType: "(unknown)", field: "type", detail: "missing or not a string" })
  }
  return value
}

/** A JSON object (not `null`, not an array), with its keys readable. */
const isJsonObject = (u: unknown): u is { readonly [key: string]: unknown } =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/** An object whose `type` is a string: a frame's shape before its schema is known. */
const hasStringType = (
  value: { readonly [key: string]: unknown }
): value is { readonly type: string; readonly [key: string]: unknown } => typeof value.type === "string"

/** Whether a decoder's result is a `FrameDecodeError` rather than a frame. */
export const isFrameDecodeError = (u: unknown): u is FrameDecodeError => u instanceof FrameDecodeError

/**
 * Decoders for each client frame, keyed by `type` (broker side). Parse the
 * text first with `parseFrameText`, then pick the decoder by its `type`.
 *
 * @example
 * ```ts
 * import { decodeClientFrame, isFrameDecodeError, parseFrameText } from "effect-intercom/protocol"
 *
 * const parsed = parseFrameText(`{"type":"list","requestId":7}`)
 * if (!isFrameDecodeError(parsed) && parsed.type === "list") {
 *   const list = decodeClientFrame.list(parsed)
 *   // list.message: `Invalid "list" frame at field "requestId": Expected string`
 * }
 * ```
 */
export const decodeClientFrame = {
  register: compileDecoder("register", Frames.RegisterFrame),
  unregister: compileDecoder("unregister", Frames.UnregisterFrame),
  health: compileDecoder("health", Frames.HealthFrame),
  list: compileDecoder("list", Frames.ListFrame),
  presence: compileDecoder("presence", Frames.PresenceFrame),
  send: compileDecoder("send", Frames.SendFrame),
  cancel_ask: compileDecoder("cancel_ask", Frames.CancelAskFrame),
  cancel_message: compileDecoder("cancel_message", Frames.CancelMessageFrame),
  message_receipt: compileDecoder("message_receipt", Frames.ReceiptFrame),
  received: compileDecoder("received", Frames.ReceivedFrame),
  authorize_supervisor: compileDecoder("authorize_supervisor", Frames.AuthorizeSupervisorFrame),
  topic_publish: compileDecoder("topic_publish", Topics.TopicPublishFrame),
  topic_subscribe: compileDecoder("topic_subscribe", Topics.TopicSubscribeFrame),
  topic_unsubscribe: compileDecoder("topic_unsubscribe", Topics.TopicUnsubscribeFrame),
  topic_query: compileDecoder("topic_query", Topics.TopicQueryFrame),
  result_store: compileDecoder("result_store", Results.ResultStoreFrame),
  result_list: compileDecoder("result_list", Results.ResultListFrame),
  result_read: compileDecoder("result_read", Results.ResultReadFrame),
  question_ask: compileDecoder("question_ask", Questions.QuestionAskFrame),
  question_received: compileDecoder("question_received", Questions.QuestionReceivedFrame),
  question_answer: compileDecoder("question_answer", Questions.QuestionAnswerFrame),
  question_stop: compileDecoder("question_stop", Questions.QuestionStopFrame),
  question_list: compileDecoder("question_list", Questions.QuestionListFrame),
  question_get: compileDecoder("question_get", Questions.QuestionGetFrame),
  observe: compileDecoder("observe", Observe.ObserveFrame),
  stats: compileDecoder("stats", Stats.StatsFrame)
} as const

const decodeMessageBySchema = compileDecoder("send", Frames.Message)

/**
 * The fast path of `decodeMessage` for the shape nearly every send has: no
 * attachments, every field of the right type. It returns what the schema
 * returns — a new object with the schema's keys in the schema's order, unknown
 * keys left out — and undefined for anything else (attachments, a wrong type,
 * an id over the limit, an own key holding `undefined`), which then goes to the
 * schema, so failures keep the schema's wording. Equivalence with the schema
 * is a property test (test/protocol/decodeMessage.test.ts). Why: the schema
 * walk was ~2 µs of a send's CPU and much of the broker's JIT warm-up
 * (docs/performance.md, "Hot path").
 */
const decodeMessageFast = (input: unknown): Frames.Message | undefined => {
  if (!isJsonObject(input)) return undefined
  const record = input
  const { id, timestamp, content } = record
  if (typeof id !== "string" || id.length > Limits.MAX_ID_LENGTH) return undefined
  if (typeof timestamp !== "number" || !Number.isFinite(timestamp)) return undefined
  if (!isJsonObject(content)) return undefined
  const body = content
  const text = body.text
  if (typeof text !== "string" || "attachments" in body) return undefined
  const {
    senderSequence,
    brokerReceivedAt,
    brokerDeliveredAt,
    receiverReceivedAt,
    injectedAt,
    supersedes,
    retryOf,
    replyTo,
    expectsReply
  } = record
  if (
    notFinite(record, "senderSequence", senderSequence) || notFinite(record, "brokerReceivedAt", brokerReceivedAt) ||
    notFinite(record, "brokerDeliveredAt", brokerDeliveredAt) ||
    notFinite(record, "receiverReceivedAt", receiverReceivedAt) || notFinite(record, "injectedAt", injectedAt) ||
    notId(record, "supersedes", supersedes) || notId(record, "retryOf", retryOf) || notId(record, "replyTo", replyTo) ||
    (expectsReply === undefined ? "expectsReply" in record : typeof expectsReply !== "boolean")
  ) return undefined
  const message: { -readonly [K in keyof Frames.Message]: Frames.Message[K] } = { id, timestamp, content: { text } }
  // Assigned in the schema's key order, so the decoded object (and its JSON) is the schema's; each
  // `typeof` holds exactly when the field is present (checked above).
  if (typeof senderSequence === "number") message.senderSequence = senderSequence
  if (typeof brokerReceivedAt === "number") message.brokerReceivedAt = brokerReceivedAt
  if (typeof brokerDeliveredAt === "number") message.brokerDeliveredAt = brokerDeliveredAt
  if (typeof receiverReceivedAt === "number") message.receiverReceivedAt = receiverReceivedAt
  if (typeof injectedAt === "number") message.injectedAt = injectedAt
  if (typeof supersedes === "string") message.supersedes = supersedes
  if (typeof retryOf === "string") message.retryOf = retryOf
  if (typeof replyTo === "string") message.replyTo = replyTo
  if (typeof expectsReply === "boolean") message.expectsReply = expectsReply
  return message
}

/** An optional `Finite` field that is not one: present but not a finite number (also a key holding `undefined`). */
const notFinite = (record: object, key: string, value: unknown): boolean =>
  value === undefined ? key in record : typeof value !== "number" || !Number.isFinite(value)

/** An optional id field that is not one: present but not a string within MAX_ID_LENGTH. */
const notId = (record: object, key: string, value: unknown): boolean =>
  value === undefined ? key in record : typeof value !== "string" || value.length > Limits.MAX_ID_LENGTH

/**
 * Decodes a `send`'s `message` (P40, P48): the `Message` schema, with a fast
 * path for the common shape that returns the same value (see `decodeMessageFast`).
 */
export const decodeMessage = (input: unknown): Frames.Message | FrameDecodeError =>
  decodeMessageFast(input) ?? decodeMessageBySchema(input)

/** The schema-only decoder of a `Message`, for tests that compare the fast path with it. */
export const decodeMessageWithSchema: (input: unknown) => Frames.Message | FrameDecodeError = decodeMessageBySchema

/**
 * The count of a `received` frame (`received-v1`): its `frames`, a
 * non-negative safe integer. The broker reads one per batch of messages a
 * client read, two per ask round trip, so the common shape skips the schema
 * walk (about 1.3 µs against 0.6, docs/performance.md "Durable acknowledgement
 * writes, fifth stop"); anything else goes to `ReceivedFrame`'s schema, whose
 * error it returns. Equivalence is a property test
 * (test/protocol/decodeReceived.test.ts).
 */
export const decodeReceivedCount = (input: unknown): number | FrameDecodeError => {
  if (isJsonObject(input) && input.type === "received") {
    const frames = input.frames
    if (typeof frames === "number" && Number.isSafeInteger(frames) && frames >= 0) return frames
  }
  const frame = decodeClientFrame.received(input)
  return isFrameDecodeError(frame) ? frame : frame.frames
}

/** Decodes any broker frame (client side). */
export const decodeBrokerFrame = compileDecoder("broker frame", Frames.BrokerFrame)

/**
 * Decodes the text of a broker frame (client side): one payload from a
 * `FrameDecoder`, or a `Connection`'s `read`. A failure names the frame's own
 * `type`, not the union's.
 *
 * @example
 * ```ts
 * import { decodeBrokerFrameText, isFrameDecodeError } from "effect-intercom/protocol"
 *
 * const frame = decodeBrokerFrameText(`{"type":"session_left","sessionId":"3f2a"}`)
 * if (isFrameDecodeError(frame)) console.error(frame.message)
 * else if (frame.type === "session_left") console.log(`left: ${frame.sessionId}`)
 * ```
 */
export const decodeBrokerFrameText = (text: string): Frames.BrokerFrame | FrameDecodeError => {
  const parsed = parseFrameText(text)
  if (isFrameDecodeError(parsed)) return parsed
  const frame = decodeBrokerFrame(parsed)
  // Name the frame's own type, not the union's.
  return isFrameDecodeError(frame) ? new FrameDecodeError({ ...frame, frameType: parsed.type }) : frame
}
