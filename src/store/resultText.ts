/**
 * The text arithmetic of the result archive, shared by its memory and SQLite
 * layers: cutting a report at the retention ceiling and cutting one page out
 * of a stored body (C-WKR-13, C-WKR-14, open question 15). Offsets and
 * lengths are UTF-16 code units; neither cut ever ends between the two halves
 * of a surrogate pair — the end moves back one unit instead.
 */
import { safeEnd } from "../protocol/results.ts"

/** A report as kept: the retained body, and how long the original was. */
export interface Retained {
  readonly body: string
  readonly originalLength: number
  readonly truncated: boolean
}

/**
 * `body` cut at `maxChars` UTF-16 units (the retention ceiling); what is cut
 * off is gone for good (C-WKR-14). `originalLength` is the report's length
 * when `body` is already a cut of it (a client cut it to fit one frame).
 */
export const retain = (body: string, maxChars: number, originalLength = body.length): Retained => {
  const original = Math.max(originalLength, body.length)
  const kept = body.length <= maxChars ? body : body.slice(0, safeEnd(body, maxChars))
  return { body: kept, originalLength: original, truncated: original > kept.length }
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
