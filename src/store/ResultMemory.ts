/**
 * The result archive's memory layer: reports in a `ResultMemoryState`,
 * oldest first. The state is a plain object its creator owns, so a
 * simulation can keep it across a simulated broker crash (as a disk would);
 * receipts from it say memory-only. Touched only by the archive's one user.
 */
import { Effect } from "effect"
import type { ResultBackend, ResultViewer, StoredReport } from "./resultModel.ts"

/** The reports of a memory archive, oldest first. */
export class ResultMemoryState {
  /** Reports in the order they were stored. */
  readonly reports: Array<StoredReport> = []
}

const visible = (report: StoredReport, viewer: ResultViewer, notBefore: number): boolean =>
  report.summary.createdAt >= notBefore &&
  (report.space === viewer.space || (report.supervisor !== undefined && report.supervisor === viewer.self))

/** A `ResultBackend` over `state`. */
export const makeMemoryBackend = (state: ResultMemoryState): ResultBackend => ({
  durable: false,
  insert: (report, keep, notBefore) =>
    Effect.sync(() => {
      const reports = state.reports
      reports.push(report)
      let old = 0
      while (old < reports.length && reports[old]!.summary.createdAt < notBefore) old++
      const drop = Math.max(old, reports.length - keep)
      if (drop > 0) reports.splice(0, drop)
    }),
  list: (viewer, notBefore, offset, limit) =>
    Effect.sync(() => {
      const mine = state.reports.filter((report) => visible(report, viewer, notBefore)).reverse()
      return { results: mine.slice(offset, offset + limit).map((report) => report.summary), total: mine.length }
    }),
  window: (viewer, ref, notBefore, offset, units) =>
    Effect.sync(() => {
      const report = state.reports.find((candidate) => candidate.summary.ref === ref)
      if (report === undefined || !visible(report, viewer, notBefore)) return undefined
      return { summary: report.summary, window: report.body.slice(offset, offset + units) }
    })
})
