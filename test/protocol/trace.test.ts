/**
 * The `traceparent` codec (`trace-v1`): every valid trace context survives
 * format → parse unchanged, and strings that are not a version-00
 * traceparent (wrong version, length, case, separators, all-zero ids) parse
 * to nothing — the broker then ignores them.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { formatTraceparent, parseTraceparent, TRACEPARENT_LENGTH } from "../../src/protocol/trace.ts"

const hex = (length: number) =>
  fc.string({ unit: fc.constantFrom(..."0123456789abcdef"), minLength: length, maxLength: length })
    .filter((id) => /[1-9a-f]/.test(id))

describe("traceparent", () => {
  it("format then parse gives back the same context", () => {
    fc.assert(fc.property(hex(32), hex(16), fc.boolean(), (traceId, spanId, sampled) => {
      const text = formatTraceparent({ traceId, spanId, sampled })
      assert.strictEqual(text.length, TRACEPARENT_LENGTH)
      assert.deepStrictEqual(parseTraceparent(text), { traceId, spanId, sampled })
    }))
  })

  it("anything else is not a traceparent", () => {
    const valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    assert.isDefined(parseTraceparent(valid))
    for (
      const bad of [
        valid.toUpperCase(),
        `01${valid.slice(2)}`,
        valid.replaceAll("-", "_"),
        `${valid}0`,
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "",
        42,
        undefined
      ]
    ) assert.isUndefined(parseTraceparent(bad), String(bad))
    // Random text is (almost) never one; whatever parses keeps its ids verbatim.
    fc.assert(fc.property(fc.string(), (text) => {
      const parsed = parseTraceparent(text)
      if (parsed !== undefined) assert.strictEqual(text.slice(0, 53), `00-${parsed.traceId}-${parsed.spanId}`)
    }))
  })

  it("the sampled flag is the low bit of the flags", () => {
    assert.strictEqual(parseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")?.sampled, false)
    assert.strictEqual(parseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03")?.sampled, true)
  })
})
