/**
 * The result archive's model (C-WKR-11…14): settings, what goes in and comes
 * out, its typed errors, and the `ResultBackend` port that its memory and
 * SQLite layers implement. `ResultArchive.ts` builds the service on it.
 */
import { Data, type Effect } from "effect"
import type { ResultAuthor, ResultSummary } from "../protocol/results.ts"
import { causeText } from "../protocol/causeText.ts"

/** The archive's ceilings. */
export interface ResultArchiveSettings {
  /** UTF-16 units of one report kept; the rest is cut off for good (C-WKR-14). */
  readonly maxBodyChars: number
  /** Reports kept at most; past it the oldest go. */
  readonly maxReports: number
  /** How long a report is kept, in milliseconds. */
  readonly maxAgeMs: number
}

/** The defaults: 1,000,000 units per report, 1,000 reports, 30 days. */
export const DEFAULT_RESULT_SETTINGS: ResultArchiveSettings = {
  maxBodyChars: 1_000_000,
  maxReports: 1_000,
  maxAgeMs: 30 * 86_400_000
}

/** A report to store, as the broker hands it over. */
export interface ReportInput {
  readonly from: ResultAuthor
  /** The storing session's routing namespace (scope and group), opaque here. */
  readonly space: string
  /** The group's name, for display. */
  readonly group: string
  /** The storing child's supervisor, as an opaque key a `ResultViewer.self` can equal. */
  readonly supervisor?: string | undefined
  readonly title?: string | undefined
  readonly run?: string | undefined
  readonly child?: string | undefined
  readonly body: string
  /** The report's length when `body` is already a cut of it; retention then counts it as truncated. */
  readonly originalLength?: number | undefined
}

/** Who is reading: their routing namespace, and their own key as a supervisor. */
export interface ResultViewer {
  readonly space: string
  readonly self: string
}

/** The receipt of a stored report (C-WKR-12). */
export interface ResultReceipt {
  readonly ref: string
  readonly durable: boolean
  readonly truncated: boolean
  /** The stored body's length in UTF-16 units. */
  readonly total: number
  /** The report's length before retention cut it. */
  readonly originalLength: number
}

/** One page of summaries, newest first. */
export interface ResultListing {
  readonly results: ReadonlyArray<ResultSummary>
  /** Reports the viewer may read, all pages together. */
  readonly total: number
  readonly nextOffset?: number
}

/** One page of a stored body (C-WKR-13). */
export interface ResultPage {
  readonly result: ResultSummary
  readonly offset: number
  readonly text: string
  readonly nextOffset?: number
}

/** No report by that address is visible to the reader (never stored, pruned, or someone else's). */
export class ResultNotFound extends Data.TaggedError("ResultNotFound")<{ readonly ref: string }> {
  override get message(): string {
    return `No stored result ${this.ref} is visible to this session: it may have been removed by the archive's ` +
      `retention, or stored in another group; list the results to see what you can read`
  }
}

/** A request with a bad address, offset or limit; nothing was read or stored. */
export class ResultRequestInvalid extends Data.TaggedError("ResultRequestInvalid")<{ readonly detail: string }> {
  override get message(): string {
    return `Invalid result request: ${causeText(this.detail)}`
  }
}

/** The archive's storage failed; nothing was stored (a store is never acknowledged then). */
export class ResultArchiveFailed extends Data.TaggedError("ResultArchiveFailed")<{ readonly detail: string }> {
  override get message(): string {
    return `The result archive failed: ${causeText(this.detail)}. Nothing was stored; check the broker's log and its database file`
  }
}

/** Why an archive operation failed. */
export type ResultArchiveError = ResultNotFound | ResultRequestInvalid | ResultArchiveFailed

/** What a paging request says; absent offset and limit take the defaults. */
export interface PageRequest {
  readonly offset?: number | undefined
  readonly limit?: number | undefined
}

/** The archive, as its users see it. */
export interface ResultArchiveService {
  /** Whether stored reports survive a broker restart (C-WKR-12). */
  readonly durable: boolean
  /** Stores a report; the receipt says durable or memory-only, and whether retention cut it. */
  readonly store: (input: ReportInput) => Effect.Effect<ResultReceipt, ResultArchiveError>
  /** The reports `viewer` may read, newest first. */
  readonly list: (viewer: ResultViewer, page?: PageRequest) => Effect.Effect<ResultListing, ResultArchiveError>
  /** One page of a report `viewer` may read. */
  readonly read: (viewer: ResultViewer, ref: string, page?: PageRequest) => Effect.Effect<ResultPage, ResultArchiveError>
}

/** A report as a backend keeps it. */
export interface StoredReport {
  readonly summary: ResultSummary
  readonly space: string
  readonly supervisor: string | undefined
  readonly body: string
}

/**
 * What a layer implements: plain storage. Validation, addresses, the clock,
 * the retention cut and paging are the same for both and live here.
 */
export interface ResultBackend {
  readonly durable: boolean
  /** Adds `report`, then drops reports created before `notBefore` and all but the newest `keep`. */
  readonly insert: (report: StoredReport, keep: number, notBefore: number) => Effect.Effect<void, ResultArchiveFailed>
  readonly list: (
    viewer: ResultViewer,
    notBefore: number,
    offset: number,
    limit: number
  ) => Effect.Effect<{ readonly results: ReadonlyArray<ResultSummary>; readonly total: number }, ResultArchiveFailed>
  /** The summary and at least `units` units of the body from `offset` (or to its end). */
  readonly window: (
    viewer: ResultViewer,
    ref: string,
    notBefore: number,
    offset: number,
    units: number
  ) => Effect.Effect<{ readonly summary: ResultSummary; readonly window: string } | undefined, ResultArchiveFailed>
}

