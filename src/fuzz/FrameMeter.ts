/**
 * The fuzzer's view of what the broker writes to one connection: a frame
 * splitter with no size limit. Unlike `FrameDecoder` (which refuses a frame
 * over 1 MiB, as a strict client does) it measures every frame, however
 * large, so a connection that received an oversized frame keeps reading and
 * the fuzzer can report the size. Frames up to `keepBytes` are handed back as
 * text for the caller to check; larger ones are measured and skipped.
 */
import { MAX_FRAME_BYTES } from "../protocol/constants.ts"

const HEADER_BYTES = 4

/** One frame the broker wrote: its payload size, and its text when it was kept. */
export interface MeteredFrame {
  readonly bytes: number
  /** The payload as UTF-8 text; undefined when the frame was larger than `keepBytes`. */
  readonly text: string | undefined
}

/**
 * Splits a byte stream into frames, measuring each. Synchronous and
 * incremental, one per connection.
 *
 * @example
 * const meter = new FrameMeter()
 * const frames: Array<MeteredFrame> = []
 * meter.push(chunk, frames)
 * if (meter.largest > MAX_FRAME_BYTES) console.log("the broker wrote an oversized frame")
 */
export class FrameMeter {
  private readonly header = Buffer.alloc(HEADER_BYTES)
  private headerFill = 0
  /** The frame being read: its size, what is buffered of it (if kept), and how much is still to come. */
  private current: { readonly size: number; readonly chunks: Array<Buffer> | undefined; remaining: number } | undefined
  private readonly keepBytes: number
  /** The largest frame payload seen, in bytes. */
  largest = 0
  /** Frames seen. */
  count = 0
  /** Frames over the 1 MiB limit. */
  oversized = 0

  /** @param keepBytes frames up to this size are returned as text (default: the 1 MiB limit). */
  constructor(keepBytes: number = MAX_FRAME_BYTES) {
    this.keepBytes = keepBytes
  }

  /** Whether part of a frame (header or payload) has arrived and the rest has not. */
  get pending(): boolean {
    return this.headerFill > 0 || this.current !== undefined
  }

  /** Feeds one chunk; appends each completed frame to `out`. */
  push(chunk: Uint8Array, out: Array<MeteredFrame>): void {
    const buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
    let offset = 0
    while (offset < buf.length) {
      const current = this.current
      if (current !== undefined) {
        const take = Math.min(current.remaining, buf.length - offset)
        current.chunks?.push(buf.subarray(offset, offset + take))
        current.remaining -= take
        offset += take
        if (current.remaining === 0) {
          this.current = undefined
          this.complete(current.size, current.chunks === undefined ? undefined : Buffer.concat(current.chunks), out)
        }
        continue
      }
      const take = Math.min(HEADER_BYTES - this.headerFill, buf.length - offset)
      buf.copy(this.header, this.headerFill, offset, offset + take)
      this.headerFill += take
      offset += take
      if (this.headerFill < HEADER_BYTES) break
      this.headerFill = 0
      const size = this.header.readUInt32BE(0)
      if (size === 0) {
        this.complete(0, Buffer.alloc(0), out)
        continue
      }
      // Copied, not referenced: the socket may reuse its chunk buffers.
      this.current = { size, chunks: size <= this.keepBytes ? [] : undefined, remaining: size }
      const inChunk = Math.min(size, buf.length - offset)
      if (inChunk === size && this.current.chunks !== undefined) {
        this.current = undefined
        this.complete(size, Buffer.from(buf.subarray(offset, offset + size)), out)
        offset += size
      }
    }
  }

  private complete(size: number, payload: Buffer | undefined, out: Array<MeteredFrame>): void {
    this.count++
    if (size > this.largest) this.largest = size
    if (size > MAX_FRAME_BYTES) this.oversized++
    out.push({ bytes: size, text: payload?.toString("utf8") })
  }
}
