/**
 * The two frames every send writes — the forwarded `message` and the
 * sender's `delivered` — kept in their pieces (`FrameParts`, framing.ts)
 * rather than concatenated into one string: the writer copies the pieces
 * straight into the framing buffer. A concatenated frame is a chain of cons
 * strings that the socket write must first flatten into a new string, about
 * 700 bytes of garbage per `w64` message (docs/performance.md, "Garbage,
 * fifth stop"). The membership feed's `session_joined` is kept the same way,
 * for another reason: it is cached per session for as long as the session is
 * present, and in parts it shares the session's SessionInfo JSON instead of
 * holding a second copy of it (docs/performance.md, "Idle sessions,
 * seventy-second stop").
 *
 * Owns only the byte layout: the constant pieces pre-encoded once, numbers
 * written as digits, a JSON string written between quotes when it needs no
 * escaping. `text()` builds the same frame as a string, byte for byte (the
 * property tests in test/broker/encode.test.ts hold both to the string
 * builder they replace).
 */
import type { FrameParts } from "../protocol/framing.ts"

const q = JSON.stringify

/** An ASCII constant, encoded once. */
const ascii = (text: string): Buffer => Buffer.from(text, "latin1")

const MESSAGE_HEAD = `{"type":"message","from":`
const MESSAGE_KEY = `,"message":`
const RECEIVED_KEY = `,"brokerReceivedAt":`
const DELIVERED_KEY = `,"brokerDeliveredAt":`
const MESSAGE_HEAD_BYTES = ascii(MESSAGE_HEAD)
const MESSAGE_KEY_BYTES = ascii(MESSAGE_KEY)
const RECEIVED_KEY_BYTES = ascii(RECEIVED_KEY)
const DELIVERED_KEY_BYTES = ascii(DELIVERED_KEY)

const CLOSE_BRACE = 0x7d
const QUOTE = 0x22
const MINUS = 0x2d
const ZERO = 0x30

/** Copies an ASCII constant into `out` at `at`; returns its length. */
const put = (out: Buffer, at: number, bytes: Buffer): number => {
  out.set(bytes, at)
  return bytes.length
}

/**
 * Digits below 10⁹ and above it are written apart, each part a small integer:
 * V8 divides those in integer arithmetic, where a safe integer's digits (a
 * broker time is about 1.8 × 10¹²) would each cost a floating-point division
 * and `Math.floor` — two timestamps per message (docs/performance.md,
 * "Per-message CPU, eleventh stop").
 */
const BILLION = 1_000_000_000

/** Decimal digits of a non-negative integer below 2³¹. */
const smallDigitCount = (n: number): number => {
  let count = 1
  for (let rest = n; rest >= 10; rest = (rest / 10) | 0) count++
  return count
}

/** Decimal digits of a non-negative safe integer. */
const digitCount = (n: number): number =>
  n < BILLION ? smallDigitCount(n) : 9 + smallDigitCount(Math.floor(n / BILLION))

/** Characters `JSON.stringify(n)` writes for a number. */
const decimalLength = (n: number): number =>
  Number.isSafeInteger(n) ? (n < 0 ? 1 + digitCount(-n) : digitCount(n)) : q(n).length

/** Writes the last `count` decimal digits of `n` (a non-negative integer below 2³¹) to end at `end`, zero-padded. */
const writeDigits = (out: Buffer, end: number, n: number, count: number): void => {
  let rest = n
  for (let i = end - 1; i >= end - count; i--) {
    const tenth = (rest / 10) | 0
    out[i] = ZERO + rest - tenth * 10
    rest = tenth
  }
}

/** Writes `JSON.stringify(n)` at `at` (digits for a safe integer, no string made); returns the bytes written. */
const writeDecimal = (out: Buffer, at: number, n: number): number => {
  if (!Number.isSafeInteger(n)) return out.write(q(n), at, "latin1")
  let start = at
  let rest = n
  if (rest < 0) {
    out[start++] = MINUS
    rest = -rest
  }
  if (rest < BILLION) {
    const count = smallDigitCount(rest)
    writeDigits(out, start + count, rest, count)
    return start + count - at
  }
  const high = Math.floor(rest / BILLION)
  const highCount = smallDigitCount(high)
  const end = start + highCount + 9
  writeDigits(out, end, rest - high * BILLION, 9)
  writeDigits(out, start + highCount, high, highCount)
  return end - at
}

/**
 * Whether `JSON.stringify(text)` is `text` between quotes: no quote,
 * backslash or control character to escape, and no surrogate (a lone one
 * would be escaped; pairs are let through the slow way too, for simplicity).
 */
const isPlainJsonString = (text: string): boolean => {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c < 0x20 || c === QUOTE || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) return false
  }
  return true
}

/**
 * A `message` frame for a message that carries no broker timestamps of its
 * own: `{"type":"message","from":<from>,"message":<json minus its closing
 * brace>,"brokerReceivedAt":<r>,"brokerDeliveredAt":<d>}<tail>}`.
 */
export class MessageFrameParts implements FrameParts {
  readonly length: number
  private readonly fromJson: string
  private readonly json: string
  private readonly receivedAt: number
  private readonly deliveredAt: number
  private readonly tail: string

  /**
   * @param fromJson the sender's SessionInfo JSON.
   * @param json the message's JSON (`JSON.stringify` of an object: it ends with `}`).
   * @param tail the extension fields after the message (`""` for most recipients).
   */
  constructor(fromJson: string, json: string, receivedAt: number, deliveredAt: number, tail: string) {
    this.fromJson = fromJson
    this.json = json
    this.receivedAt = receivedAt
    this.deliveredAt = deliveredAt
    this.tail = tail
    this.length = MESSAGE_HEAD.length + fromJson.length + MESSAGE_KEY.length + json.length - 1 +
      RECEIVED_KEY.length + decimalLength(receivedAt) + DELIVERED_KEY.length + decimalLength(deliveredAt) + 1 +
      tail.length + 1
  }

  /**
   * The same frame with `tail` in place of this one's extension fields: the
   * sender's and the message's JSON shared, not copied or encoded again.
   */
  withTail(tail: string): MessageFrameParts {
    return new MessageFrameParts(this.fromJson, this.json, this.receivedAt, this.deliveredAt, tail)
  }

  writeUtf8(out: Buffer, offset: number): number {
    let at = offset + put(out, offset, MESSAGE_HEAD_BYTES)
    at += out.write(this.fromJson, at, "utf8")
    at += put(out, at, MESSAGE_KEY_BYTES)
    // The message's closing brace (one byte) is written over by the timestamps.
    at += out.write(this.json, at, "utf8") - 1
    at += put(out, at, RECEIVED_KEY_BYTES)
    at += writeDecimal(out, at, this.receivedAt)
    at += put(out, at, DELIVERED_KEY_BYTES)
    at += writeDecimal(out, at, this.deliveredAt)
    out[at++] = CLOSE_BRACE
    if (this.tail.length > 0) at += out.write(this.tail, at, "utf8")
    out[at++] = CLOSE_BRACE
    return at - offset
  }

  text(): string {
    return `${MESSAGE_HEAD}${this.fromJson}${MESSAGE_KEY}${this.json.slice(0, -1)}${RECEIVED_KEY}${
      q(this.receivedAt)
    }${DELIVERED_KEY}${q(this.deliveredAt)}}${this.tail}}`
  }
}

const DELIVERED_HEAD = `{"type":"delivered","messageId":`
const DELIVERED_HEAD_BYTES = ascii(DELIVERED_HEAD)

/** What follows the message id in a `delivered` frame, by delivery: one constant, not pieces joined per send. */
export const DELIVERED_TAIL = {
  socket_delivered: `,"delivery":"socket_delivered","retryable":false,"outcomeKnown":true}`,
  queued: `,"delivery":"queued","retryable":false,"outcomeKnown":true}`
} as const

const DELIVERED_TAIL_BYTES = {
  socket_delivered: ascii(DELIVERED_TAIL.socket_delivered),
  queued: ascii(DELIVERED_TAIL.queued)
} as const

/** `delivered` with delivery details (P41): `{"type":"delivered","messageId":<id>,"delivery":…}`. */
export class DeliveredFrameParts implements FrameParts {
  readonly length: number
  private readonly messageId: string
  /** `JSON.stringify(messageId)` when the id needs escaping; undefined when it is the id between quotes. */
  private readonly quoted: string | undefined
  private readonly delivery: "socket_delivered" | "queued"

  constructor(messageId: string, delivery: "socket_delivered" | "queued") {
    this.messageId = messageId
    this.delivery = delivery
    this.quoted = isPlainJsonString(messageId) ? undefined : q(messageId)
    this.length = DELIVERED_HEAD.length + (this.quoted?.length ?? messageId.length + 2) +
      DELIVERED_TAIL[delivery].length
  }

  writeUtf8(out: Buffer, offset: number): number {
    let at = offset + put(out, offset, DELIVERED_HEAD_BYTES)
    if (this.quoted !== undefined) at += out.write(this.quoted, at, "utf8")
    else {
      out[at++] = QUOTE
      at += out.write(this.messageId, at, "utf8")
      out[at++] = QUOTE
    }
    at += put(out, at, DELIVERED_TAIL_BYTES[this.delivery])
    return at - offset
  }

  text(): string {
    return `${DELIVERED_HEAD}${this.quoted ?? q(this.messageId)}${DELIVERED_TAIL[this.delivery]}`
  }
}

const JOINED_HEAD = `{"type":"session_joined","session":`
const JOINED_HEAD_BYTES = ascii(JOINED_HEAD)

/**
 * `session_joined` (P30): `{"type":"session_joined","session":<info>}`, the
 * session's SessionInfo JSON shared, not copied (MembershipFeed.ts caches one
 * per present session).
 */
export class JoinedFrameParts implements FrameParts {
  readonly length: number
  private readonly infoJson: string

  /** @param infoJson the session's SessionInfo JSON (`JSON.stringify` of an object). */
  constructor(infoJson: string) {
    this.infoJson = infoJson
    this.length = JOINED_HEAD.length + infoJson.length + 1
  }

  writeUtf8(out: Buffer, offset: number): number {
    let at = offset + put(out, offset, JOINED_HEAD_BYTES)
    at += out.write(this.infoJson, at, "utf8")
    out[at++] = CLOSE_BRACE
    return at - offset
  }

  text(): string {
    return `${JOINED_HEAD}${this.infoJson}}`
  }
}
