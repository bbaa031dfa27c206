/**
 * The part of NATS's text protocol the bench needs, written from the protocol
 * description (no client library's code): an incremental parser of what a
 * server sends (`INFO`, `MSG`, `HMSG`, `PING`, `PONG`, `+OK`, `-ERR`) and the
 * few client lines the bench writes (`CONNECT`, `SUB`, `PUB`, `PING`, `PONG`).
 *
 * Control lines end in CRLF; `MSG <subject> <sid> [reply-to] <#bytes>` is
 * followed by exactly that many payload bytes and a CRLF. Payloads that sit
 * inside one pushed chunk are handed out as views of it (no copy); a chunk
 * that ends mid-line or mid-payload keeps its tail for the next push.
 */

/** One `MSG` (or `HMSG`, headers skipped): payload bytes are `[start, end)` of `buf`. */
export interface NatsMsg {
  readonly subject: string
  readonly sid: string
  readonly replyTo: string | undefined
  readonly buf: Buffer
  readonly start: number
  readonly end: number
}

/** Every other server operation; `arg` is the rest of the line (INFO's JSON, -ERR's text). */
export type NatsOp = { readonly op: "PING" | "PONG" | "OK" } | { readonly op: "INFO" | "ERR"; readonly arg: string }

/** Where the parser hands what it parsed. */
export interface NatsHandlers {
  readonly onMsg: (msg: NatsMsg) => void
  readonly onOp: (op: NatsOp) => void
}

const CRLF = Buffer.from("\r\n")

/** A control line longer than this without a CRLF is a protocol error (a server's INFO is a few hundred bytes). */
const MAX_CONTROL_LINE = 64 * 1024

const sizeOf = (token: string | undefined): number => {
  if (token === undefined || !/^\d+$/.test(token)) return Number.NaN
  return Number(token)
}

/**
 * Incremental parser of server → client bytes. `push` returns an error text
 * for bytes that are not NATS protocol (the caller closes the connection),
 * `undefined` otherwise.
 */
export class NatsParser {
  private rest: Buffer | undefined = undefined
  private readonly handlers: NatsHandlers

  constructor(handlers: NatsHandlers) {
    this.handlers = handlers
  }

  push(chunk: Buffer): string | undefined {
    const buf = this.rest === undefined ? chunk : Buffer.concat([this.rest, chunk])
    this.rest = undefined
    let pos = 0
    while (pos < buf.length) {
      const eol = buf.indexOf(CRLF, pos)
      if (eol < 0) {
        if (buf.length - pos > MAX_CONTROL_LINE) return `a control line longer than ${MAX_CONTROL_LINE} bytes`
        break
      }
      const line = buf.toString("latin1", pos, eol)
      const space = line.search(/[ \t]/)
      const op = (space < 0 ? line : line.slice(0, space)).toUpperCase()
      const arg = space < 0 ? "" : line.slice(space + 1).trim()
      if (op === "MSG" || op === "HMSG") {
        const tokens = arg.split(/[ \t]+/)
        // MSG subject sid [reply] size; HMSG subject sid [reply] headerSize totalSize.
        const fixed = op === "MSG" ? 3 : 4
        if (tokens.length !== fixed && tokens.length !== fixed + 1) return `malformed ${op} line: ${line.slice(0, 200)}`
        const total = sizeOf(tokens[tokens.length - 1])
        const headers = op === "HMSG" ? sizeOf(tokens[tokens.length - 2]) : 0
        if (!Number.isFinite(total) || !Number.isFinite(headers) || headers > total) {
          return `malformed ${op} sizes: ${line.slice(0, 200)}`
        }
        const payloadStart = eol + 2
        const payloadEnd = payloadStart + total
        if (payloadEnd + 2 > buf.length) break // wait for the rest of the payload
        if (buf[payloadEnd] !== 13 || buf[payloadEnd + 1] !== 10) return `${op} payload not followed by CRLF: ${line.slice(0, 200)}`
        this.handlers.onMsg({
          subject: tokens[0] ?? "",
          sid: tokens[1] ?? "",
          replyTo: tokens.length === fixed + 1 ? tokens[2] : undefined,
          buf,
          start: payloadStart + headers,
          end: payloadEnd
        })
        pos = payloadEnd + 2
        continue
      }
      pos = eol + 2
      if (op === "PING" || op === "PONG") this.handlers.onOp({ op })
      else if (op === "+OK") this.handlers.onOp({ op: "OK" })
      else if (op === "-ERR") this.handlers.onOp({ op: "ERR", arg })
      else if (op === "INFO") this.handlers.onOp({ op: "INFO", arg })
      else return `unknown operation from the server: ${line.slice(0, 200)}`
    }
    if (pos < buf.length) this.rest = buf.subarray(pos)
    return undefined
  }
}

/** `CONNECT` with no echo of our own publications, no +OK per line, no auth. */
export const connectLine = (name: string): string =>
  `CONNECT ${JSON.stringify({ verbose: false, pedantic: false, echo: false, lang: "bench", version: "0", protocol: 1, name })}\r\n`

/** `SUB <subject> <sid>`. */
export const subLine = (subject: string, sid: string): string => `SUB ${subject} ${sid}\r\n`

/** `PUB <subject> [reply-to] <#bytes>` + payload + CRLF, as one string (written as UTF-8). */
export const pubText = (subject: string, payload: string, replyTo?: string): string =>
  `PUB ${subject}${replyTo === undefined ? "" : ` ${replyTo}`} ${Buffer.byteLength(payload)}\r\n${payload}\r\n`

/** The bench's payloads start with a sequence number: the digits before the first space, or NaN. */
export const leadingSeq = (buf: Buffer, start: number, end: number): number => {
  let n = 0
  let i = start
  for (; i < end; i++) {
    const c = buf[i] ?? 0
    if (c === 32) break
    if (c < 48 || c > 57) return Number.NaN
    n = n * 10 + (c - 48)
  }
  return i === start || i === end ? Number.NaN : n
}
