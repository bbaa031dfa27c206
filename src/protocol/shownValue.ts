/**
 * How a refusal quotes a value a client sent: short, and never by walking it.
 *
 * Why: refusal texts name the value that was wrong (`Invalid delivery "fast"`),
 * and the value comes straight off the wire, unchecked. `String(value)` on a
 * nested array recurses once per level — a 1 MiB frame of `[[[…]]]` exceeds
 * the call stack and, thrown inside the broker's synchronous frame handler,
 * ended the process — and a long string echoed whole makes the answer bigger
 * than the frame limit, so the broker could not send it. `shownValue` looks
 * at the value's type only and cuts strings to `MAX_SHOWN_LENGTH`.
 */

/** The longest part of a string a refusal text quotes; the rest is replaced by `…`. */
export const MAX_SHOWN_LENGTH = 80

/**
 * A value from the wire as a refusal text shows it: a string quoted and cut
 * to `MAX_SHOWN_LENGTH` units (as it is: a log line or a frame escapes
 * what needs escaping), a number, boolean or null as written, and an
 * array or object by its kind alone (its contents are never walked).
 *
 * @example
 * ```ts
 * import { shownValue } from "effect-intercom/protocol"
 *
 * shownValue("fast") // "\"fast\""
 * shownValue(-1) // "-1"
 * shownValue([[1]]) // "an array"
 * shownValue("x".repeat(1000)) // the first 80 x's, quoted, then "…"
 * ```
 *
 * @category validation
 * @since 0.1.0
 */
export const shownValue = (value: unknown): string => {
  switch (typeof value) {
    case "string":
      return `"${value.length > MAX_SHOWN_LENGTH ? `${value.slice(0, MAX_SHOWN_LENGTH)}…` : value}"`
    case "number":
    case "boolean":
    case "undefined":
      return String(value)
    case "object":
      return value === null ? "null" : Array.isArray(value) ? "an array" : "an object"
    default:
      return `a ${typeof value}`
  }
}
