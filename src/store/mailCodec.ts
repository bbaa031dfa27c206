/**
 * How `MailStore` rows are written and read: JSON text, decoded by Schema on
 * load. A row that does not decode is a `CorruptRow` naming it, never
 * skipped (a store that silently drops mail would break the promise it
 * exists for).
 */
import { Data, Schema } from "effect"
import type { AskEdge, Fingerprint, Mail, Outcome } from "./records.ts"
import { decodeMessage, isFrameDecodeError } from "../protocol/decode.ts"
import { DeliveryCode } from "../protocol/delivery.ts"

/** A replay record as stored: the outcome of one (sender, message id). */
export interface StoredRecord {
  /** The record key (`recordKeyOf(sender, id)`). */
  readonly key: string
  /**
   * The message id, when the journal has it at hand (the key is then
   * `recordKeyOf(sender, id)`): the replay block writes it without taking
   * the key apart, or building it (replayBlock.ts).
   */
  readonly id?: string | undefined
  /** The sender's registry key. */
  readonly sender: string
  readonly fingerprint: Fingerprint
  readonly outcome: Outcome
  /** When it was recorded (broker clock, ms). */
  readonly at: number
}

const Code = Schema.Literals(Object.values(DeliveryCode))

const OutcomeSchema = Schema.Union([
  Schema.Struct({
    ok: Schema.Literal(true),
    delivery: Schema.Literals(["socket_delivered", "queued"]),
    receiverId: Schema.optional(Schema.String)
  }),
  Schema.Struct({ ok: Schema.Literal(false), code: Code, reason: Schema.String, retryable: Schema.Boolean })
])

const FingerprintSchema = Schema.Struct({
  targetId: Schema.String,
  textLength: Schema.Number,
  textHash: Schema.Number,
  attachmentsLength: Schema.Number,
  attachmentsHash: Schema.Number,
  replyTo: Schema.optional(Schema.String),
  expectsReply: Schema.optional(Schema.Boolean),
  supersedes: Schema.optional(Schema.String),
  retryOf: Schema.optional(Schema.String),
  replyErrorLength: Schema.Number,
  replyErrorHash: Schema.Number
})

const DeliverySchema = Schema.Struct({
  delivery: Schema.Literals(["steer", "queue", "passive"]),
  queueMode: Schema.optional(Schema.Literals(["stack", "replace"])),
  threadId: Schema.optional(Schema.String)
})

const EdgeSchema = Schema.Struct({
  messageKey: Schema.String,
  messageId: Schema.String,
  askerKey: Schema.String,
  targetKey: Schema.String,
  deadline: Schema.Number,
  // Its due time on the clock of the run that stored it (records.ts `AskEdge.dueAt`); absent in rows of older builds.
  dueAt: Schema.optional(Schema.Number),
  openedAt: Schema.optional(Schema.Number),
  question: Schema.optional(Schema.Literal(true)),
  notify: Schema.optional(Schema.Literal(true))
})

const MailSchema = Schema.Struct({
  recordKey: Schema.String,
  senderKey: Schema.String,
  senderId: Schema.String,
  senderIdentity: Schema.optional(Schema.String),
  fromJson: Schema.String,
  message: Schema.Unknown,
  brokerReceivedAt: Schema.Number,
  spaceKey: Schema.String,
  targetKey: Schema.String,
  targetId: Schema.String,
  targetIdentity: Schema.optional(Schema.String),
  queuedAt: Schema.Number,
  askTimeoutMs: Schema.optional(Schema.Number),
  // An ask's due time on the clock of the run that stored it (records.ts `Mail.askDueAt`); absent in older rows.
  askDueAt: Schema.optional(Schema.Number),
  channel: Schema.optional(Schema.Literal("supervisor")),
  replyError: Schema.optional(Schema.String),
  delivery: Schema.optional(DeliverySchema),
  // The trace context handed on (`trace-v1`): kept, so mail restored after a restart still carries it.
  traceparent: Schema.optional(Schema.String),
  // A reply's closed ask edge: mail restored after a restart and then dropped still reopens its ask.
  answers: Schema.optional(EdgeSchema),
  // Given back to the mailbox since it was accepted (`StoredMail.givenBack`): `queuedAt` is when. Absent in older rows.
  givenBack: Schema.optional(Schema.Number)
})

/** A finite number as JSON writes it; anything else as JSON would too (`null`). */
const jsonNumber = (n: number): string => Number.isFinite(n) ? `${n}` : "null"

/**
 * JSON text of a fingerprint (its `undefined` fields left out): the text
 * `JSON.stringify` gives for the fields in this order, written out directly.
 * Every message's replay record is encoded once per commit, and the generic
 * walk over the object cost about as much as SQLite storing the row
 * (docs/performance.md, "Durable store CPU, fifth stop").
 */
export const encodeFingerprint = (f: Fingerprint): string => {
  let text = `{"targetId":${JSON.stringify(f.targetId)},"textLength":${jsonNumber(f.textLength)},"textHash":${
    jsonNumber(f.textHash)
  },"attachmentsLength":${jsonNumber(f.attachmentsLength)},"attachmentsHash":${jsonNumber(f.attachmentsHash)}`
  if (f.replyTo !== undefined) text += `,"replyTo":${JSON.stringify(f.replyTo)}`
  if (f.expectsReply !== undefined) text += `,"expectsReply":${f.expectsReply ? "true" : "false"}`
  if (f.supersedes !== undefined) text += `,"supersedes":${JSON.stringify(f.supersedes)}`
  if (f.retryOf !== undefined) text += `,"retryOf":${JSON.stringify(f.retryOf)}`
  return `${text},"replyErrorLength":${jsonNumber(f.replyErrorLength)},"replyErrorHash":${jsonNumber(f.replyErrorHash)}}`
}

const DELIVERED_TEXT = JSON.stringify({ ok: true, delivery: "socket_delivered" })
const QUEUED_TEXT = JSON.stringify({ ok: true, delivery: "queued" })

/**
 * JSON text of an outcome (the two successes, which nearly every record has, as constant text; a
 * delivery to another session than the target's names it, `receiverId`).
 */
export const encodeOutcome = (outcome: Outcome): string =>
  outcome.ok
    ? outcome.receiverId !== undefined
      ? JSON.stringify({ ok: true, delivery: outcome.delivery, receiverId: outcome.receiverId })
      : outcome.delivery === "socket_delivered"
      ? DELIVERED_TEXT
      : QUEUED_TEXT
    : JSON.stringify(outcome)

/**
 * JSON text of mail, message included; with `givenBack`, marked as given back to the mailbox since it was accepted
 * (`StoredMail.givenBack`: its `queuedAt` is when, `givenBack` the first `seq` accepted after).
 */
export const encodeMail = (mail: Mail, givenBack?: number): string =>
  // A short-lived sender's end is the running broker's (records.ts `SenderEnd`): not stored. Only such mail is copied.
  givenBack !== undefined
    ? JSON.stringify({ ...mail, senderEnd: undefined, givenBack })
    : mail.senderEnd === undefined
    ? JSON.stringify(mail)
    : JSON.stringify({ ...mail, senderEnd: undefined })

/** JSON text of an ask edge, its due time on this run's clock included (records.ts `AskEdge.dueAt`). */
export const encodeEdge = (edge: AskEdge): string => JSON.stringify(edge)

/** A stored row that does not decode: what it was and why. */
export class CorruptRow extends Data.TaggedError("CorruptRow")<{
  readonly table: string
  readonly key: string
  readonly detail: string
}> {
  override get message(): string {
    return `stored ${this.table} ${JSON.stringify(this.key)} does not decode (${this.detail})`
  }
}

const parseJson = (table: string, key: string, text: string): unknown | CorruptRow => {
  try {
    return JSON.parse(text)
  } catch (cause) {
    return new CorruptRow({ table, key, detail: cause instanceof Error ? cause.message : String(cause) })
  }
}

const decodeWith = <S extends Schema.Top>(schema: S, table: string) => {
  const decode = Schema.decodeUnknownResult(Schema.toType(schema))
  return (key: string, text: string): S["Type"] | CorruptRow => {
    const json = parseJson(table, key, text)
    if (json instanceof CorruptRow) return json
    const result = decode(json)
    return result._tag === "Success" ? result.success : new CorruptRow({ table, key, detail: String(result.failure) })
  }
}

const decodeFingerprintRow = decodeWith(FingerprintSchema, "replay record")
const decodeOutcomeRow = decodeWith(OutcomeSchema, "replay record")
const decodeMailText = decodeWith(MailSchema, "mail")
const decodeEdgeRow = decodeWith(EdgeSchema, "ask edge")

/** Decodes a stored replay record's fingerprint and outcome. */
export const decodeRecord = (
  key: string,
  sender: string,
  fingerprint: string,
  outcome: string,
  at: number
): StoredRecord | CorruptRow => {
  const f = decodeFingerprintRow(key, fingerprint)
  if (f instanceof CorruptRow) return f
  const o = decodeOutcomeRow(key, outcome)
  if (o instanceof CorruptRow) return o
  return {
    key,
    sender,
    fingerprint: { ...f, replyTo: f.replyTo, expectsReply: f.expectsReply, supersedes: f.supersedes, retryOf: f.retryOf },
    outcome: o,
    at
  }
}

/** Stored mail decoded: the mail, and its row's given-back mark (`encodeMail`'s `givenBack`), if any. */
export interface DecodedMail {
  readonly mail: Mail
  readonly givenBack: number | undefined
}

/** Decodes a stored mail row (its message through the protocol's own decoder), its given-back mark apart from the mail. */
export const decodeMailRow = (key: string, text: string): DecodedMail | CorruptRow => {
  const row = decodeMailText(key, text)
  if (row instanceof CorruptRow) return row
  const message = decodeMessage(row.message)
  if (isFrameDecodeError(message)) return new CorruptRow({ table: "mail", key, detail: message.message })
  const { givenBack, ...fields } = row
  const mail: Mail = {
    ...fields,
    senderIdentity: row.senderIdentity,
    targetIdentity: row.targetIdentity,
    askTimeoutMs: row.askTimeoutMs,
    message
  }
  return { mail, givenBack }
}

/** Decodes stored mail (its message through the protocol's own decoder). */
export const decodeMail = (key: string, text: string): Mail | CorruptRow => {
  const decoded = decodeMailRow(key, text)
  return decoded instanceof CorruptRow ? decoded : decoded.mail
}

/** Decodes a stored ask edge. */
export const decodeEdge = (key: string, text: string): AskEdge | CorruptRow => decodeEdgeRow(key, text)

