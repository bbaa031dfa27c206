/** Canonical decimal integers: the one number format of runtime files and the fast-path argv. */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { parseCanonicalInt, parsePositiveDecimal } from "../../src/config/decimal.ts"

/** Strings made mostly of characters that a lenient parser would read as (part of) a number. */
const numberish = fc.string({
  unit: fc.constantFrom("0", "1", "2", "9", "-", "+", " ", "\t", "\n", ".", "e", "x", "a", "_", "١"),
  maxLength: 20
})

describe("parseCanonicalInt", () => {
  it("reads back every non-negative safe integer as written", () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), (n) => {
      assert.strictEqual(parseCanonicalInt(String(n)), n)
    }))
  })

  it("accepts a string only when it is exactly how its value is written", () => {
    fc.assert(fc.property(fc.oneof(numberish, fc.string()), (text) => {
      const value = parseCanonicalInt(text)
      if (value !== undefined) assert.strictEqual(String(value), text)
    }))
  })

  it("rejects signs, leading zeros, spaces, fractions, exponents, hex, and integers past 2^53 - 1", () => {
    for (const text of ["", "-1", "+1", "-0", "01", "00", " 1", "1 ", "1\n", "1.0", "1e3", "0x10", "12a", "9007199254740992"]) {
      assert.isUndefined(parseCanonicalInt(text), JSON.stringify(text))
    }
    assert.strictEqual(parseCanonicalInt("9007199254740991"), Number.MAX_SAFE_INTEGER)
  })
})

describe("parsePositiveDecimal", () => {
  it("is parseCanonicalInt without zero", () => {
    fc.assert(fc.property(fc.oneof(numberish, fc.nat().map(String)), (text) => {
      const canonical = parseCanonicalInt(text)
      assert.strictEqual(parsePositiveDecimal(text), canonical === 0 ? undefined : canonical)
    }))
    assert.isUndefined(parsePositiveDecimal("0"))
    assert.strictEqual(parsePositiveDecimal("1"), 1)
  })
})
