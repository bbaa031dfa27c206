/**
 * A number kept as two small integers (SplitNumber.ts): read back exactly,
 * and, for the numbers the broker keeps this way (times, 53-bit hashes),
 * both halves small integers.
 */
import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { highOf, joined, lowOf } from "../../src/broker/SplitNumber.ts"

const roundTrip = (n: number): number => {
  const high = highOf(n)
  return joined(high, lowOf(n, high))
}

/** Within V8's smallest small-integer range (31 bits, signed). */
const isSmall = (n: number): boolean => Number.isInteger(n) && n >= -(2 ** 30) && n < 2 ** 30 && !Object.is(n, -0)

describe("SplitNumber", () => {
  it("property: any number reads back as itself (NaN, infinities, fractions and unsafe integers included)", () => {
    fc.assert(fc.property(fc.double(), (n) => {
      expect(roundTrip(n)).toBe(n)
    }), { numRuns: 2_000 })
    for (const n of [Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, 2 ** 53, -(2 ** 60), 1e300, -0, 0, Infinity, -Infinity, Number.NaN]) {
      expect(roundTrip(n)).toBe(n)
    }
  })

  it("property: every safe integer splits into two small integers", () => {
    fc.assert(fc.property(fc.oneof(fc.maxSafeInteger(), fc.integer({ min: 0, max: 2 ** 45 }), fc.maxSafeNat()), (n) => {
      const high = highOf(n)
      const low = lowOf(n, high)
      expect(isSmall(high)).toBe(true)
      expect(isSmall(low)).toBe(true)
      // Kept whole (low −1) only where the number is its own high half (0 and −1).
      expect(low === -1 ? high === n : low >= 0 && low < 2 ** 27).toBe(true)
    }), { numRuns: 2_000 })
  })
})
