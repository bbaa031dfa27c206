/**
 * A number kept as two small integers, for the fields of an object kept by
 * the hundred thousand. V8 on 64-bit Node (no pointer compression) stores a
 * field that ever held a number outside the small-integer range as a pointer
 * to a heap number of its own: 16 more bytes and one more object per field,
 * allocated with the object and traced, copied and promoted with it. A broker
 * time (about 1.8 × 10¹² ms) and a 53-bit text hash are such numbers; split
 * at 2²⁷, each half of a safe integer is a small integer (within V8's 31-bit
 * small integers too). See docs/performance.md, "Per-message CPU, eleventh
 * stop".
 *
 * Exact for every number: `joined(highOf(n), lowOf(n, highOf(n)))` is `n`.
 * A number that is not a safe integer (a fraction, an infinity, NaN, −0) is
 * kept whole in the high half, with the low half −1 to say so: it keeps its
 * value, only not as two small integers (0 and −1, their own high halves,
 * are kept whole too, still small integers).
 *
 * Owner: none (pure functions).
 */

/**
 * Where a number is split: the low half of a safe integer is in [0, 2²⁷), its
 * high half in [−2²⁶, 2²⁶]. Both are made 32-bit integers (`| 0`, exact in
 * those ranges): optimized code stores a computed double as a heap number even
 * when its value is a small integer, and an int32 as a small integer.
 */
const SPLIT = 134_217_728

/** The low half of a number kept whole in its high half. */
const WHOLE = -1

/** Whether `n` is split in two: a safe integer, not −0. */
const splits = (n: number): boolean => Number.isSafeInteger(n) && !Object.is(n, -0)

/** The high half of `n`: `Math.floor(n / 2²⁷)`, or `n` itself when it is not split. */
export const highOf = (n: number): number => splits(n) ? Math.floor(n / SPLIT) | 0 : n

/**
 * The low half of `n` given its high half: in [0, 2²⁷), or −1 when `n` is
 * kept whole — not split, or its own high half (0 and −1, read back the same
 * either way): no second test of `n`.
 */
export const lowOf = (n: number, high: number): number => high === n ? WHOLE : (n - high * SPLIT) | 0

/** The number whose halves are `high` and `low`. */
export const joined = (high: number, low: number): number => low === WHOLE ? high : high * SPLIT + low
