/**
 * `shownValue` names a wire value in a refusal: bounded, and without walking
 * it (a nested array's `String()` overflowed the stack, and ended the broker).
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { MAX_SHOWN_LENGTH, shownValue } from "../../src/protocol/shownValue.ts"

describe("shownValue", () => {
  it("names any JSON value in at most MAX_SHOWN_LENGTH units plus quotes and an ellipsis", () => {
    fc.assert(fc.property(fc.jsonValue(), (value) => {
      assert.isAtMost(shownValue(value).length, MAX_SHOWN_LENGTH + 3)
    }))
  })

  it("quotes a short string whole and cuts a long one", () => {
    assert.strictEqual(shownValue("fast"), `"fast"`)
    assert.strictEqual(shownValue("y".repeat(MAX_SHOWN_LENGTH + 1)), `"${"y".repeat(MAX_SHOWN_LENGTH)}…"`)
  })

  it("writes numbers, booleans and null as they are, and arrays and objects by kind", () => {
    assert.deepStrictEqual(
      [shownValue(-1), shownValue(true), shownValue(null), shownValue([1]), shownValue({ a: 1 })],
      ["-1", "true", "null", "an array", "an object"]
    )
  })

  it("names an array nested 400,000 deep without walking it", () => {
    const nested: unknown = JSON.parse(`${"[".repeat(400_000)}1${"]".repeat(400_000)}`)
    assert.throws(() => String(nested), RangeError)
    assert.strictEqual(shownValue(nested), "an array")
  })
})
