/**
 * A client's side of the result archive (`results-v1`, C-WKR-11…14):
 * storing a terminal report, listing the reports this session may read, and
 * reading one page. Input is checked here first, with the same words the
 * broker uses, so a bad ref, offset or limit is refused before anything is
 * sent.
 *
 * A report travels in one frame. One too large for it (over about 1 MiB of
 * JSON) is cut here to fit — never between the halves of a surrogate pair —
 * and sent with its `originalLength`, so the archive's receipt says it was
 * truncated exactly as when its own retention ceiling cuts it (C-WKR-12).
 */
import { Effect } from "effect"
import { MAX_FRAME_BYTES } from "../protocol/constants.ts"
import { MAX_ID_LENGTH } from "../protocol/limits.ts"
import {
  checkListLimit,
  checkListOffset,
  checkPageLimit,
  checkPageOffset,
  checkResultRef,
  MAX_TITLE_LENGTH,
  type ResultSummary,
  safeEnd
} from "../protocol/results.ts"
import type { ClientConnection } from "./ClientConnection.ts"
import { ResultRefused, type ResultsUnavailable } from "./errors.ts"
import type { ResultAnswer, ResultRequestError } from "./ResultRequests.ts"

/** A report to store: its text, and optionally what it is about. */
export interface StoreResultRequest {
  /** The report (a child's final report, a workflow's outcome). */
  readonly body: string
  /** A one-line title, at most 1,024 characters. */
  readonly title?: string | undefined
  /** The run handle it reports on (e.g. `run-3`). */
  readonly run?: string | undefined
  /** The worker's name. */
  readonly child?: string | undefined
}

/** The receipt of a stored report (C-WKR-12). */
export interface StoredResult {
  /** Its address, `result:<UUID>` (C-WKR-2). */
  readonly ref: string
  /** Kept in the broker's database (true), or in its memory only, lost when it stops (false). */
  readonly durable: boolean
  /** Whether retention (or the frame limit) cut the report: the rest cannot be read (C-WKR-14). */
  readonly truncated: boolean
  /** The stored body's length in UTF-16 units. */
  readonly total: number
  /** The report's length before it was cut. */
  readonly originalLength: number
}

/** One page of the reports this session may read, newest first. */
export interface ResultList {
  readonly durable: boolean
  readonly results: ReadonlyArray<ResultSummary>
  /** Reports this session may read, all pages together. */
  readonly total: number
  /** Where the next listing page starts, while more remain. */
  readonly nextOffset?: number
}

/** One page of a stored report (C-WKR-13): units `[offset, offset + text.length)`. */
export interface ResultPageView {
  readonly durable: boolean
  readonly result: ResultSummary
  readonly offset: number
  readonly text: string
  /** Where the next page starts, while text remains. */
  readonly nextOffset?: number
}

/** What reading a page asks for; absent offset and limit take the broker's defaults (0 and 20,000). */
export interface ReadResultRequest {
  readonly ref: string
  readonly offset?: number | undefined
  readonly limit?: number | undefined
}

/** What listing asks for; absent offset and limit take the defaults (0 and 20). */
export interface ListResultsRequest {
  readonly offset?: number | undefined
  readonly limit?: number | undefined
}

/** Why a result operation failed. */
export type ResultError = ResultRequestError | ResultsUnavailable

/** Room a `result_store` frame keeps for everything but the body (title, run, child, ids). */
const FRAME_OVERHEAD = 16 * 1024

const jsonBytes = (text: string): number => Buffer.byteLength(JSON.stringify(text))

/**
 * `body` as it fits in one frame: itself, or its longest prefix (by whole
 * code points at the cut) whose JSON fits.
 */
export const fitBody = (body: string, budget = MAX_FRAME_BYTES - FRAME_OVERHEAD): string => {
  if (body.length * 6 + 2 <= budget || jsonBytes(body) <= budget) return body
  let low = 0
  let high = body.length
  while (low < high) {
    const mid = Math.ceil((low + high) / 2)
    if (jsonBytes(body.slice(0, mid)) <= budget) low = mid
    else high = mid - 1
  }
  return body.slice(0, safeEnd(body, low))
}

const refused = (reason: string) => Effect.fail(new ResultRefused({ reason: `Invalid result request: ${reason}` }))

const unexpected = (type: string) => new ResultRefused({ reason: `The broker answered a result request with "${type}"` })

const labelProblem = (what: string, value: string | undefined, max: number): string | undefined =>
  value !== undefined && value.length > max ? `${what} is longer than ${max} characters` : undefined

/** Stores a report; the receipt says durable or memory-only, and whether it was cut. */
export const storeResult = (
  connection: ClientConnection,
  request: StoreResultRequest,
  timeoutMs: number
): Effect.Effect<StoredResult, ResultError> => {
  const problem = labelProblem("title", request.title, MAX_TITLE_LENGTH) ?? labelProblem("run", request.run, MAX_ID_LENGTH) ??
    labelProblem("child", request.child, MAX_ID_LENGTH)
  if (problem !== undefined) return refused(problem)
  const body = fitBody(request.body)
  return connection.result({
    type: "result_store",
    body,
    ...(body.length < request.body.length ? { originalLength: request.body.length } : {}),
    ...(request.title === undefined ? {} : { title: request.title }),
    ...(request.run === undefined ? {} : { run: request.run }),
    ...(request.child === undefined ? {} : { child: request.child })
  }, timeoutMs).pipe(Effect.flatMap((answer: ResultAnswer) =>
    answer.type === "result_stored"
      ? Effect.succeed({
        ref: answer.ref,
        durable: answer.durable,
        truncated: answer.truncated,
        total: answer.total,
        originalLength: answer.originalLength
      })
      : Effect.fail(unexpected(answer.type))
  ))
}

/** The reports this session may read, newest first. */
export const listResults = (
  connection: ClientConnection,
  request: ListResultsRequest,
  timeoutMs: number
): Effect.Effect<ResultList, ResultError> => {
  const problem = (request.offset === undefined ? undefined : checkListOffset(request.offset)) ??
    (request.limit === undefined ? undefined : checkListLimit(request.limit))
  if (problem !== undefined) return refused(problem)
  return connection.result({ type: "result_list", ...(request.offset === undefined ? {} : { offset: request.offset }), ...(request.limit === undefined ? {} : { limit: request.limit }) }, timeoutMs)
    .pipe(Effect.flatMap((answer: ResultAnswer) =>
      answer.type === "result_listed"
        ? Effect.succeed({
          durable: answer.durable,
          results: answer.results,
          total: answer.total,
          ...(answer.nextOffset === undefined ? {} : { nextOffset: answer.nextOffset })
        })
        : Effect.fail(unexpected(answer.type))
    ))
}

/** One page of a stored report (C-WKR-13). */
export const readResult = (
  connection: ClientConnection,
  request: ReadResultRequest,
  timeoutMs: number
): Effect.Effect<ResultPageView, ResultError> => {
  const problem = checkResultRef(request.ref) ?? (request.offset === undefined ? undefined : checkPageOffset(request.offset)) ??
    (request.limit === undefined ? undefined : checkPageLimit(request.limit))
  if (problem !== undefined) return refused(problem)
  return connection.result({
    type: "result_read",
    ref: request.ref,
    ...(request.offset === undefined ? {} : { offset: request.offset }),
    ...(request.limit === undefined ? {} : { limit: request.limit })
  }, timeoutMs).pipe(Effect.flatMap((answer: ResultAnswer) =>
    answer.type === "result_page"
      ? Effect.succeed({
        durable: answer.durable,
        result: answer.result,
        offset: answer.offset,
        text: answer.text,
        ...(answer.nextOffset === undefined ? {} : { nextOffset: answer.nextOffset })
      })
      : Effect.fail(unexpected(answer.type))
  ))
}
