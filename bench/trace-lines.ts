/**
 * What V8's `--trace-opt` / `--trace-deopt` lines say, as bench/trace-stamp.ts
 * stamped them (`<wall ms>\t<line>`): each completed compile job with its
 * function, tier and V8's three times, and each deoptimization with its
 * kind, reason and function; each `--trace-gc-nvp` collection with its
 * pause and background phases; and the per-function counts of jobs and
 * deoptimizations against the measured interval. Apart from bench/compile-trace.ts, which runs
 * the workloads, so the reading can be tested.
 */

/** One `[completed compiling …]` line: the function, its tier, and V8's three times (ms). */
export interface CompileJob {
  readonly at: number
  readonly name: string
  /** The function's SharedFunctionInfo address: one function, where several share a name. */
  readonly sfi: string
  readonly tier: string
  readonly osr: boolean
  readonly prepare: number
  readonly execute: number
  readonly finalize: number
}

/** One `[bailout (kind: …, reason: …)` line. */
export interface Deopt {
  readonly at: number
  readonly name: string
  /** The function's SharedFunctionInfo address, as in `CompileJob`. */
  readonly sfi: string
  readonly kind: string
  readonly reason: string
  readonly code: string
}

/** A completed compile job: function name (empty when anonymous; an accessor's has a space: `get inTable`), tier, OSR, and `took prepare, execute, finalize ms`. */
const COMPLETED = /^\[completed compiling 0x[0-9a-f]+ <JSFunction (.*?) ?\(sfi = ([^)]*)\)> \(target (\w+)\)( OSR)? - took ([\d.]+), ([\d.]+), ([\d.]+) ms\]/
/** A deoptimization's first line: kind, reason, function, and the code tier it left. */
const BAILOUT = /^\[bailout \(kind: ([^,]+), reason: (.*)\): begin\. deoptimizing 0x[0-9a-f]+ <JSFunction (.*?) ?\(sfi = ([^)]*)\)>, 0x[0-9a-f]+ <Code (\w+)>/

/** Parses trace-stamp.ts's file: each compile job and deoptimization with its arrival time. */
export const parseStamped = (text: string): { jobs: Array<CompileJob>; deopts: Array<Deopt> } => {
  const jobs: Array<CompileJob> = []
  const deopts: Array<Deopt> = []
  for (const stamped of text.split("\n")) {
    const tab = stamped.indexOf("\t")
    if (tab < 0) continue
    const at = Number(stamped.slice(0, tab))
    const line = stamped.slice(tab + 1)
    const c = COMPLETED.exec(line)
    if (c !== null) {
      jobs.push({
        at,
        name: c[1] === "" || c[1] === undefined ? "(anonymous)" : c[1],
        sfi: c[2] ?? "?",
        tier: c[3] ?? "?",
        osr: c[4] !== undefined,
        prepare: Number(c[5]),
        execute: Number(c[6]),
        finalize: Number(c[7])
      })
      continue
    }
    const b = BAILOUT.exec(line)
    if (b !== null) {
      deopts.push({
        at,
        kind: b[1] ?? "?",
        reason: b[2] ?? "?",
        name: b[3] === "" || b[3] === undefined ? "(anonymous)" : b[3],
        sfi: b[4] ?? "?",
        code: b[5] ?? "?"
      })
    }
  }
  return { jobs, deopts }
}


/** One `--trace-gc-nvp` line: the collection's kind (`s` scavenge, `mc` mark-compact, …), its main-thread pause and the summed `background.*` phases (ms). */
export interface GcEvent {
  readonly at: number
  readonly kind: string
  readonly pause: number
  readonly background: number
}

/** Parses the `--trace-gc-nvp` lines of trace-stamp.ts's file; every other line is skipped. */
export const parseGcStamped = (text: string): Array<GcEvent> => {
  const events: Array<GcEvent> = []
  for (const stamped of text.split("\n")) {
    const tab = stamped.indexOf("\t")
    if (tab < 0) continue
    const line = stamped.slice(tab + 1)
    const start = line.indexOf(" pause=")
    if (start < 0) continue
    let kind = "?"
    let pause = 0
    let background = 0
    for (const pair of line.slice(start + 1).split(" ")) {
      const eq = pair.indexOf("=")
      if (eq <= 0) continue
      const key = pair.slice(0, eq)
      const value = pair.slice(eq + 1)
      if (key === "gc") kind = value
      else if (key === "pause") pause = Number(value)
      else if (key.startsWith("background.")) background += Number(value)
    }
    events.push({ at: Number(stamped.slice(0, tab)), kind, pause, background })
  }
  return events
}

/** Where a stamped line fell against the measured interval `[from, to]`: before it, its first or second half, or after it. */
export type Phase = 0 | 1 | 2 | 3

/** The phase of `at` against `[from, to]` (see `Phase`). */
export const phaseOf = (at: number, from: number, to: number): Phase =>
  at < from ? 0 : at <= (from + to) / 2 ? 1 : at <= to ? 2 : 3

/** One function's (one SharedFunctionInfo's) compile jobs and deoptimizations, counted per phase, with each deoptimization reason and how often. */
export interface FunctionCounts {
  readonly name: string
  readonly sfi: string
  readonly jobs: [number, number, number, number]
  readonly deopts: [number, number, number, number]
  /** Summed background execute ms of its jobs, all phases. */
  executeMs: number
  /** Jobs per tier (`MAGLEV`, `TURBOFAN_JS`, an OSR job's tier with ` OSR`), all phases. */
  readonly tiers: Map<string, number>
  readonly reasons: Map<string, number>
}

/** Per function (name and SharedFunctionInfo): its jobs and deoptimizations in each phase of `[from, to]`, most jobs plus deoptimizations first. */
export const byFunction = (
  jobs: ReadonlyArray<CompileJob>,
  deopts: ReadonlyArray<Deopt>,
  from: number,
  to: number
): Array<FunctionCounts> => {
  const rows = new Map<string, FunctionCounts>()
  const rowOf = (name: string, sfi: string): FunctionCounts => {
    const found = rows.get(sfi)
    if (found !== undefined) return found
    const row: FunctionCounts = { name, sfi, jobs: [0, 0, 0, 0], deopts: [0, 0, 0, 0], executeMs: 0, tiers: new Map(), reasons: new Map() }
    rows.set(sfi, row)
    return row
  }
  for (const j of jobs) {
    const row = rowOf(j.name, j.sfi)
    row.jobs[phaseOf(j.at, from, to)]++
    row.executeMs += j.execute
    const tier = j.osr ? `${j.tier} OSR` : j.tier
    row.tiers.set(tier, (row.tiers.get(tier) ?? 0) + 1)
  }
  for (const d of deopts) {
    const row = rowOf(d.name, d.sfi)
    row.deopts[phaseOf(d.at, from, to)]++
    const reason = `${d.code} ${d.kind}: ${d.reason}`
    row.reasons.set(reason, (row.reasons.get(reason) ?? 0) + 1)
  }
  const total = (r: FunctionCounts): number => r.jobs.reduce((s, n) => s + n, 0) + r.deopts.reduce((s, n) => s + n, 0)
  return [...rows.values()].sort((a, b) => total(b) - total(a) || a.name.localeCompare(b.name))
}
