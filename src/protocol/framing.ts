/**
 * Length-prefixed framing (P01–P02): a 4-byte unsigned big-endian length, then
 * that many bytes of UTF-8 JSON. `FrameDecoder` is the incremental splitter the
 * hot path calls synchronously; `decodeFrames` wraps the same splitter as a
 * Stream transform for code that is not on the per-frame path.
 */
import { Data, Stream } from "effect"
import { isUtf8 } from "node:buffer"
import { MAX_FRAME_BYTES } from "./constants.ts"

/**
 * A length prefix over the frame limit (P02). The reader stops there: the
 * connection is closed without an error frame, as pi-intercom does.
 */
export class FrameTooLarge extends Data.TaggedError("FrameTooLarge")<{
  readonly size: number
  readonly limit: number
}> {
  override get message(): string {
    return `Frame of ${this.size} bytes exceeds the ${this.limit}-byte limit; the connection was closed`
  }
}

/**
 * A frame's payload is not valid UTF-8 (JSON text must be, RFC 8259). Refused
 * rather than decoded with replacement characters: each invalid byte would
 * become three bytes when the text is encoded again, so a frame could grow
 * past the limit on its way to another session.
 */
export class InvalidUtf8 extends Data.TaggedError("InvalidUtf8")<{}> {
  override get message(): string {
    return "Frame payload is not valid UTF-8; the connection was closed"
  }
}

/** Why a byte stream cannot be split into frames: the decoder stays failed. */
export type FramingError = FrameTooLarge | InvalidUtf8

const HEADER_BYTES = 4

/** U+FFFD, what UTF-8 decoding puts in place of each invalid byte sequence. */
const REPLACEMENT = "\uFFFD"

/**
 * Splits a byte stream into frame payloads decoded as UTF-8 text. The length is
 * checked as soon as the header is complete, so an oversize payload is never
 * buffered. Chunks may split or coalesce frames arbitrarily. Use one decoder
 * per connection, synchronously; `decodeFrames` is the same as a Stream.
 *
 * @example
 * ```ts
 * import { encodeFrames, FrameDecoder } from "effect-intercom/protocol"
 *
 * const bytes = encodeFrames([
 *   JSON.stringify({ type: "health", requestId: "r1" }),
 *   JSON.stringify({ type: "list", requestId: "r2" })
 * ])
 * const decoder = new FrameDecoder()
 * const frames: Array<string> = []
 * decoder.push(bytes.subarray(0, 7), frames) // undefined; frames: [] (the first frame is incomplete)
 * decoder.push(bytes.subarray(7), frames) // undefined; frames: ['{"type":"health",…}', '{"type":"list",…}']
 *
 * new FrameDecoder(16).push(encodeFrames(["x".repeat(17)]), []) // FrameTooLarge { size: 17, limit: 16 }
 * ```
 */
export class FrameDecoder {
  /**
   * A length prefix split across chunks: its bytes so far (at most three,
   * big-endian), and how many. A number, not a 4-byte Buffer: a Buffer per connection is an
   * ArrayBuffer, a view and a native backing store, held by every idle
   * connection of a broker (docs/performance.md, "Idle sessions, sixty-ninth
   * stop").
   */
  private headerValue = 0
  private headerFill = 0
  private payload: Buffer | undefined
  private payloadFill = 0
  private failed: FramingError | undefined

  private readonly limit: number

  constructor(limit: number = MAX_FRAME_BYTES) {
    this.limit = limit
  }

  /** Bytes held for an incomplete frame (for tests and diagnostics). */
  get buffered(): number {
    return this.headerFill + this.payloadFill
  }

  /**
   * Feeds one chunk; appends each completed payload to `out`. Returns the error
   * once a length prefix exceeds the limit or a payload is not valid UTF-8;
   * the decoder then stays failed (frames completed before it are in `out`).
   */
  push(chunk: Uint8Array, out: Array<string>): FramingError | undefined {
    if (this.failed !== undefined) return this.failed
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
    let offset = 0
    const end = buf.length
    while (offset < end) {
      if (this.payload !== undefined) {
        // Continue an incomplete payload.
        const take = Math.min(this.payload.length - this.payloadFill, end - offset)
        buf.copy(this.payload, this.payloadFill, offset, offset + take)
        this.payloadFill += take
        offset += take
        if (this.payloadFill === this.payload.length) {
          if (!isUtf8(this.payload)) return this.fail(new InvalidUtf8())
          out.push(this.payload.toString("utf8"))
          this.payload = undefined
          this.payloadFill = 0
        }
        continue
      }
      let size: number
      if (this.headerFill === 0 && end - offset >= HEADER_BYTES) {
        size = buf.readUInt32BE(offset)
        offset += HEADER_BYTES
      } else {
        let value = this.headerValue
        let fill = this.headerFill
        while (fill < HEADER_BYTES && offset < end) {
          value = value * 256 + buf[offset]!
          fill++
          offset++
        }
        if (fill < HEADER_BYTES) {
          // At most three bytes: under 2^24, so the field stays a small integer. A whole
          // prefix may pass 2^31 and is kept in a local only: one such value stored in the
          // field would box it in every decoder made after (review revidle #1).
          this.headerValue = value
          this.headerFill = fill
          break
        }
        size = value
        this.headerValue = 0
        this.headerFill = 0
      }
      if (size > this.limit) return this.fail(new FrameTooLarge({ size, limit: this.limit }))
      if (end - offset >= size) {
        // Whole payload inside this chunk: decode in place, no copy. Decoding replaces every
        // invalid sequence with U+FFFD, so text without one came from valid UTF-8; only text with
        // one (replaced, or sent by the client) is checked byte by byte, through a view made then.
        const text = buf.toString("utf8", offset, offset + size)
        if (text.includes(REPLACEMENT) && !isUtf8(buf.subarray(offset, offset + size))) {
          return this.fail(new InvalidUtf8())
        }
        out.push(text)
        offset += size
      } else {
        this.payload = Buffer.allocUnsafe(size)
        this.payloadFill = 0
      }
    }
    return undefined
  }

  private fail(error: FramingError): FramingError {
    this.failed = error
    return error
  }
}

/**
 * A frame text kept in its pieces (shared constants, cached JSON, numbers)
 * instead of one string: written straight into the framing buffer, so the
 * text is never concatenated and flattened first (docs/performance.md,
 * "Garbage, fifth stop"). Whatever the pieces, the bytes written are exactly
 * the UTF-8 of `text()`.
 */
export interface FrameParts {
  /** UTF-16 code units of the whole text: `text().length`. */
  readonly length: number
  /**
   * Writes the text's UTF-8 bytes into `out` from `offset`, which has room
   * for 3 bytes per code unit; returns how many bytes it wrote.
   */
  writeUtf8(out: Buffer, offset: number): number
  /** The whole text (an in-memory transport, a log line, a test). */
  text(): string
}

/** One frame on its way out: its text, whole or in parts. */
export type OutFrame = string | FrameParts

/** The text of an outgoing frame. */
export const frameText = (frame: OutFrame): string => typeof frame === "string" ? frame : frame.text()

const isText = (frame: OutFrame): frame is string => typeof frame === "string"

/** The texts of outgoing frames: the same array when they are all strings already. */
export const frameTexts = (frames: ReadonlyArray<OutFrame>): ReadonlyArray<string> =>
  frames.every(isText) ? frames : frames.map(frameText)

/**
 * Frames texts into one buffer ready for a single socket write: each is a
 * 4-byte big-endian UTF-8 length, then the text (P01). It does not check the
 * limit; see `frameBytes`. For an example, see `FrameDecoder`.
 */
export const encodeFrames = (frames: ReadonlyArray<OutFrame>): Buffer => {
  let total = 0
  const texts = frameTexts(frames)
  const lengths = new Array<number>(texts.length)
  for (let i = 0; i < texts.length; i++) {
    const length = Buffer.byteLength(texts[i]!, "utf8")
    lengths[i] = length
    total += HEADER_BYTES + length
  }
  const out = Buffer.allocUnsafe(total)
  let offset = 0
  for (let i = 0; i < texts.length; i++) {
    out.writeUInt32BE(lengths[i]!, offset)
    offset += HEADER_BYTES
    offset += out.write(texts[i]!, offset, "utf8")
  }
  return out
}

/** The most UTF-8 bytes one UTF-16 code unit can take (a lone surrogate or a BMP character: 3). */
const MAX_BYTES_PER_UNIT = 3

/** A scratch buffer at most this large is kept for reuse; a batch that could need more gets its own. */
const SCRATCH_LIMIT = 256 * 1024

/**
 * A reusable buffer for `encodeFramesInto`, owned by whoever writes through
 * it one batch at a time (a listener, for all its connections: Node runs them
 * on one thread). After a write, the writer calls `lent` if the socket kept
 * the bytes (it could not write them all at once): the next batch then gets a
 * new buffer, and this one stays with the socket until it is done.
 */
export class FrameScratch {
  private buffer: Buffer | undefined

  /** A buffer of at least `bytes` bytes: the kept one when large enough. */
  take(bytes: number): Buffer {
    if (bytes > SCRATCH_LIMIT) return Buffer.allocUnsafe(bytes)
    const kept = this.buffer
    if (kept !== undefined && kept.length >= bytes) return kept
    const fresh = Buffer.allocUnsafeSlow(Math.max(bytes, 16 * 1024))
    this.buffer = fresh
    return fresh
  }

  /** The last buffer taken is still in use by a socket: do not hand it out again. */
  lent(): void {
    this.buffer = undefined
  }
}

/**
 * Frames `frames` (length prefix + UTF-8) into one buffer in a single pass:
 * each text, or each frame's parts (`FrameParts`), is written straight into a buffer sized for the worst case
 * (3 bytes per UTF-16 unit) taken from `scratch`, and its length prefix is
 * filled in from the bytes written — no separate `Buffer.byteLength` pass and,
 * while the socket takes every batch at once, no new buffer per batch. The
 * result is a view into the scratch buffer: valid until the next call.
 */
export const encodeFramesInto = (frames: ReadonlyArray<OutFrame>, scratch: FrameScratch): Buffer => {
  let bound = 0
  for (let i = 0; i < frames.length; i++) bound += HEADER_BYTES + MAX_BYTES_PER_UNIT * frames[i]!.length
  const out = scratch.take(bound)
  let offset = 0
  for (let i = 0; i < frames.length; i++) {
    const frame = frames[i]!
    const written = typeof frame === "string"
      ? out.write(frame, offset + HEADER_BYTES, "utf8")
      : frame.writeUtf8(out, offset + HEADER_BYTES)
    out.writeUInt32BE(written, offset)
    offset += HEADER_BYTES + written
  }
  return out.subarray(0, offset)
}

/** Frames one text. */
export const encodeFrame = (frame: string): Buffer => encodeFrames([frame])

/** UTF-8 size of a frame payload, for limit checks before sending. */
export const frameBytes = (frame: OutFrame): number => Buffer.byteLength(frameText(frame), "utf8")

/**
 * How many of `items`, from the first, fit `room` bytes as the elements of a
 * JSON array (each `JSON.stringify`'d, a comma between two): how a frame
 * that carries a list is cut to the frame limit, the room being what the
 * frame takes with the list empty.
 *
 * @example
 * ```ts
 * leadingThatFit([{ a: 1 }, { a: 2 }], 15) // 2: {"a":1},{"a":2} is 15 bytes
 * leadingThatFit([{ a: 1 }, { a: 2 }], 14) // 1
 * ```
 */
export const leadingThatFit = (items: ReadonlyArray<unknown>, room: number): number => {
  let left = room
  let kept = 0
  for (const item of items) {
    left -= Buffer.byteLength(JSON.stringify(item), "utf8") + (kept === 0 ? 0 : 1)
    if (left < 0) break
    kept++
  }
  return kept
}

/**
 * Stream transform: any chunking of bytes in, frame payload texts out. Fails
 * with `FrameTooLarge` when a length prefix exceeds `limit`, `InvalidUtf8`
 * when a payload is not valid UTF-8.
 */
export const decodeFrames = (limit: number = MAX_FRAME_BYTES) =>
<E, R>(bytes: Stream.Stream<Uint8Array, E, R>): Stream.Stream<string, E | FramingError, R> =>
  Stream.suspend(() => {
    const decoder = new FrameDecoder(limit)
    // Frames completed before an oversize header are still emitted, then the stream fails.
    return Stream.flatMap(bytes, (chunk) => {
      const out: Array<string> = []
      const error = decoder.push(chunk, out)
      const frames = Stream.fromIterable(out)
      return error === undefined ? frames : Stream.concat(frames, Stream.fail(error))
    })
  })
