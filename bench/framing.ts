/**
 * Length-prefixed frame splitter shared by the bench client and the raw relay:
 * 4-byte unsigned big-endian length, then that many bytes of UTF-8 JSON.
 * Payloads that arrive whole inside one chunk are handed out as views of that
 * chunk (no copy); split payloads are assembled into one exact-size buffer.
 */

export const MAX_FRAME_BYTES = 1_048_576

/** Called once per complete payload: bytes `[start, end)` of `buf`. */
export type PayloadHandler = (buf: Buffer, start: number, end: number) => void

export class FrameSplitter {
  private readonly header = Buffer.alloc(4)
  private headerFill = 0
  private payload: Buffer | undefined = undefined
  private payloadFill = 0
  private readonly onPayload: PayloadHandler
  private readonly limit: number

  constructor(onPayload: PayloadHandler, limit: number = MAX_FRAME_BYTES) {
    this.onPayload = onPayload
    this.limit = limit
  }

  /** Feeds a chunk. Returns false once a length prefix exceeds the limit. */
  push(chunk: Buffer): boolean {
    let offset = 0
    const end = chunk.length
    while (offset < end) {
      if (this.payload !== undefined) {
        const take = Math.min(this.payload.length - this.payloadFill, end - offset)
        chunk.copy(this.payload, this.payloadFill, offset, offset + take)
        this.payloadFill += take
        offset += take
        if (this.payloadFill === this.payload.length) {
          const done = this.payload
          this.payload = undefined
          this.payloadFill = 0
          this.onPayload(done, 0, done.length)
        }
        continue
      }
      if (this.headerFill === 0 && end - offset >= 4) {
        // Fast path: header (and maybe the whole payload) inside this chunk.
        const size = chunk.readUInt32BE(offset)
        if (size > this.limit) return false
        offset += 4
        if (end - offset >= size) {
          this.onPayload(chunk, offset, offset + size)
          offset += size
        } else {
          this.startPayload(size)
        }
        continue
      }
      // Slow path: header split across chunks.
      while (this.headerFill < 4 && offset < end) {
        this.header[this.headerFill++] = chunk[offset++] ?? 0
      }
      if (this.headerFill === 4) {
        this.headerFill = 0
        const size = this.header.readUInt32BE(0)
        if (size > this.limit) return false
        this.startPayload(size)
      }
    }
    return true
  }

  private startPayload(size: number): void {
    if (size === 0) {
      this.onPayload(Buffer.alloc(0), 0, 0)
      return
    }
    this.payload = Buffer.allocUnsafe(size)
    this.payloadFill = 0
  }
}

/** Frames a JSON text: header + UTF-8 payload in one buffer. */
export const encodeText = (text: string): Buffer => {
  const size = Buffer.byteLength(text)
  const buf = Buffer.allocUnsafe(4 + size)
  buf.writeUInt32BE(size, 0)
  buf.write(text, 4)
  return buf
}

export const encodeFrame = (frame: object): Buffer => encodeText(JSON.stringify(frame))

export const isRecord = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/** Parses a payload; `undefined` unless it is a JSON object with a string `type`. */
export const parsePayload = (buf: Buffer, start: number, end: number): Record<string, unknown> | undefined => {
  let value: unknown
  try {
    value = JSON.parse(buf.toString("utf8", start, end))
  } catch {
    return undefined
  }
  return isRecord(value) && typeof value["type"] === "string" ? value : undefined
}

export const getString = (o: Record<string, unknown>, key: string): string | undefined => {
  const v = o[key]
  return typeof v === "string" ? v : undefined
}

export const getRecord = (o: Record<string, unknown>, key: string): Record<string, unknown> | undefined => {
  const v = o[key]
  return isRecord(v) ? v : undefined
}
