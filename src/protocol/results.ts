/**
 * The result archive (extension `results-v1`, C-WKR-11…14): the wire shapes
 * of its frames, the `result:<UUID>` address (C-WKR-2), the page limits and
 * the checks every side shares, so a bad offset, limit or ref is refused with
 * the same words by the client, the broker and the archive itself.
 *
 * Paging (C-WKR-13, open question 15) counts zero-based UTF-16 code units:
 * the start is inclusive, the end exclusive, `total` is the length of the
 * stored body, `nextOffset` appears while text remains, and a page never ends
 * between the two halves of a surrogate pair (the end moves back one unit).
 */
import { Schema } from "effect"
import * as Limits from "./limits.ts"

/** The prefix of an archived result's address (C-WKR-2). */
export const RESULT_REF_PREFIX = "result:"

/** Units one page carries unless asked otherwise. */
export const DEFAULT_PAGE_LIMIT = 20_000
/** The most units one page carries: a page of them fits a frame whatever they are (6 bytes each at worst). */
export const MAX_PAGE_LIMIT = 100_000
/** The least units one page carries: two, so that a page always moves past a surrogate pair. */
export const MIN_PAGE_LIMIT = 2

/** Reports one listing page carries unless asked otherwise. */
export const DEFAULT_LIST_LIMIT = 20
/** The most reports one listing page carries: fifty of the largest summaries still fit a frame. */
export const MAX_LIST_LIMIT = 50

/** The longest `title` of a report, in UTF-16 units. */
export const MAX_TITLE_LENGTH = 1024

const isHigh = (unit: number): boolean => unit >= 0xd800 && unit <= 0xdbff
const isLow = (unit: number): boolean => unit >= 0xdc00 && unit <= 0xdfff

/**
 * Where a cut of `text` that wants to end at `end` does end: `end`, or one
 * unit earlier when `end` falls between a high and a low surrogate.
 *
 * @example
 * ```ts
 * import { safeEnd } from "effect-intercom/protocol"
 *
 * safeEnd("a😀b", 2) // 1: "a😀b".slice(0, 2) would split the emoji
 * ```
 */
export const safeEnd = (text: string, end: number): number =>
  end > 0 && end < text.length && isHigh(text.charCodeAt(end - 1)) && isLow(text.charCodeAt(end)) ? end - 1 : end

const RESULT_REF = /^result:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/**
 * Why `ref` is not an archived result's address, or undefined when it is
 * (C-WKR-2: a run handle or a session is never one).
 *
 * @example
 * ```ts
 * import { checkResultRef } from "effect-intercom/protocol"
 *
 * checkResultRef("result:0b7c2a4e-6f1d-4c3b-9a8e-2d5f7e1c3b9a") // undefined
 * checkResultRef("run-3") // "\"run-3\" is not a stored result's address: …"
 * ```
 */
export const checkResultRef = (ref: string): string | undefined =>
  RESULT_REF.test(ref)
    ? undefined
    : `"${ref.length > 80 ? `${ref.slice(0, 80)}…` : ref}" is not a stored result's address: an archived result is ` +
      `named "result:<UUID>" (see the list of results); a run handle or a session name is not one`

const wholeIn = (what: string, value: number, min: number, max: number): string | undefined =>
  Number.isInteger(value) && value >= min && value <= max
    ? undefined
    : `${what} must be a whole number from ${min} to ${max}, got ${value}`

/** Why `offset` (zero-based UTF-16 units) cannot start a page, or undefined when it can. */
export const checkPageOffset = (offset: number): string | undefined =>
  wholeIn("offset", offset, 0, Number.MAX_SAFE_INTEGER)

/** Why `limit` (UTF-16 units) cannot size a page, or undefined when it can. */
export const checkPageLimit = (limit: number): string | undefined => wholeIn("limit", limit, MIN_PAGE_LIMIT, MAX_PAGE_LIMIT)

/** Why `offset` cannot start a listing page, or undefined when it can. */
export const checkListOffset = (offset: number): string | undefined => wholeIn("offset", offset, 0, Number.MAX_SAFE_INTEGER)

/** Why `limit` cannot size a listing page, or undefined when it can. */
export const checkListLimit = (limit: number): string | undefined => wholeIn("limit", limit, 1, MAX_LIST_LIMIT)

const RequestId = Schema.String.check(Schema.isMaxLength(Limits.MAX_ID_LENGTH))
const Label = Schema.String.check(Schema.isMaxLength(Limits.MAX_ID_LENGTH))

// --- client → broker --------------------------------------------------------

/**
 * `result_store`: archive `body` (a terminal report of delegated work), with
 * optional `title`, `run` (the run handle) and `child` (the worker's name).
 */
export const ResultStoreFrame = Schema.Struct({
  type: Schema.tag("result_store"),
  requestId: RequestId,
  body: Schema.String,
  /** The report's length when `body` is a cut of it (the client cut it to fit one frame). */
  originalLength: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))),
  title: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(MAX_TITLE_LENGTH))),
  run: Schema.optionalKey(Label),
  child: Schema.optionalKey(Label)
})
/** A `result_store` frame. */
export type ResultStoreFrame = typeof ResultStoreFrame.Type

/** `result_list`: the reports this session may read, newest first. */
export const ResultListFrame = Schema.Struct({
  type: Schema.tag("result_list"),
  requestId: RequestId,
  offset: Schema.optionalKey(Schema.Number),
  limit: Schema.optionalKey(Schema.Number)
})
/** A `result_list` frame. */
export type ResultListFrame = typeof ResultListFrame.Type

/** `result_read`: one page of a stored report. */
export const ResultReadFrame = Schema.Struct({
  type: Schema.tag("result_read"),
  requestId: RequestId,
  ref: Schema.String.check(Schema.isMaxLength(Limits.MAX_ID_LENGTH)),
  offset: Schema.optionalKey(Schema.Number),
  limit: Schema.optionalKey(Schema.Number)
})
/** A `result_read` frame. */
export type ResultReadFrame = typeof ResultReadFrame.Type

// --- broker → client --------------------------------------------------------

/** Who stored a report: its session id, and its name when it had one. */
export const ResultAuthor = Schema.Struct({ id: Schema.String, name: Schema.optionalKey(Schema.String) })
/** A report's author. */
export type ResultAuthor = typeof ResultAuthor.Type

/**
 * A stored report without its body. `total` is the stored body's length in
 * UTF-16 units; `originalLength` the report's before retention cut it, and
 * `truncated` whether it did (C-WKR-12, C-WKR-14).
 */
export const ResultSummary = Schema.Struct({
  ref: Schema.String,
  from: ResultAuthor,
  group: Schema.String,
  title: Schema.optionalKey(Schema.String),
  run: Schema.optionalKey(Schema.String),
  child: Schema.optionalKey(Schema.String),
  createdAt: Schema.Finite,
  total: Schema.Int,
  originalLength: Schema.Int,
  truncated: Schema.Boolean
})
/** A report's summary. */
export type ResultSummary = typeof ResultSummary.Type

/** `result_stored`: the receipt (C-WKR-12): durable or memory-only, and whether retention cut the report. */
export const ResultStoredFrame = Schema.Struct({
  type: Schema.tag("result_stored"),
  requestId: Schema.String,
  ref: Schema.String,
  durable: Schema.Boolean,
  truncated: Schema.Boolean,
  total: Schema.Int,
  originalLength: Schema.Int
})
/** A `result_stored` frame. */
export type ResultStoredFrame = typeof ResultStoredFrame.Type

/** `result_listed`: one page of summaries, newest first; `nextOffset` while more remain. */
export const ResultListedFrame = Schema.Struct({
  type: Schema.tag("result_listed"),
  requestId: Schema.String,
  durable: Schema.Boolean,
  results: Schema.Array(ResultSummary),
  total: Schema.Int,
  nextOffset: Schema.optionalKey(Schema.Int)
})
/** A `result_listed` frame. */
export type ResultListedFrame = typeof ResultListedFrame.Type

/** `result_page`: units `[offset, offset + text.length)` of the stored body (C-WKR-13). */
export const ResultPageFrame = Schema.Struct({
  type: Schema.tag("result_page"),
  requestId: Schema.String,
  durable: Schema.Boolean,
  result: ResultSummary,
  offset: Schema.Int,
  text: Schema.String,
  nextOffset: Schema.optionalKey(Schema.Int)
})
/** A `result_page` frame. */
export type ResultPageFrame = typeof ResultPageFrame.Type

/** `result_failed`: a result request was refused, with why and what to do; nothing was stored. */
export const ResultFailedFrame = Schema.Struct({ type: Schema.tag("result_failed"), requestId: Schema.String, reason: Schema.String })
/** A `result_failed` frame. */
export type ResultFailedFrame = typeof ResultFailedFrame.Type
