/**
 * The text arithmetic of the result archive, shared by its memory and SQLite
 * layers: cutting a report at the retention ceiling and cutting one page out
 * of a stored body (C-WKR-13, C-WKR-14, open question 15). Offsets and
 * lengths are UTF-16 code units; neither cut ever ends between the two halves
 * of a surrogate pair — the end moves back one unit instead.
 */

const isHigh = (unit: number): boolean => unit >= 0xd800 && unit <= 0xdbff
const isLow = (unit: number): boolean => unit >= 0xdc00 && unit <= 0xdfff

/**
 * Where a cut of `text` that wants to end at `end` does end: `end`, or one
 * unit earlier when `end` falls between a high and a low surrogate.
 *
 * @example
 * ```ts
 * safeEnd("a😀b", 2) // 1: "a😀b".slice(0, 2) would split the emoji
 * ```
 */
export const safeEnd = (text: string, end: number): number =>
  end > 0 && end < text.length && isHigh(text.charCodeAt(end - 1)) && isLow(text.charCodeAt(end)) ? end - 1 : end

/** A report as kept: the retained body, and how long the original was. */
export interface Retained {
  readonly body: string
  readonly originalLength: number
  readonly truncated: boolean
}

/**
 * `body` cut at `maxChars` UTF-16 units (the retention ceiling); what is cut
 * off is gone for good (C-WKR-14).
 */
export const retain = (body: string, maxChars: number): Retained => {
  if (body.length <= maxChars) return { body, originalLength: body.length, truncated: false }
  return { body: body.slice(0, safeEnd(body, maxChars)), originalLength: body.length, truncated: true }
}

/** One page of a body: its text, and where the next page starts while text remains. */
export interface PageCut {
  readonly text: string
  readonly nextOffset: number | undefined
}

/**
 * The page of `body` from `offset` (inclusive) of at most `limit` units,
 * given a checked `offset ≤ body.length` and `limit ≥ 2`. `window` may be only
 * the part of the body that starts at `offset` and is at least `limit + 1`
 * units long (or runs to the end): that is all the cut looks at, so a store
 * can read just that much.
 */
export const cutPage = (window: string, offset: number, limit: number, total: number): PageCut => {
  const wanted = Math.min(limit, total - offset)
  const end = offset + wanted < total ? safeEnd(window, wanted) : wanted
  const next = offset + end
  return { text: window.slice(0, end), nextOffset: next < total ? next : undefined }
}
