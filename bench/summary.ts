/**
 * From the runs of one bench invocation to the side-by-side table: medians per
 * target and, for each pair of targets compared, the median of the ratios
 * taken within each rep (same-run ratios: a noisy machine slows both sides of
 * a pair alike). Pure: `run.ts` prints what this returns and `report.ts`
 * renders the same rows from a results file.
 */
import { fmt, fmtRatio, headline } from "./format.ts"
import { median } from "./stats.ts"
import type { TargetName } from "./targets.ts"

/** One run: a workload against a target in a rep. */
export interface RunRecord {
  readonly rep: number
  readonly workload: string
  readonly target: TargetName
  readonly ok: boolean
  readonly metrics: Record<string, number>
  readonly notes: ReadonlyArray<string>
  readonly error?: string
  readonly wallMs: number
}

/** A ratio column: `num`'s value over `den`'s, within each rep. */
export interface Comparison {
  readonly num: TargetName
  readonly den: TargetName
  readonly label: string
}

/** Every ratio the table can show, in column order; only those whose two targets ran are shown. */
export const COMPARISONS: ReadonlyArray<Comparison> = [
  { num: "broker", den: "raw", label: "broker/raw" },
  { num: "memory", den: "raw", label: "memory/raw" },
  { num: "broker", den: "memory", label: "broker/memory" },
  { num: "nats", den: "raw", label: "nats/raw" }
]

/** Column headers of the targets. */
export const TARGET_LABEL: Readonly<Record<TargetName, string>> = {
  raw: "raw relay",
  broker: "broker",
  memory: "memory",
  nats: "nats"
}

/** A comparison's ratios: one per rep where both sides ran, and their median. */
export interface RatioSummary {
  readonly median: number | undefined
  readonly perRep: ReadonlyArray<number>
}

/** One metric of one workload: the median per target, and the same-run ratios by comparison label. */
export interface MetricSummary {
  readonly values: Partial<Record<TargetName, number>>
  readonly ratios: Readonly<Record<string, RatioSummary>>
}

/** workload → metric → summary. */
export type Summary = Record<string, Record<string, MetricSummary>>

/** The comparisons whose two targets are both among `targets`. */
export const comparisonsFor = (targets: ReadonlyArray<TargetName>): ReadonlyArray<Comparison> =>
  COMPARISONS.filter((c) => targets.includes(c.num) && targets.includes(c.den))

/** Medians per target and same-rep ratios per comparison, for every metric the runs reported. */
export const summarize = (
  runs: ReadonlyArray<RunRecord>,
  workloadNames: ReadonlyArray<string>,
  targets: ReadonlyArray<TargetName>,
  reps: number
): Summary => {
  const comparisons = comparisonsFor(targets)
  const summary: Summary = {}
  for (const w of workloadNames) {
    const ofWorkload = runs.filter((r) => r.workload === w && r.ok)
    const metricNames = new Set<string>()
    for (const r of ofWorkload) for (const k of Object.keys(r.metrics)) metricNames.add(k)
    const perMetric: Record<string, MetricSummary> = {}
    for (const m of metricNames) {
      const values: Partial<Record<TargetName, number>> = {}
      for (const t of targets) {
        const xs = ofWorkload.filter((r) => r.target === t).map((r) => r.metrics[m] ?? Number.NaN)
        const v = median(xs)
        if (Number.isFinite(v)) values[t] = v
      }
      const ratios: Record<string, RatioSummary> = {}
      for (const c of comparisons) {
        const perRep: Array<number> = []
        for (let rep = 1; rep <= reps; rep++) {
          const den = ofWorkload.find((r) => r.rep === rep && r.target === c.den)?.metrics[m]
          const num = ofWorkload.find((r) => r.rep === rep && r.target === c.num)?.metrics[m]
          if (den !== undefined && num !== undefined && den !== 0 && Number.isFinite(num / den)) perRep.push(num / den)
        }
        ratios[c.label] = { median: perRep.length > 0 ? median(perRep) : undefined, perRep }
      }
      perMetric[m] = { values, ratios }
    }
    summary[w] = perMetric
  }
  return summary
}

/** How many runs of a workload succeeded per target, `ok/reps` (or `–` when the target did not run it). */
const okCounts = (
  runs: ReadonlyArray<RunRecord>,
  workload: string,
  targets: ReadonlyArray<TargetName>,
  reps: number
): string =>
  targets.map((t) => {
    const all = runs.filter((r) => r.workload === workload && r.target === t)
    return all.length === 0 ? "–" : `${all.filter((r) => r.ok).length}/${reps}`
  }).join(" ")

/** The table's header for these targets. */
export const tableHeader = (targets: ReadonlyArray<TargetName>): Array<string> => [
  "workload",
  "metric",
  ...targets.map((t) => TARGET_LABEL[t]),
  ...comparisonsFor(targets).map((c) => c.label),
  `ok runs (${targets.join(" ")})`
]

/** The table's rows: one per headline metric of each workload. */
export const tableRows = (
  summary: Summary,
  runs: ReadonlyArray<RunRecord>,
  workloadNames: ReadonlyArray<string>,
  targets: ReadonlyArray<TargetName>,
  reps: number
): Array<Array<string>> => {
  const comparisons = comparisonsFor(targets)
  const rows: Array<Array<string>> = []
  for (const w of workloadNames) {
    headline(w).forEach(([key, label], i) => {
      const s = summary[w]?.[key]
      rows.push([
        i === 0 ? w : "",
        label,
        ...targets.map((t) => fmt(s?.values[t])),
        ...comparisons.map((c) => fmtRatio(s?.ratios[c.label]?.median)),
        i === 0 ? okCounts(runs, w, targets, reps) : ""
      ])
    })
  }
  return rows
}
