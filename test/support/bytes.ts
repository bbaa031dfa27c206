/** Byte helpers for framing tests: length headers and arbitrary splits. */
import fc from "fast-check"

/** A 4-byte unsigned big-endian length header (P01). */
export const header = (length: number): Buffer => {
  const out = Buffer.alloc(4)
  out.writeUInt32BE(length, 0)
  return out
}

/** Cuts `bytes` at the given offsets (any numbers; reduced modulo the length, sorted, de-duplicated). */
export const splitAt = (bytes: Uint8Array, cuts: ReadonlyArray<number>): Array<Uint8Array> => {
  const points = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b)
  const chunks: Array<Uint8Array> = []
  let start = 0
  for (const point of points) {
    if (point > start) {
      chunks.push(bytes.subarray(start, point))
      start = point
    }
  }
  if (start < bytes.length || chunks.length === 0) chunks.push(bytes.subarray(start))
  return chunks
}

/** Frame payload texts: any Unicode (including astral code points and empty strings). */
export const payloadTexts = fc.array(
  fc.oneof(
    fc.string({ unit: "grapheme-composite", maxLength: 40 }),
    fc.string({ unit: "grapheme", maxLength: 40 }),
    fc.json({ maxDepth: 2 })
  ),
  { maxLength: 12 }
)

/** Cut offsets for `splitAt`; includes 1-byte splits often enough. */
export const cutPoints = fc.array(fc.nat({ max: 100_000 }), { maxLength: 40 })

/** A JSON object of exactly `bytes` UTF-8 bytes: `{"type":…}` padded with whitespace. */
export const paddedJson = (object: object, bytes: number): string => {
  const json = JSON.stringify(object)
  const size = Buffer.byteLength(json, "utf8")
  if (size > bytes) throw new Error(`${json.slice(0, 40)}… is already ${size} bytes`)
  return json.slice(0, -1) + " ".repeat(bytes - size) + "}"
}
