/**
 * Canonical decimal integers: the only form in which this package writes a
 * number into a runtime file (`broker.pid`, the spawn lock) or accepts one
 * where a program, not a person, wrote it — digits only, no sign, no leading
 * zero, no surrounding space, a safe integer. `"12a"`, `" 12"`, `"012"`,
 * `"1e3"` and `"0x10"` are not numbers here.
 *
 * Imports nothing, so the `intercom` fast path (cli/argv.ts) can use it
 * without loading anything else.
 */

const CANONICAL = /^(?:0|[1-9][0-9]*)$/

/**
 * `text` as a non-negative integer if it is written canonically, else
 * `undefined`.
 *
 * @example
 * parseCanonicalInt("1700000000000") // 1700000000000
 * parseCanonicalInt("0")             // 0
 * parseCanonicalInt("012")           // undefined
 */
export const parseCanonicalInt = (text: string): number | undefined => {
  if (!CANONICAL.test(text)) return undefined
  const value = Number(text)
  return Number.isSafeInteger(value) ? value : undefined
}

/** `text` as a positive integer if it is written canonically (see `parseCanonicalInt`), else `undefined`. */
export const parsePositiveDecimal = (text: string): number | undefined => {
  const value = parseCanonicalInt(text)
  return value !== undefined && value > 0 ? value : undefined
}
