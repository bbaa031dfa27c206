/**
 * `decodeReceivedCount` reads a `received` frame's count with a fast path for
 * the common shape (src/protocol/decode.ts); it must accept exactly what the
 * `ReceivedFrame` schema accepts, with the same count, and leave every failure
 * to the schema, so the error message stays the schema's.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { decodeClientFrame, decodeReceivedCount, isFrameDecodeError } from "../../src/protocol/decode.ts"

/** A result as comparable text: the count, or the error's message. */
const shown = (result: unknown): string =>
  isFrameDecodeError(result) ? `error: ${result.message}` : `ok: ${String(result)}`

const bySchema = (input: unknown): string => {
  const frame = decodeClientFrame.received(input)
  return shown(isFrameDecodeError(frame) ? frame : frame.frames)
}

const count = fc.oneof(
  { weight: 6, arbitrary: fc.nat() },
  {
    weight: 3,
    arbitrary: fc.oneof(
      fc.integer(),
      fc.double(),
      fc.constantFrom(-0, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 1, 2 ** 60, Number.NaN, Number.POSITIVE_INFINITY)
    )
  },
  { weight: 1, arbitrary: fc.oneof(fc.jsonValue(), fc.constant(undefined)) }
)

const frame = fc.oneof(
  { weight: 8, arbitrary: fc.record({ type: fc.constant("received"), frames: count }) },
  {
    weight: 1,
    arbitrary: fc.record({ type: fc.constant("received"), frames: count, extra: fc.jsonValue() }, { requiredKeys: ["type"] })
  },
  { weight: 1, arbitrary: fc.oneof(fc.jsonValue(), fc.record({ type: fc.string(), frames: fc.nat() })) }
)

describe("decodeReceivedCount", () => {
  it("property: returns what the ReceivedFrame schema returns (the count, or the same error)", () => {
    fc.assert(fc.property(frame, (input) => assert.strictEqual(shown(decodeReceivedCount(input)), bySchema(input))), {
      numRuns: 5_000
    })
  })

  it("reads the count of a plain frame, and names the field of a negative one", () => {
    assert.strictEqual(decodeReceivedCount({ type: "received", frames: 42 }), 42)
    const error = decodeReceivedCount({ type: "received", frames: -1 })
    assert.isTrue(isFrameDecodeError(error))
    assert.include(isFrameDecodeError(error) ? error.message : "", "frames")
  })
})
