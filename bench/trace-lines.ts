/**
 * What V8's `--trace-opt` / `--trace-deopt` lines say, as bench/trace-stamp.ts
 * stamped them (`<wall ms>\t<line>`): each completed compile job with its
 * function, tier and V8's three times, and each deoptimization with its
 * kind, reason and function. Apart from bench/compile-trace.ts, which runs
 * the workloads, so the reading can be tested.
 */

/** One `[completed compiling …]` line: the function, its tier, and V8's three times (ms). */
export interface CompileJob {
  readonly at: number
  readonly name: string
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
  readonly kind: string
  readonly reason: string
  readonly code: string
}

/** A completed compile job: function name (empty when anonymous; an accessor's has a space: `get inTable`), tier, OSR, and `took prepare, execute, finalize ms`. */
const COMPLETED = /^\[completed compiling 0x[0-9a-f]+ <JSFunction (.*?) ?\(sfi = [^)]*\)> \(target (\w+)\)( OSR)? - took ([\d.]+), ([\d.]+), ([\d.]+) ms\]/
/** A deoptimization's first line: kind, reason, function, and the code tier it left. */
const BAILOUT = /^\[bailout \(kind: ([^,]+), reason: (.*)\): begin\. deoptimizing 0x[0-9a-f]+ <JSFunction (.*?) ?\(sfi = [^)]*\)>, 0x[0-9a-f]+ <Code (\w+)>/

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
        tier: c[2] ?? "?",
        osr: c[3] !== undefined,
        prepare: Number(c[4]),
        execute: Number(c[5]),
        finalize: Number(c[6])
      })
      continue
    }
    const b = BAILOUT.exec(line)
    if (b !== null) {
      deopts.push({ at, kind: b[1] ?? "?", reason: b[2] ?? "?", name: b[3] === "" || b[3] === undefined ? "(anonymous)" : b[3], code: b[4] ?? "?" })
    }
  }
  return { jobs, deopts }
}

