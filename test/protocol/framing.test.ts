/**
 * P01–P02: length-prefixed framing under arbitrary chunking, and the 1 MiB
 * limit checked on the header, before any payload is buffered.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Stream } from "effect"
import fc from "fast-check"
import { isUtf8 } from "node:buffer"
import {
  decodeFrames,
  encodeFrame,
  encodeFrames,
  encodeFramesInto,
  type FrameParts,
  FrameScratch,
  FrameDecoder,
  frameBytes,
  FrameTooLarge,
  type FramingError,
  InvalidUtf8,
  MAX_FRAME_BYTES
} from "../../src/protocol/index.ts"
import { cutPoints, header, payloadTexts, splitAt } from "../support/bytes.ts"

const feed = (decoder: FrameDecoder, chunks: ReadonlyArray<Uint8Array>) => {
  const out: Array<string> = []
  let error: FramingError | undefined
  for (const chunk of chunks) {
    error = decoder.push(chunk, out) ?? error
  }
  return { out, error }
}

describe("FrameDecoder (P01)", () => {
  it("any split of any sequence of frames yields exactly those frames", () => {
    fc.assert(
      fc.property(payloadTexts, cutPoints, (texts, cuts) => {
        const decoder = new FrameDecoder()
        const { out, error } = feed(decoder, splitAt(encodeFrames(texts), cuts))
        assert.isUndefined(error)
        assert.deepStrictEqual(out, texts)
        assert.strictEqual(decoder.buffered, 0)
      }),
      { numRuns: 300 }
    )
  })

  it("byte-by-byte feeding yields the frames, each as soon as its last byte arrives", () => {
    fc.assert(
      fc.property(payloadTexts, (texts) => {
        const decoder = new FrameDecoder()
        const bytes = encodeFrames(texts)
        const out: Array<string> = []
        const completedAt: Array<number> = []
        for (let i = 0; i < bytes.length; i++) {
          const before = out.length
          decoder.push(bytes.subarray(i, i + 1), out)
          for (let k = before; k < out.length; k++) completedAt.push(i + 1)
        }
        assert.deepStrictEqual(out, texts)
        let end = 0
        const expected = texts.map((text) => (end += 4 + Buffer.byteLength(text, "utf8")))
        assert.deepStrictEqual(completedAt, expected)
      }),
      { numRuns: 100 }
    )
  })

  it("encodeFrames is the concatenation of 4-byte big-endian length + UTF-8 payload", () => {
    fc.assert(
      fc.property(payloadTexts, (texts) => {
        const bytes = encodeFrames(texts)
        let offset = 0
        for (const text of texts) {
          const payload = Buffer.from(text, "utf8")
          assert.strictEqual(bytes.readUInt32BE(offset), payload.length)
          assert.strictEqual(frameBytes(text), payload.length)
          assert.isTrue(bytes.subarray(offset + 4, offset + 4 + payload.length).equals(payload))
          offset += 4 + payload.length
        }
        assert.strictEqual(offset, bytes.length)
        assert.isTrue(Buffer.concat(texts.map(encodeFrame)).equals(bytes))
      })
    )
  })

  it("a zero-length payload is a frame (empty text); rejecting it is the JSON layer's job", () => {
    const { out, error } = feed(new FrameDecoder(), [header(0), header(2), Buffer.from("{}")])
    assert.isUndefined(error)
    assert.deepStrictEqual(out, ["", "{}"])
  })

  it("reports a partial frame as buffered bytes until it completes", () => {
    const decoder = new FrameDecoder()
    const bytes = encodeFrame("{\"type\":\"list\"}")
    const out: Array<string> = []
    decoder.push(bytes.subarray(0, 2), out)
    assert.strictEqual(decoder.buffered, 2)
    decoder.push(bytes.subarray(2, 9), out)
    assert.strictEqual(decoder.buffered, 5)
    decoder.push(bytes.subarray(9), out)
    assert.deepStrictEqual(out, ["{\"type\":\"list\"}"])
    assert.strictEqual(decoder.buffered, 0)
  })
})

describe("frame size limit (P02)", () => {
  it("accepts a payload of exactly 1 MiB, under any split", () => {
    const big = "x".repeat(MAX_FRAME_BYTES)
    const bytes = encodeFrames([big, "after"])
    fc.assert(
      fc.property(fc.array(fc.nat({ max: bytes.length }), { maxLength: 6 }), (cuts) => {
        const { out, error } = feed(new FrameDecoder(), splitAt(bytes, cuts))
        assert.isUndefined(error)
        assert.strictEqual(out.length, 2)
        assert.strictEqual(out[0]?.length, MAX_FRAME_BYTES)
        assert.strictEqual(out[1], "after")
      }),
      { numRuns: 20 }
    )
  })

  it("rejects 1 MiB + 1 as soon as the header is complete, before any payload byte", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 3 }), { maxLength: 3 }), (cuts) => {
        const decoder = new FrameDecoder()
        const chunks = splitAt(header(MAX_FRAME_BYTES + 1), cuts)
        const out: Array<string> = []
        const errors = chunks.map((chunk) => decoder.push(chunk, out))
        // Only the push that completes the header reports the error.
        for (const error of errors.slice(0, -1)) assert.isUndefined(error)
        const last = errors[errors.length - 1]
        if (!(last instanceof FrameTooLarge)) return assert.fail(`expected FrameTooLarge, got ${String(last)}`)
        assert.strictEqual(last.size, MAX_FRAME_BYTES + 1)
        assert.strictEqual(last.limit, MAX_FRAME_BYTES)
        assert.strictEqual(decoder.buffered, 0)
        assert.deepStrictEqual(out, [])
      })
    )
  })

  it("the length is unsigned: 0x80000000 is a 2 GiB frame, not a negative one", () => {
    const error = new FrameDecoder().push(Buffer.from([0x80, 0, 0, 0]), [])
    assert.strictEqual(error instanceof FrameTooLarge ? error.size : undefined, 0x8000_0000)
    const max = new FrameDecoder().push(Buffer.from([0xff, 0xff, 0xff, 0xff]), [])
    assert.strictEqual(max instanceof FrameTooLarge ? max.size : undefined, 0xffff_ffff)
  })

  it("a length prefix split across chunks is read unsigned too, and the decoder starts the next prefix afresh", () => {
    const decoder = new FrameDecoder(0xffff_ffff)
    const frames: Array<string> = []
    assert.isUndefined(decoder.push(Buffer.from([0, 0]), frames))
    assert.isUndefined(decoder.push(Buffer.from([0, 2, 0x68]), frames))
    assert.isUndefined(decoder.push(Buffer.from([0x69, 0]), frames))
    assert.deepStrictEqual(frames, ["hi"])
    assert.strictEqual(decoder.buffered, 1)
    const error = new FrameDecoder().push(Buffer.from([0x80]), [])
    assert.isUndefined(error)
    const split = new FrameDecoder()
    split.push(Buffer.from([0xff, 0xff]), [])
    split.push(Buffer.from([0xff]), [])
    const tooLarge = split.push(Buffer.from([0xff]), [])
    assert.strictEqual(tooLarge instanceof FrameTooLarge ? tooLarge.size : undefined, 0xffff_ffff)
  })

  it("frames before an oversize header in the same chunk are still emitted; the decoder then stays failed", () => {
    fc.assert(
      fc.property(payloadTexts, cutPoints, (texts, cuts) => {
        const decoder = new FrameDecoder()
        const bytes = Buffer.concat([encodeFrames(texts), header(MAX_FRAME_BYTES + 1), Buffer.from("{}")])
        const { out, error } = feed(decoder, splitAt(bytes, cuts))
        assert.instanceOf(error, FrameTooLarge)
        assert.deepStrictEqual(out, texts)
        const later: Array<string> = []
        assert.instanceOf(decoder.push(encodeFrame("{}"), later), FrameTooLarge)
        assert.deepStrictEqual(later, [])
      }),
      { numRuns: 100 }
    )
  })

  it("honours a custom limit", () => {
    const decoder = new FrameDecoder(10)
    const out: Array<string> = []
    assert.isUndefined(decoder.push(encodeFrame("0123456789"), out))
    assert.deepStrictEqual(out, ["0123456789"])
    const error = decoder.push(header(11), out)
    assert.strictEqual(error instanceof FrameTooLarge ? error.limit : undefined, 10)
  })

  it("a payload that is not valid UTF-8 fails the decoder, whole or split; frames before it are emitted", () => {
    fc.assert(
      fc.property(payloadTexts, cutPoints, fc.constantFrom([0xff], [0xc3], [0xed, 0xa0, 0x80], [0xe2, 0x28, 0xa1]), (texts, cuts, bad) => {
        const decoder = new FrameDecoder()
        const invalid = Buffer.concat([Buffer.from('{"type":"x","v":"'), Buffer.from(bad), Buffer.from('"}')])
        const lengthPrefix = Buffer.alloc(4)
        lengthPrefix.writeUInt32BE(invalid.length)
        const bytes = Buffer.concat([encodeFrames(texts), lengthPrefix, invalid, encodeFrame("{}")])
        const { out, error } = feed(decoder, splitAt(bytes, cuts))
        assert.instanceOf(error, InvalidUtf8)
        assert.deepStrictEqual(out, texts)
      }),
      { numRuns: 100 }
    )
  })

  it("property: a whole payload in one chunk is accepted exactly when its bytes are valid UTF-8 (isUtf8)", () => {
    const pieces = fc.constantFrom(
      [0x41], [0xc3, 0xa9], [0xe2, 0x82, 0xac], [0xf0, 0x9f, 0x98, 0x80], [0xef, 0xbf, 0xbd], // valid, U+FFFD included
      [0x80], [0xbf], [0xc0, 0x80], [0xc1, 0xbf], [0xc3], [0xe2, 0x82], [0xe0, 0x80, 0x80], // invalid
      [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xfe], [0xff]
    )
    const payloads = fc.oneof(
      fc.uint8Array({ maxLength: 24 }),
      fc.array(pieces, { maxLength: 8 }).map((parts) => Uint8Array.from(parts.flat()))
    )
    fc.assert(
      fc.property(payloads, (payload) => {
        const lengthPrefix = Buffer.alloc(4)
        lengthPrefix.writeUInt32BE(payload.length)
        const out: Array<string> = []
        const error = new FrameDecoder().push(Buffer.concat([lengthPrefix, payload]), out)
        if (isUtf8(payload)) {
          assert.isUndefined(error)
          assert.deepStrictEqual(out, [Buffer.from(payload).toString("utf8")])
        } else {
          assert.instanceOf(error, InvalidUtf8)
          assert.deepStrictEqual(out, [])
        }
      }),
      { numRuns: 2_000 }
    )
  })

  it("a payload that carries U+FFFD itself (valid UTF-8) is a frame, not an error", () => {
    const out: Array<string> = []
    assert.isUndefined(new FrameDecoder().push(encodeFrame('{"type":"x","v":"\uFFFD"}'), out))
    assert.deepStrictEqual(out, ['{"type":"x","v":"\uFFFD"}'])
  })
})

describe("decodeFrames Stream transform", () => {
  const collect = (chunks: ReadonlyArray<Uint8Array>) =>
    Effect.runSync(Stream.runCollect(decodeFrames()(Stream.fromIterable(chunks))))

  it("any chunking of the byte stream yields exactly the frames", () => {
    fc.assert(
      fc.property(payloadTexts, cutPoints, (texts, cuts) => {
        assert.deepStrictEqual(collect(splitAt(encodeFrames(texts), cuts)), texts)
      }),
      { numRuns: 200 }
    )
  })

  it("fails with FrameTooLarge after emitting every complete frame that preceded the oversize header", () => {
    fc.assert(
      fc.property(payloadTexts, cutPoints, (texts, cuts) => {
        const bytes = Buffer.concat([encodeFrames(texts), header(MAX_FRAME_BYTES + 1)])
        const emitted: Array<string> = []
        const exit = Effect.runSyncExit(
          Stream.runForEach(decodeFrames()(Stream.fromIterable(splitAt(bytes, cuts))), (text) =>
            Effect.sync(() => {
              emitted.push(text)
            }))
        )
        assert.isTrue(Exit.isFailure(exit))
        if (Exit.isFailure(exit)) {
          const error = Cause.squash(exit.cause)
          assert.instanceOf(error, FrameTooLarge)
        }
        assert.deepStrictEqual(emitted, texts)
      }),
      { numRuns: 200 }
    )
  })

  it.effect("fails on the header alone, without waiting for the payload or the end of input", () =>
    Effect.gen(function*() {
      const bytes = Stream.concat(Stream.make<[Uint8Array]>(header(MAX_FRAME_BYTES + 1)), Stream.never)
      const error = yield* Effect.flip(Stream.runCollect(decodeFrames()(bytes)))
      assert.instanceOf(error, FrameTooLarge)
      assert.strictEqual(error instanceof FrameTooLarge ? error.size : -1, MAX_FRAME_BYTES + 1)
    }))

  it.effect("passes an upstream failure through unchanged", () =>
    Effect.gen(function*() {
      const bytes = Stream.concat(Stream.make<[Uint8Array]>(encodeFrame("a")), Stream.fail("upstream" as const))
      const emitted: Array<string> = []
      const error = yield* Effect.flip(
        Stream.runForEach(decodeFrames()(bytes), (text) => Effect.sync(() => emitted.push(text)))
      )
      assert.strictEqual(error, "upstream")
      assert.deepStrictEqual(emitted, ["a"])
    }))

  it("each run gets its own decoder state (a reused transform starts clean)", () => {
    const transform = decodeFrames()
    const bytes = encodeFrame("{}")
    // A partial frame in the first run must not leak into the second.
    const first = Effect.runSync(Stream.runCollect(transform(Stream.make<[Uint8Array]>(bytes.subarray(0, 3)))))
    const second = Effect.runSync(Stream.runCollect(transform(Stream.make<[Uint8Array]>(bytes))))
    assert.deepStrictEqual(first, [])
    assert.deepStrictEqual(second, ["{}"])
  })
})

describe("encodeFramesInto", () => {
  /** Texts with multi-byte characters, astral ones and lone surrogates (which UTF-8 encodes as U+FFFD). */
  const texts = fc.array(
    fc.oneof(
      fc.string({ unit: "binary" }),
      fc.string({ unit: fc.constantFrom("a", "é", "€", "😀", "\ud800", "\udfff") })
    ),
    { maxLength: 12 }
  )

  it("property: frames exactly as encodeFrames does, through one reused scratch buffer", () => {
    const scratch = new FrameScratch()
    fc.assert(
      fc.property(texts, (batch) => {
        assert.isTrue(encodeFramesInto(batch, scratch).equals(encodeFrames(batch)))
      }),
      { numRuns: 500 }
    )
  })

  it("reuses the scratch buffer until it is lent to a socket, then takes a new one", () => {
    const scratch = new FrameScratch()
    const first = encodeFramesInto(["one"], scratch)
    const second = encodeFramesInto(["two"], scratch)
    assert.strictEqual(first.buffer, second.buffer)
    scratch.lent()
    const third = encodeFramesInto(["three"], scratch)
    assert.notStrictEqual(third.buffer, second.buffer)
    assert.strictEqual(second.subarray(4).toString(), "two")
  })

  it("a batch too large for the scratch buffer gets its own buffer", () => {
    const scratch = new FrameScratch()
    const small = encodeFramesInto(["x"], scratch)
    const large = encodeFramesInto(["y".repeat(200_000)], scratch)
    assert.notStrictEqual(large.buffer, small.buffer)
    assert.isTrue(large.equals(encodeFrames(["y".repeat(200_000)])))
    assert.strictEqual(encodeFramesInto(["z"], scratch).buffer, small.buffer)
  })

  /** A frame in parts, each piece written with `Buffer.write`, as the broker's frames are (frameParts.ts). */
  const inPieces = (pieces: ReadonlyArray<string>): FrameParts => ({
    length: pieces.reduce((sum, piece) => sum + piece.length, 0),
    writeUtf8: (out, offset) => {
      let at = offset
      for (const piece of pieces) at += out.write(piece, at, "utf8")
      return at - offset
    },
    text: () => pieces.join("")
  })

  it("property: a frame in parts is framed as its text is, among texts, through the reused scratch buffer", () => {
    const scratch = new FrameScratch()
    // Pieces of valid text (lone surrogates would encode differently split than joined).
    const piece = fc.string({ unit: fc.constantFrom("a", "é", "€", "😀", "{", "\"", "\u0000") })
    const frame = fc.oneof(piece, fc.array(piece, { maxLength: 6 }).map(inPieces))
    fc.assert(
      fc.property(fc.array(frame, { maxLength: 12 }), (batch) => {
        const texts = batch.map((item) => typeof item === "string" ? item : item.text())
        assert.isTrue(encodeFramesInto(batch, scratch).equals(encodeFrames(texts)))
        assert.isTrue(encodeFrames(batch).equals(encodeFrames(texts)))
        for (const item of batch) assert.strictEqual(frameBytes(item), Buffer.byteLength(typeof item === "string" ? item : item.text()))
      }),
      { numRuns: 500 }
    )
  })
})
