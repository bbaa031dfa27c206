/**
 * Big and strange field values, as bytes, for oversized frames. The payload
 * of a frame is bytes, not text: a 0xFF byte is invalid UTF-8, which the
 * broker decodes as U+FFFD and writes back as three bytes — the cheapest way
 * to make the broker's output three times larger than its input. JSON is
 * built around markers and the blobs spliced in as raw bytes.
 */
import type { Prng } from "../../testing/Prng.ts"

/** How a blob is made up; each grows differently on its way back out of the broker. */
export type BlobFlavour = "ascii" | "invalid-utf8" | "two-byte" | "three-byte" | "four-byte" | "escapes"

const FLAVOURS: ReadonlyArray<BlobFlavour> = ["ascii", "invalid-utf8", "two-byte", "three-byte", "four-byte", "escapes"]

/** A blob of about `bytes` bytes of raw JSON-string content (no quotes). */
export const blob = (flavour: BlobFlavour, bytes: number): Buffer => {
  const n = Math.max(0, Math.floor(bytes))
  switch (flavour) {
    case "ascii":
      return Buffer.alloc(n, "x")
    case "invalid-utf8":
      return Buffer.alloc(n, 0xff)
    case "two-byte":
      return Buffer.from("é".repeat(Math.floor(n / 2)), "utf8")
    case "three-byte":
      return Buffer.from("€".repeat(Math.floor(n / 3)), "utf8")
    case "four-byte":
      return Buffer.from("😀".repeat(Math.floor(n / 4)), "utf8")
    case "escapes":
      // `\n` and `\"` as JSON escapes: two bytes in, two bytes out, and newlines once decoded.
      return Buffer.from("\\n\\\"".repeat(Math.floor(n / 4)), "utf8")
  }
}

/** A flavour, mostly the amplifying one. */
export const pickFlavour = (prng: Prng): BlobFlavour => prng.chance(0.5) ? "invalid-utf8" : prng.pick(FLAVOURS)

/** A marker to put where a blob goes, as a JSON string value: `"@@blob<i>@@"`. */
export const mark = (i: number): string => `@@blob${i}@@`

/**
 * JSON of `object` with each marker `mark(i)` (as a string value) replaced
 * by the raw bytes of `blobs[i]`.
 */
export const spliceJson = (object: unknown, blobs: ReadonlyArray<Buffer>): Buffer => {
  let parts: Array<Buffer> = [Buffer.from(JSON.stringify(object), "utf8")]
  blobs.forEach((content, i) => {
    const marker = Buffer.from(mark(i), "utf8")
    const next: Array<Buffer> = []
    for (const part of parts) {
      const at = part.indexOf(marker)
      if (at < 0) {
        next.push(part)
        continue
      }
      next.push(part.subarray(0, at), content, part.subarray(at + marker.length))
    }
    parts = next
  })
  return Buffer.concat(parts)
}

/** A size between `min` and `max` bytes, biased toward the top (near the limits is where bugs live). */
export const nearLimit = (prng: Prng, min: number, max: number): number =>
  prng.chance(0.5) ? max - prng.int(0, Math.floor((max - min) / 16)) : prng.int(min, max)
