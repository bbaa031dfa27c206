/**
 * What V8 compiles and deoptimizes in the broker while a workload is
 * measured. Runs the workload (bench/workloads.ts, default sizes) against our
 * broker started with `--trace-opt --trace-deopt`, line buffered, through
 * bench/trace-stamp.ts, which stamps each trace line with its arrival time;
 * the workload's measured interval comes from `TargetSpec.measure`. Prints,
 * per workload and target: the compile jobs whose line arrived inside the
 * interval, by tier, with their summed background (execute) and main-thread
 * (prepare + finalize) ms; the largest jobs by execute ms; every
 * deoptimization in the interval with its reason and function.
 *
 * `--tree dir` runs another worktree's built broker (its `dist/`) under
 * this tree's tools: a base build that predates this tool.
 *
 * `--bytecode-of a,b` runs each workload once more per name with
 * `--print-bytecode-filter=<name>` (not timed) to give the functions of that
 * name their bytecode length; names shared by several functions (the
 * bundle's minified ones are short) are listed with every length seen.
 * (The unfiltered `--print-bytecode` writes megabytes, which came out cut
 * short in the runs of the stop that wrote this, cause not found.)
 *
 * Opt-in tool, not a workload: tracing costs the broker time, so its rates
 * are not the bench's. The times V8 prints are wall time on its compiler
 * threads, which the machine's load stretches: read them with the load.
 *
 * `--by-function` adds, per function name over the broker's whole life,
 * its jobs and deoptimizations before the interval (startup and warm-up),
 * in its first and second half, and after it, with each deopt's reason: a
 * deopt → reoptimize loop shows as jobs that do not stop by the second half.
 * `--gc` adds `--trace-gc --trace-gc-nvp` and the collector's main-thread
 * pauses and background phases (concurrent marking, parallel scavenging,
 * sweeping) per phase, beside the compilers' background ms.
 *
 *   node bench/compile-trace.ts [--only w64,fanin] [--targets memory,broker] [--reps N] [--top N] [--bytecode-of name,...] [--tree dir] [--by-function] [--gc]
 */
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { eachArg, helpOrUnknown, runScript } from "./args.ts"
import { byFunction, type CompileJob, type Deopt, parseGcStamped, parseStamped, phaseOf } from "./trace-lines.ts"
import { brokerSpec, installCleanupHandlers, makeTempDir, memoryBrokerSpec, removeTempDir, repoRoot, type TargetSpec } from "./targets.ts"
import { defaultSizes, selectWorkloads, type Workload, workloads } from "./workloads.ts"

const usage = "usage: node bench/compile-trace.ts [--only w64,fanin] [--targets memory,broker] [--reps N] [--top N] [--bytecode-of name,...] [--tree dir] [--by-function] [--gc]"

const options = { only: ["w64", "fanin"], targets: ["memory", "broker"], reps: 1, top: 10, bytecodeOf: new Array<string>(), tree: repoRoot, byFunction: false, gc: false }

/** Reads the flags into `options`; a bad one throws (`runScript` prints it and exits 2), `--help` prints the usage. */
const parseArgs = (argv: ReadonlyArray<string>): void =>
  eachArg(argv, usage, (arg) => {
    if (arg.key === "--only") options.only = arg.list()
    else if (arg.key === "--targets") options.targets = arg.list()
    else if (arg.key === "--reps") options.reps = arg.int(1, 20)
    else if (arg.key === "--top") options.top = arg.int(1, 200)
    else if (arg.key === "--bytecode-of") options.bytecodeOf = arg.list()
    else if (arg.key === "--tree") options.tree = path.resolve(arg.value())
    else if (arg.key === "--by-function") options.byFunction = true
    else if (arg.key === "--gc") options.gc = true
    else helpOrUnknown(arg, usage)
  })

/** `argv` with this tree's `dist/` paths moved to `--tree`'s. */
const inTree = (argv: ReadonlyArray<string>): Array<string> => {
  const ownDist = path.join(repoRoot, "dist")
  return argv.map((arg) => (arg.startsWith(ownDist) ? path.join(options.tree, "dist", arg.slice(ownDist.length)) : arg))
}

const specOf = (target: string): TargetSpec => {
  if (target === "memory") return memoryBrokerSpec
  if (target === "broker") return brokerSpec
  throw new Error(`--targets: ${target} is not ours (memory, broker)\n${usage}`)
}

/** `spec` started with `flags` after the Node binary, its stdout line buffered and stamped into `out`. */
const stampedSpec = (spec: TargetSpec, flags: ReadonlyArray<string>, out: string, measured: { from: number; to: number }): TargetSpec => ({
  ...spec,
  argv: (dir, maxSessions) => {
    const [node, ...rest] = spec.argv(dir, maxSessions)
    if (node === undefined) throw new Error("empty command")
    return [node, path.join(repoRoot, "bench", "trace-stamp.ts"), "--pass", "^\\S.*broker started", out, "stdbuf", "-oL", node, ...flags, ...inTree(rest)]
  },
  measure: {
    begin: () => {
      measured.from = performance.timeOrigin + performance.now()
    },
    end: () => {
      measured.to = performance.timeOrigin + performance.now()
    }
  }
})

const ms = (n: number): string => n.toFixed(1)

/**
 * Bytecode length of the functions named `name` that the workload runs: the
 * workload run once more with `--print-bytecode` for that name only (V8
 * prints a function's bytecode when it is first compiled), not timed.
 */
const bytecodeLengths = async (w: Workload, spec: TargetSpec, dir: string, name: string): Promise<Set<number>> => {
  const out = path.join(dir, `bytecode-${name}.txt`)
  await w.run(stampedSpec(spec, ["--print-bytecode", `--print-bytecode-filter=${name}`], out, { from: 0, to: 0 }))
  const lengths = new Set<number>()
  for (const line of fs.readFileSync(out, "utf8").split("\n")) {
    const length = /Bytecode length: (\d+)/.exec(line)
    if (length !== null) lengths.add(Number(length[1]))
  }
  return lengths
}

/** Every length seen, or how many when a name is shared by more than four functions. */
const lengthText = (lengths: Set<number> | undefined): string =>
  lengths === undefined ? "" : lengths.size > 4 ? `${lengths.size} functions of this name` : [...lengths].join(", ")

const report = (
  title: string,
  load: string,
  jobs: ReadonlyArray<CompileJob>,
  deopts: ReadonlyArray<Deopt>,
  lengths: Map<string, Set<number>>
): void => {
  console.log(`\n#### ${title} (load ${load})\n`)
  console.log("| tier | jobs | execute ms (background) | prepare + finalize ms (main thread) |")
  console.log("|---|---:|---:|---:|")
  const tiers = [...new Set(jobs.map((j) => j.tier))].sort()
  for (const tier of tiers) {
    const of = jobs.filter((j) => j.tier === tier)
    const execute = of.reduce((s, j) => s + j.execute, 0)
    const main = of.reduce((s, j) => s + j.prepare + j.finalize, 0)
    console.log(`| ${tier} | ${of.length} | ${ms(execute)} | ${ms(main)} |`)
  }
  console.log(`\nLargest jobs (execute ms):\n`)
  console.log("| function | tier | execute ms | bytecode length |")
  console.log("|---|---|---:|---|")
  for (const j of [...jobs].sort((a, b) => b.execute - a.execute).slice(0, options.top)) {
    console.log(`| \`${j.name}\`${j.osr ? " (OSR)" : ""} | ${j.tier} | ${ms(j.execute)} | ${lengthText(lengths.get(j.name))} |`)
  }
  for (const [name, length] of lengths) {
    const of = jobs.filter((j) => j.name === name)
    const byTier = [...new Set(of.map((j) => j.tier))].sort().map((tier) => {
      const jobsOfTier = of.filter((j) => j.tier === tier)
      return `${tier} ${jobsOfTier.length} job(s) ${ms(jobsOfTier.reduce((sum, j) => sum + j.execute, 0))} ms`
    })
    console.log(`\n\`${name}\` (bytecode ${lengthText(length)}): ${byTier.length === 0 ? "no job in the interval" : byTier.join(", ")}`)
  }
  console.log(`\nDeoptimizations: ${deopts.length}\n`)
  if (deopts.length === 0) return
  console.log("| function | code | kind | reason |")
  console.log("|---|---|---|---|")
  for (const d of deopts) console.log(`| \`${d.name}\` | ${d.code} | ${d.kind} | ${d.reason} |`)
}

const PHASES = ["before", "1st half", "2nd half", "after"]

/** Every function's jobs and deoptimizations over the broker's whole life, per phase against the interval (`--by-function`). */
const functionReport = (jobs: ReadonlyArray<CompileJob>, deopts: ReadonlyArray<Deopt>, from: number, to: number): void => {
  const rows = byFunction(jobs, deopts, from, to)
  const counts = new Map<number, number>()
  for (const r of rows) {
    const n = r.jobs.reduce((s, k) => s + k, 0)
    counts.set(n, (counts.get(n) ?? 0) + 1)
  }
  const histogram = [...counts].sort((a, b) => a[0] - b[0]).map(([n, fns]) => `${n} job(s): ${fns}`).join(", ")
  const late = rows.filter((r) => r.jobs[2] > 0)
  const lateAgain = late.filter((r) => r.jobs[0] + r.jobs[1] > 0 && r.deopts.slice(0, 3).some((n) => n > 0))
  console.log(`\n${rows.length} functions compiled or deoptimized; functions by jobs over the whole life: ${histogram}.`)
  console.log(`${late.length} functions had a job in the interval's 2nd half; ${lateAgain.length} of them had been compiled before and deoptimized by then.`)
  console.log(`\nPer function, whole life (jobs / deopts: ${PHASES.join(", ")} the interval):\n`)
  console.log("| function (sfi) | jobs | deopts | tiers | execute ms | deopt reasons |")
  console.log("|---|---|---|---|---:|---|")
  for (const r of rows.slice(0, options.top)) {
    const reasons = [...r.reasons].map(([reason, n]) => `${reason} ×${n}`).join("; ")
    const tiers = [...r.tiers].map(([tier, n]) => `${tier} ×${n}`).join(", ")
    console.log(`| \`${r.name}\` (${r.sfi}) | ${r.jobs.join(" / ")} | ${r.deopts.join(" / ")} | ${tiers} | ${ms(r.executeMs)} | ${reasons} |`)
  }
}

/** The collector's main-thread pauses and background phases per phase against the interval (`--gc`), beside the compilers' background ms. */
const gcReport = (text: string, jobs: ReadonlyArray<CompileJob>, from: number, to: number): void => {
  const rows = PHASES.map(() => ({ scavenges: 0, markCompacts: 0, pause: 0, background: 0, compile: 0 }))
  for (const e of parseGcStamped(text)) {
    const row = rows[phaseOf(e.at, from, to)]
    if (row === undefined) continue
    if (e.kind === "s") row.scavenges++
    else row.markCompacts++
    row.pause += e.pause
    row.background += e.background
  }
  for (const j of jobs) {
    const row = rows[phaseOf(j.at, from, to)]
    if (row !== undefined) row.compile += j.execute
  }
  console.log("\n| phase | scavenges | other GCs | GC pause ms (main) | GC background ms | compile execute ms (background) |")
  console.log("|---|---:|---:|---:|---:|---:|")
  rows.forEach((r, i) =>
    console.log(`| ${PHASES[i]} | ${r.scavenges} | ${r.markCompacts} | ${ms(r.pause)} | ${ms(r.background)} | ${ms(r.compile)} |`)
  )
}

const main = async (): Promise<number> => {
  parseArgs(process.argv.slice(2))
  installCleanupHandlers()
  const selected = selectWorkloads(workloads(defaultSizes), options.only)
  for (const target of options.targets) specOf(target)
  for (const w of selected) {
    for (const target of options.targets) {
      const spec = specOf(target)
      const dir = makeTempDir()
      try {
        const lengths = new Map<string, Set<number>>()
        for (const name of options.bytecodeOf) lengths.set(name, await bytecodeLengths(w, spec, dir, name))
        for (let rep = 1; rep <= options.reps; rep++) {
          const out = path.join(dir, `trace-${rep}.txt`)
          const measured = { from: 0, to: 0 }
          const before = (os.loadavg()[0] ?? 0).toFixed(2)
          const started = new Date().toISOString().slice(11, 19)
          const flags = options.gc ? ["--trace-opt", "--trace-deopt", "--trace-gc", "--trace-gc-nvp"] : ["--trace-opt", "--trace-deopt"]
          await w.run(stampedSpec(spec, flags, out, measured))
          const load = `${before}→${(os.loadavg()[0] ?? 0).toFixed(2)}`
          const text = fs.readFileSync(out, "utf8")
          const { jobs, deopts } = parseStamped(text)
          // A line arrives after its job: a job whose line came inside the interval ran (mostly) inside it.
          const inside = (at: number): boolean => at >= measured.from && at <= measured.to
          const title = `${w.name}, ${target}, rep ${rep}, ${started} UTC, interval ${ms(measured.to - measured.from)} ms; whole life ${jobs.length} jobs, ${deopts.length} deopts`
          report(title, load, jobs.filter((j) => inside(j.at)), deopts.filter((d) => inside(d.at)), lengths)
          if (options.byFunction) functionReport(jobs, deopts, measured.from, measured.to)
          if (options.gc) gcReport(text, jobs, measured.from, measured.to)
        }
      } finally {
        removeTempDir(dir)
      }
    }
  }
  return 0
}

runScript("compile-trace", main)
