/**
 * The result archive in the session runtime (`results-v1`, C-WKR-11…16): the
 * tool actions `results` (the archived reports this session may read, newest
 * first) and `result` (one page of one report by `result:<UUID>`).
 *
 * Every text says whether the archive is durable or memory-only (C-WKR-12)
 * and, for a cut report, that the rest cannot be read by paging (C-WKR-14).
 * A page is stored evidence, not a live worker's answer (C-WKR-11); a request
 * that times out, loses its connection or meets a broker without the archive
 * is an error result and never reads as a page, an answer or an approval
 * (C-WKR-15, C-WKR-16). It owns no state.
 */
import { Effect } from "effect"
import type { ResultList, ResultPageView } from "../client/ClientResults.ts"
import { ResultRefused } from "../client/errors.ts"
import type { ResultSummary } from "../protocol/results.ts"
import type { Generation } from "./Generation.ts"
import type { ToolAction } from "./IntercomTool.ts"
import type { ToolResult } from "./models.ts"

/** What a page is, said with every page (C-WKR-11). */
export const EVIDENCE_NOTE = "Stored evidence, not a live worker: it is not an answer or an approval."

/** Durable or memory-only, as every result text says it (C-WKR-12). */
export const storageText = (durable: boolean): string =>
  durable ? "durable (kept across broker restarts)" : "memory-only (lost when the broker stops)"

const truncationText = (summary: ResultSummary): string =>
  summary.truncated
    ? `truncated by retention: ${summary.total} of ${summary.originalLength} units kept; the rest cannot be read by paging`
    : "complete"

const when = (at: number): string => new Date(at).toISOString()

/** One report as a line of the `results` listing. */
export const renderSummary = (summary: ResultSummary): string => {
  const from = summary.from.name === undefined ? summary.from.id : `${summary.from.name} (${summary.from.id})`
  const about = [
    summary.title === undefined ? undefined : `"${summary.title}"`,
    summary.run === undefined ? undefined : `run ${summary.run}`,
    summary.child === undefined ? undefined : `child ${summary.child}`
  ].filter((part) => part !== undefined)
  return `- ${summary.ref}${about.length === 0 ? "" : ` ${about.join(", ")}`} — from ${from}, group ${summary.group}, ` +
    `${when(summary.createdAt)}, ${summary.total} units, ${truncationText(summary)}`
}

/** The `results` text. */
export const renderList = (list: ResultList, offset: number): string => {
  const head = `Result archive: ${storageText(list.durable)}. ${list.total} stored result${list.total === 1 ? "" : "s"} visible`
  if (list.results.length === 0) return `${head}${list.total === 0 ? "." : `; none from offset ${offset}.`}`
  const shown = `${head}; ${offset + 1}–${offset + list.results.length}, newest first:`
  const more = list.nextOffset === undefined ? "" : `\nMore: results with offset ${list.nextOffset}.`
  return `${shown}\n${list.results.map(renderSummary).join("\n")}${more}\nRead one with result {ref, offset, limit}.`
}

/** The `result` text: a header, the page, and where the next page starts. */
export const renderPage = (page: ResultPageView): string => {
  const { result } = page
  const end = page.offset + page.text.length
  const head = `${result.ref}: units ${page.offset}–${end} of ${result.total}; ${storageText(page.durable)}; ` +
    `${truncationText(result)}. ${EVIDENCE_NOTE}`
  const next = page.nextOffset === undefined
    ? result.truncated ? "End of the retained text (the rest was cut by retention)." : "End of the report."
    : `More: result with offset ${page.nextOffset}.`
  return `${head}\n\n${page.text}\n\n${next}`
}

const ok = (text: string, details: Record<string, unknown>): ToolResult => ({ text, isError: false, details })

/** The two result archive tool actions, for the tool's action table. */
export const makeResultActions = (generation: Generation): ReadonlyMap<string, ToolAction> => {
  const { client } = generation
  const results: ToolAction = (params) =>
    Effect.gen(function*() {
      yield* generation.connect
      const list = yield* client.results({ offset: params.offset, limit: params.limit })
      return ok(renderList(list, params.offset ?? 0), {
        durable: list.durable,
        total: list.total,
        results: list.results,
        ...(list.nextOffset === undefined ? {} : { nextOffset: list.nextOffset })
      })
    })
  const result: ToolAction = (params) =>
    Effect.gen(function*() {
      const ref = params.ref?.trim() ?? ""
      if (ref === "") {
        return yield* new ResultRefused({ reason: "Invalid result request: result needs a ref, result:<UUID> from results" })
      }
      yield* generation.connect
      const page = yield* client.result({ ref, offset: params.offset, limit: params.limit })
      return ok(renderPage(page), {
        ref,
        durable: page.durable,
        offset: page.offset,
        total: page.result.total,
        truncated: page.result.truncated,
        originalLength: page.result.originalLength,
        page: page.text,
        ...(page.nextOffset === undefined ? {} : { nextOffset: page.nextOffset })
      })
    })
  return new Map<string, ToolAction>([["results", results], ["result", result]])
}
