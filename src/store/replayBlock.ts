/**
 * The replay block: all the replay records of one `MailStore` commit as one
 * text, stored as one row of `replay_blocks` (migrations/0007_replay_blocks.ts),
 * so SQLite's cost per row (a statement step, a b-tree cell, its page in the
 * WAL) is paid once per commit instead of once per message
 * (docs/performance.md, "Replay records in blocks, sixth stop").
 *
 * It owns the encoding only; `MailStore.ts` owns the table. The text is
 * length-prefixed, not JSON, so that writing a record is string
 * concatenation and reading one is slicing:
 *
 *   block   = "b1:" count ";" record{count}
 *   record  = same(str(sender)) key same(num(at)) same(str(targetId))
 *             num(textLength) num(textHash) num(attachmentsLength) num(attachmentsHash)
 *             num(replyErrorLength) num(replyErrorHash)
 *             opt(replyTo) bool(expectsReply) opt(supersedes) opt(retryOf) outcome
 *   key     = "=" str(id)          the key is recordKeyOf(sender, id)
 *           | "!" str(key)         any other key, whole
 *   str     = length ":" text      length in UTF-16 code units
 *           | "j" length ":" json  a string holding surrogates, as JSON text
 *                                  (a lone one would not survive UTF-8)
 *   num     = decimal ","
 *   same(x) = "^"                  the same as the previous record's x
 *           | x                    written out; always so in the first record
 *   opt     = "-" | str            bool = "-" | "0" | "1"
 *   outcome = "d" (socket_delivered) | "q" (queued)
 *           | "r" str(receiverId)   socket_delivered to another session than
 *                                   the target's (P49's other holder)
 *           | "f" str(code) str(reason) ("0" | "1")   a refusal, retryable or not
 *
 * Records are in the order they were committed, and the reader applies them
 * in that order, so a later rewrite of a key wins. A block that does not
 * decode — cut short, longer than its count, a field out of place, a code
 * this build does not know — is a `CorruptRow`, never skipped. A change
 * inside a string's text that keeps its length is not detected (as a JSON
 * row's would not be): the format has no checksum.
 */
import type { Fingerprint, Outcome } from "./records.ts"
import { DeliveryCode } from "../protocol/delivery.ts"
import { CorruptRow, type StoredRecord } from "./mailCodec.ts"

/** The separator `recordKeyOf` puts between a sender's key and a message id. */
const KEY_SEPARATOR = "\u0001"
const KEY_SEPARATOR_CODE = 1
const SURROGATE = /[\uD800-\uDFFF]/

const str = (s: string): string => SURROGATE.test(s) ? jsonStr(s) : `${s.length}:${s}`

const jsonStr = (s: string): string => {
  const json = JSON.stringify(s)
  return `j${json.length}:${json}`
}

const opt = (s: string | undefined): string => s === undefined ? "-" : str(s)

const encodeOutcome = (outcome: Outcome): string =>
  outcome.ok
    ? (outcome.delivery === "queued" ? "q" : outcome.receiverId === undefined ? "d" : `r${str(outcome.receiverId)}`)
    : `f${str(outcome.code)}${str(outcome.reason)}${outcome.retryable ? "1" : "0"}`

/** A key given without its id: as the id alone when it is `recordKeyOf(sender, id)`, else whole. */
const keyText = (key: string, sender: string): string =>
  key.length > sender.length && key.startsWith(sender) && key.charCodeAt(sender.length) === KEY_SEPARATOR_CODE
    ? `=${str(key.slice(sender.length + 1))}`
    : `!${str(key)}`

/** Whether `a` and `b` agree on every fingerprint field after the text's (its attachments', reply error's and links'). */
const sameRest = (a: Fingerprint, b: Fingerprint): boolean =>
  a.attachmentsLength === b.attachmentsLength && a.attachmentsHash === b.attachmentsHash &&
  a.replyErrorLength === b.replyErrorLength && a.replyErrorHash === b.replyErrorHash && a.replyTo === b.replyTo &&
  a.expectsReply === b.expectsReply && a.supersedes === b.supersedes && a.retryOf === b.retryOf

/** The fingerprint's fields after the text's, as the record writes them. */
const restText = (f: Fingerprint): string =>
  `${f.attachmentsLength},${f.attachmentsHash},${f.replyErrorLength},${f.replyErrorHash},${opt(f.replyTo)}${
    f.expectsReply === undefined ? "-" : f.expectsReply ? "1" : "0"
  }${opt(f.supersedes)}${opt(f.retryOf)}`

/**
 * The block text of `records`, in their order. Numbers are written as
 * decimals: a fingerprint's are integers, `at` is the broker clock's ms.
 * Built in one string: a commit's records mostly share their sender, target,
 * time and the fingerprint fields after the text's (a tick of one sender's
 * plain messages), so those are compared with the previous record's and
 * written as `^`, or (the fields after the text's, which have no `^`) as the
 * previous record's text again, without converting their numbers anew.
 */
export const encodeBlock = (records: ReadonlyArray<StoredRecord>): string => {
  let text = `b1:${records.length};`
  let previous: StoredRecord | undefined
  let rest = ""
  for (let i = 0; i < records.length; i++) {
    const record = records[i]!
    const { id, sender, at } = record
    const f: Fingerprint = record.fingerprint
    const targetId = f.targetId
    text += previous !== undefined && previous.sender === sender ? "^" : str(sender)
    text += id !== undefined ? `=${str(id)}` : keyText(record.key, sender)
    text += previous !== undefined && previous.at === at ? "^" : `${at},`
    text += previous !== undefined && previous.fingerprint.targetId === targetId ? "^" : str(targetId)
    if (previous === undefined || !sameRest(previous.fingerprint, f)) rest = restText(f)
    text += `${f.textLength},${f.textHash},${rest}${encodeOutcome(record.outcome)}`
    previous = record
  }
  return text
}

/** The newest `at` of `records` (the block's `newest_at`, which the hourly prune compares). */
export const newestAt = (records: ReadonlyArray<StoredRecord>): number => {
  let newest = -Infinity
  for (let i = 0; i < records.length; i++) if (records[i]!.at > newest) newest = records[i]!.at
  return newest
}

/** Thrown inside the reader, caught at its edge: where the text stopped making sense. */
class Malformed {
  readonly detail: string
  constructor(detail: string) {
    this.detail = detail
  }
}

const CODES: ReadonlySet<string> = new Set(Object.values(DeliveryCode))
const isCode = (s: string): s is DeliveryCode => CODES.has(s)
const DIGITS = /^-?\d+(?:\.\d+)?(?:e[+-]?\d+)?$/

/** A cursor over one block's text (plain code: a restart reads every block of the last hour). */
class Reader {
  private at = 0
  private readonly text: string
  constructor(text: string) {
    this.text = text
  }

  get done(): boolean {
    return this.at === this.text.length
  }

  get position(): number {
    return this.at
  }

  fail(what: string): never {
    throw new Malformed(`${what} at offset ${this.at} of ${this.text.length}`)
  }

  /** The next character, consumed. */
  char(): string {
    if (this.at >= this.text.length) this.fail("the block ends early")
    return this.text[this.at++]!
  }

  expect(literal: string): void {
    if (!this.text.startsWith(literal, this.at)) this.fail(`expected ${JSON.stringify(literal)}`)
    this.at += literal.length
  }

  /** Digits up to `end`, as a finite number. */
  number(end: string): number {
    const stop = this.text.indexOf(end, this.at)
    if (stop < 0) this.fail("a number is not terminated")
    const digits = this.text.slice(this.at, stop)
    if (!DIGITS.test(digits)) this.fail(`${JSON.stringify(digits.slice(0, 24))} is not a number`)
    const n = Number(digits)
    if (!Number.isFinite(n)) this.fail("a number is out of range")
    this.at = stop + 1
    return n
  }

  /** A non-negative integer length up to `:`. */
  private length(): number {
    const n = this.number(":")
    if (!Number.isSafeInteger(n) || n < 0) this.fail("a length is not a count")
    return n
  }

  /** Whether the next field is `^`, "the same as the previous record's" (consumed if so). */
  same(): boolean {
    if (this.text.startsWith("^", this.at)) {
      this.at++
      return true
    }
    return false
  }

  /** A `str` (see the module header). */
  string(): string {
    const json = this.text.startsWith("j", this.at)
    if (json) this.at++
    const length = this.length()
    if (this.at + length > this.text.length) this.fail("a string runs past the block's end")
    const raw = this.text.slice(this.at, this.at + length)
    this.at += length
    if (!json) return raw
    let parsed: unknown
    try {
      parsed = JSON.parse(raw)
    } catch {
      this.fail("a JSON string does not parse")
    }
    if (typeof parsed !== "string") this.fail("a JSON string is not a string")
    return parsed
  }

  optional(): string | undefined {
    if (this.text.startsWith("-", this.at)) {
      this.at++
      return undefined
    }
    return this.string()
  }

  bool(): boolean | undefined {
    const c = this.char()
    if (c === "-") return undefined
    if (c === "0" || c === "1") return c === "1"
    return this.fail(`${JSON.stringify(c)} is not a flag`)
  }
}

const readOutcome = (reader: Reader): Outcome => {
  const tag = reader.char()
  if (tag === "d") return { ok: true, delivery: "socket_delivered" }
  if (tag === "q") return { ok: true, delivery: "queued" }
  if (tag === "r") return { ok: true, delivery: "socket_delivered", receiverId: reader.string() }
  if (tag !== "f") return reader.fail(`${JSON.stringify(tag)} is not an outcome`)
  const code = reader.string()
  if (!isCode(code)) return reader.fail(`${JSON.stringify(code)} is not a delivery code`)
  const reason = reader.string()
  const retryable = reader.bool()
  if (retryable === undefined) return reader.fail("a refusal has no retryable flag")
  return { ok: false, code, reason, retryable }
}

const readRecord = (reader: Reader, previous: StoredRecord | undefined): StoredRecord => {
  const sameAsPrevious = (): StoredRecord | undefined => {
    if (!reader.same()) return undefined
    return previous ?? reader.fail("the first record refers to a previous one")
  }
  const sender = sameAsPrevious()?.sender ?? reader.string()
  const form = reader.char()
  const key = form === "="
    ? `${sender}${KEY_SEPARATOR}${reader.string()}`
    : form === "!"
    ? reader.string()
    : reader.fail(`${JSON.stringify(form)} is not a key`)
  const at = sameAsPrevious()?.at ?? reader.number(",")
  const targetId = sameAsPrevious()?.fingerprint.targetId ?? reader.string()
  const textLength = reader.number(",")
  const textHash = reader.number(",")
  const attachmentsLength = reader.number(",")
  const attachmentsHash = reader.number(",")
  const replyErrorLength = reader.number(",")
  const replyErrorHash = reader.number(",")
  const replyTo = reader.optional()
  const expectsReply = reader.bool()
  const supersedes = reader.optional()
  const retryOf = reader.optional()
  const outcome = readOutcome(reader)
  return {
    key,
    sender,
    fingerprint: {
      targetId,
      textLength,
      textHash,
      attachmentsLength,
      attachmentsHash,
      replyTo,
      expectsReply,
      supersedes,
      retryOf,
      replyErrorLength,
      replyErrorHash
    },
    outcome,
    at
  }
}

/**
 * The records of block `n` (its row number, for the error), in the order
 * they were written, or a `CorruptRow` naming the block and where its text
 * stopped making sense.
 */
export const decodeBlock = (n: number, text: string): ReadonlyArray<StoredRecord> | CorruptRow => {
  const reader = new Reader(text)
  try {
    reader.expect("b1:")
    const count = reader.number(";")
    if (!Number.isSafeInteger(count) || count < 0) reader.fail("the record count is not a count")
    const records: Array<StoredRecord> = []
    for (let i = 0; i < count; i++) records.push(readRecord(reader, records[i - 1]))
    if (!reader.done) reader.fail(`text follows the last of ${count} records`)
    return records
  } catch (cause) {
    if (!(cause instanceof Malformed)) throw cause
    return new CorruptRow({ table: "replay block", key: `${n}`, detail: cause.detail })
  }
}
