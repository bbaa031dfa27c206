/**
 * `npm run bench:profile` — where each target's CPU per message goes, and
 * where the gap between the broker and the raw relay goes (issue 16's "Done
 * when": the profile that shows which part of the gap is the kernel, V8,
 * Node, effect or our code).
 *
 *   node bench/profile.ts [--only w64,fanin,ask] [--targets raw,broker,memory] [--reps N]
 *                         [--broker-cmd "<cmd>"] [--interval µs] [--no-unprofiled] [--no-cpu-prof]
 *                         [--keep-profiles dir] [--perf] [--markdown] [--quick] [--out file.json]
 *
 * Runs bench/run.ts's workloads (bench/workloads.ts) against bench/targets.ts's
 * targets, each Node target under `--cpu-prof`. The workloads tell the
 * profiler where their measured interval (after warm-up) starts and ends
 * (`TargetSpec.measure`); inside it the target's CPU is read per thread from
 * /proc (bench/profile-proc.ts) and its profile samples are counted by owner
 * (bench/profile-cpuprofile.ts); bench/profile-split.ts joins the two. Each
 * rep runs every target once profiled and once not (the profiler's overhead);
 * the target order reverses every other rep, as in bench/run.ts. Not part of
 * CI: a measurement, never a test.
 */
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { brokerEntryPoint } from "../src/config/install.ts"
import { markdownTable, table } from "./format.ts"
import { countSamples, emptyCounts, type Interval, mergeCounts, parseCpuProfile, pidOfProfileFile, type ProfileCounts, sourceMapResolver } from "./profile-cpuprofile.ts"
import {
  addGroupCpu,
  cpuBetween,
  type GroupCpu,
  type KernelCounts,
  kernelCountsBetween,
  readKernelCounts,
  readThreads,
  type ThreadSnapshot,
  zeroGroupCpu,
  zeroKernelCounts
} from "./profile-proc.ts"
import { countPerf, emptyPerfCounts, findPerf, mergePerf, type PerfCounts, perfArgv, perfScript } from "./profile-perf.ts"
import { breakdown, type Column, groups, type Measured, perfSplit, perfTable, topEntries, workloadTable } from "./profile-split.ts"
import { median } from "./stats.ts"
import {
  brokerSpec,
  cleanupAll,
  clockTicksPerSecond,
  customBrokerSpec,
  findNatsServer,
  installCleanupHandlers,
  makeTempDir,
  memoryBrokerSpec,
  natsSpec,
  rawSpec,
  removeTempDir,
  repoRoot,
  TARGET_ORDER,
  type TargetName,
  type TargetSpec
} from "./targets.ts"
import { defaultSizes, quickSizes, type Workload, workloads } from "./workloads.ts"

const usage = `usage: node bench/profile.ts [--only w64,fanin,ask] [--targets raw,broker,memory] [--reps N]
                             [--broker-cmd "<cmd with {dir}/{sock}>"] [--interval µs] [--no-unprofiled]
                             [--no-cpu-prof] [--keep-profiles dir] [--perf] [--perf-hz N] [--markdown] [--quick] [--out file.json]
--no-cpu-prof: /proc (and --perf) only: V8 works without its profiler's code logging
--perf:  also \`perf record\` every target's threads in the measured intervals (on-CPU: kernel, SQLite, GC, compiler, JS)
workloads with a measured interval: w1 w64 sustained fanin ask payload-100B payload-10KiB payload-500KiB startup
targets: raw, broker (ours, durable, or --broker-cmd), memory (ours, --durability memory), nats (/proc only)`

/** The workloads that mark their measured interval (bench/workloads.ts calls `measure`). */
const MEASURED = /^(w1|w64|sustained|fanin|ask|payload-.*|startup)$/

/** The CPU-per-unit metric of a plain run of each workload, in µs. */
const plainCpuPerUnit = (workload: string, metrics: Record<string, number>): number | undefined => {
  if (workload === "ask") return metrics["cpuUsPerRound"]
  if (workload === "startup") {
    const ms = metrics["healthCpuMs"]
    return ms === undefined ? undefined : ms * 1000
  }
  return metrics["cpuUsPerMsg"]
}

interface Options {
  only: Array<string>
  targets: Array<TargetName>
  reps: number
  brokerCmd: string | undefined
  intervalUs: number
  /** Run the targets under `--cpu-prof` (off: /proc and perf only, for V8's own work without its profiler). */
  cpuProf: boolean
  unprofiled: boolean
  keep: string | undefined
  /** `perf record` at this rate (Hz) on every target too; undefined: no perf. */
  perfHz: number | undefined
  markdown: boolean
  quick: boolean
  out: string
}

const parseArgs = (argv: ReadonlyArray<string>): Options => {
  const o: Options = {
    only: [],
    targets: ["raw", "broker", "memory"],
    reps: 2,
    brokerCmd: process.env["BENCH_BROKER_CMD"],
    intervalUs: 250,
    cpuProf: true,
    unprofiled: true,
    keep: undefined,
    perfHz: undefined,
    markdown: false,
    quick: false,
    out: path.join(repoRoot, "bench", "results", "profile.json")
  }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? ""
    const eq = arg.indexOf("=")
    const key = eq >= 0 ? arg.slice(0, eq) : arg
    const value = (): string => {
      if (eq >= 0) return arg.slice(eq + 1)
      const v = argv[++i]
      if (v === undefined) throw new Error(`${key} needs a value\n${usage}`)
      return v
    }
    const int = (name: string, lo: number, hi: number): number => {
      const n = Number(value())
      if (!Number.isInteger(n) || n < lo || n > hi) throw new Error(`${name} must be an integer in ${lo}..${hi}`)
      return n
    }
    switch (key) {
      case "--only":
        o.only.push(...value().split(",").map((s) => s.trim()).filter((s) => s !== ""))
        break
      case "--targets": {
        const list = value().split(",").map((s) => s.trim()).filter((s) => s !== "")
        o.targets = []
        for (const t of list) {
          const name = TARGET_ORDER.find((n) => n === t)
          if (name === undefined) throw new Error(`--targets: unknown target ${t} (one of ${TARGET_ORDER.join(", ")})`)
          if (!o.targets.includes(name)) o.targets.push(name)
        }
        if (o.targets.length === 0) throw new Error("--targets needs at least one target")
        break
      }
      case "--reps":
        o.reps = int("--reps", 1, 20)
        break
      case "--broker-cmd":
        o.brokerCmd = value()
        break
      case "--interval":
        o.intervalUs = int("--interval", 50, 10_000)
        break
      case "--no-cpu-prof":
        o.cpuProf = false
        break
      case "--no-unprofiled":
        o.unprofiled = false
        break
      case "--keep-profiles":
        o.keep = path.resolve(value())
        break
      case "--perf":
        o.perfHz = 1999
        break
      case "--perf-hz":
        o.perfHz = int("--perf-hz", 100, 20_000)
        break
      case "--markdown":
        o.markdown = true
        break
      case "--quick":
        o.quick = true
        break
      case "--out":
        o.out = path.resolve(value())
        break
      case "--help":
      case "-h":
        process.stdout.write(`${usage}\n`)
        process.exit(0)
        break
      default:
        throw new Error(`unknown argument ${arg}\n${usage}`)
    }
  }
  if (o.only.length === 0) o.only = ["w64", "fanin", "ask"]
  return o
}

const resolveSpecs = (opts: Options): Map<TargetName, TargetSpec> => {
  const specs = new Map<TargetName, TargetSpec>()
  const built = fs.existsSync(brokerEntryPoint())
  for (const t of opts.targets) {
    if (t === "raw") specs.set(t, rawSpec)
    else if (t === "broker" && opts.brokerCmd !== undefined) specs.set(t, customBrokerSpec(opts.brokerCmd))
    else if (t === "broker" || t === "memory") {
      if (!built) throw new Error(`${t}: the built CLI was not found (run \`npm run build\`, or give --broker-cmd)`)
      specs.set(t, t === "broker" ? brokerSpec : memoryBrokerSpec)
    } else {
      const binary = findNatsServer()
      if (binary === undefined) process.stderr.write("bench:profile: nats-server not found on the PATH: the NATS column is skipped\n")
      else specs.set(t, natsSpec(binary))
    }
  }
  return specs
}

// ---------------------------------------------------------------- one profiled run

/** The process's monotonic clock in µs: the clock a `.cpuprofile`'s timestamps use. */
const nowUs = (): number => Number(process.hrtime.bigint() / 1000n)

interface Window {
  readonly pid: number
  readonly interval: Interval
  readonly units: number
  readonly cpu: GroupCpu
  readonly kernel: KernelCounts
}

/** `argv` with `--cpu-prof` options after the Node binary; unchanged when the target is not this Node. */
const withCpuProf = (argv: ReadonlyArray<string>, dir: string, intervalUs: number): ReadonlyArray<string> => {
  const [file, ...rest] = argv
  if (file !== process.execPath) return argv
  return [file, "--cpu-prof", `--cpu-prof-dir=${dir}`, `--cpu-prof-interval=${intervalUs}`, ...rest]
}

interface ProfiledRun {
  readonly measured: Measured
  readonly metrics: Record<string, number>
  readonly notes: Array<string>
}

const runProfiled = async (
  w: Workload,
  spec: TargetSpec,
  opts: Options,
  label: string,
  perf: string | undefined
): Promise<ProfiledRun> => {
  const profDir = makeTempDir()
  let perfFiles = 0
  const windows: Array<Window> = []
  const open = new Map<number, { from: number; before: ThreadSnapshot; kernel: KernelCounts }>()
  const ticks = clockTicksPerSecond()
  const profiled: TargetSpec = {
    ...spec,
    argv: (dir, maxSessions) => {
      const plainArgv = spec.argv(dir, maxSessions)
      const argv = opts.cpuProf ? withCpuProf(plainArgv, profDir, opts.intervalUs) : plainArgv
      if (perf === undefined || opts.perfHz === undefined || argv[0] !== process.execPath) return argv
      return perfArgv(perf, path.join(profDir, `run-${perfFiles++}.perf`), opts.perfHz, argv)
    },
    measure: {
      begin: (pid) => {
        const kernel = readKernelCounts(pid)
        const before = readThreads(pid, ticks)
        open.set(pid, { from: nowUs(), before, kernel })
      },
      end: (pid, units) => {
        const to = nowUs()
        const after = readThreads(pid, ticks)
        const kernel = readKernelCounts(pid)
        const b = open.get(pid)
        open.delete(pid)
        if (b === undefined) return
        windows.push({ pid, interval: { from: b.from, to }, units, cpu: cpuBetween(b.before, after), kernel: kernelCountsBetween(b.kernel, kernel) })
      }
    }
  }
  const notes: Array<string> = []
  try {
    const r = await w.run(profiled)
    notes.push(...r.notes)
    let counts: ProfileCounts | undefined
    const files = fs.readdirSync(profDir).filter((f) => f.endsWith(".cpuprofile"))
    if (opts.cpuProf && withCpuProf(spec.argv("/x", undefined), profDir, opts.intervalUs).includes("--cpu-prof")) {
      // Written by the target at exit: stop() has waited for it.
      counts = emptyCounts()
      const resolve = sourceMapResolver(repoRoot)
      for (const pid of new Set(windows.map((x) => x.pid))) {
        const file = files.find((f) => pidOfProfileFile(f) === pid)
        if (file === undefined) {
          notes.push(`no profile from pid ${pid} (did it exit on SIGTERM?)`)
          continue
        }
        const parsed = parseCpuProfile(JSON.parse(fs.readFileSync(path.join(profDir, file), "utf8")))
        if (parsed instanceof Error) {
          notes.push(`${file}: ${parsed.message}`)
          continue
        }
        countSamples(parsed, windows.filter((x) => x.pid === pid).map((x) => x.interval), resolve, counts)
      }
      if (opts.keep !== undefined) {
        fs.mkdirSync(opts.keep, { recursive: true })
        for (const f of files) fs.copyFileSync(path.join(profDir, f), path.join(opts.keep, `${w.name}.${label}.${f}`))
      }
    }
    if (windows.length === 0) notes.push("the workload marked no measured interval")
    let perfCounts: PerfCounts | undefined
    if (perf !== undefined && perfFiles > 0) {
      perfCounts = emptyPerfCounts()
      const perfWindows = windows.map((x) => ({ pid: x.pid, from: x.interval.from, to: x.interval.to }))
      for (const f of fs.readdirSync(profDir).filter((x) => x.endsWith(".perf"))) {
        try {
          countPerf(perfScript(perf, path.join(profDir, f)), perfWindows, perfCounts)
        } catch (e) {
          notes.push(`perf script ${f}: ${e instanceof Error ? e.message.split("\n")[0] : String(e)}`)
        }
      }
    }
    return {
      measured: {
        units: windows.reduce((s, x) => s + x.units, 0),
        cpu: windows.reduce((s, x) => addGroupCpu(s, x.cpu), zeroGroupCpu()),
        counts,
        perf: perfCounts,
        kernel: windows.reduce((sum, x) => kernelCountsBetween(zeroKernelCounts(), x.kernel, sum), zeroKernelCounts())
      },
      metrics: r.metrics,
      notes
    }
  } finally {
    removeTempDir(profDir)
  }
}

/** Sums two runs' measurements. */
const addMeasured = (a: Measured, b: Measured): Measured => ({
  units: a.units + b.units,
  cpu: addGroupCpu(a.cpu, b.cpu),
  counts: b.counts === undefined ? a.counts : mergeCounts(a.counts ?? emptyCounts(), b.counts),
  perf: b.perf === undefined ? a.perf : mergePerf(a.perf ?? emptyPerfCounts(), b.perf),
  kernel: kernelCountsBetween(zeroKernelCounts(), b.kernel ?? zeroKernelCounts(), a.kernel ?? zeroKernelCounts())
})

// ---------------------------------------------------------------- main

const LABEL: Readonly<Record<TargetName, string>> = { raw: "relay", broker: "broker", memory: "memory", nats: "nats" }

const main = async (opts: Options): Promise<number> => {
  installCleanupHandlers()
  process.removeAllListeners("warning")
  const all = workloads(opts.quick ? quickSizes : defaultSizes)
  const selected = all.filter((w) => opts.only.includes(w.name))
  for (const name of opts.only) {
    if (!all.some((w) => w.name === name)) throw new Error(`--only: unknown workload ${name}\n${usage}`)
    if (!MEASURED.test(name)) throw new Error(`--only: ${name} marks no measured interval (profiled: w1 w64 sustained fanin ask payload-* startup)`)
  }
  const specs = resolveSpecs(opts)
  const perf = opts.perfHz === undefined ? undefined : findPerf()
  if (opts.perfHz !== undefined && perf === undefined) throw new Error("--perf: perf was not found on the PATH")
  // startup reads the CPU of the process it spawned, which under --perf is perf itself.
  if (opts.perfHz !== undefined && opts.only.includes("startup")) throw new Error("--perf: run startup without --perf (it measures the spawned process, which would be perf)")
  const targets = opts.targets.filter((t) => specs.has(t))
  const loadBefore = os.loadavg()
  process.stderr.write(
    `bench:profile: ${selected.map((w) => w.name).join(", ")} × ${targets.join(", ")} × ${opts.reps} reps, ` +
      `--cpu-prof-interval ${opts.intervalUs} µs; load average ${loadBefore.map((x) => x.toFixed(2)).join(" / ")}\n`
  )
  const measured = new Map<string, Measured>()
  const plain = new Map<string, Array<number>>()
  const metrics = new Map<string, Array<Record<string, number>>>()
  const notes: Array<string> = []
  let failed = 0
  const key = (w: string, t: TargetName): string => `${w}\u0001${t}`
  for (let rep = 1; rep <= opts.reps; rep++) {
    const order = rep % 2 === 1 ? targets : [...targets].reverse()
    for (const w of selected) {
      for (const t of order) {
        const spec = specs.get(t)
        if (spec === undefined) continue
        const k = key(w.name, t)
        try {
          const t0 = performance.now()
          const r = await runProfiled(w, spec, opts, `${LABEL[t]}.${rep}`, perf)
          const prev = measured.get(k)
          measured.set(k, prev === undefined ? r.measured : addMeasured(prev, r.measured))
          metrics.set(k, [...(metrics.get(k) ?? []), r.metrics])
          for (const n of r.notes) notes.push(`rep ${rep} ${w.name} ${t}: ${n}`)
          const b = breakdown(r.measured)
          process.stderr.write(
            `[rep ${rep}/${opts.reps}] ${w.name.padEnd(8)} ${t.padEnd(6)} profiled: ${b.total.toFixed(1)} µs/unit over ${r.measured.units} units` +
              `${r.measured.counts === undefined ? "" : `, ${r.measured.counts.samples} samples`} [${((performance.now() - t0) / 1000).toFixed(1)} s]`
          )
          if (opts.unprofiled) {
            const p = await w.run(spec)
            const cpu = plainCpuPerUnit(w.name, p.metrics)
            if (cpu !== undefined) plain.set(k, [...(plain.get(k) ?? []), cpu])
            process.stderr.write(`; plain ${cpu?.toFixed(1) ?? "–"} µs/unit`)
          }
          process.stderr.write("\n")
        } catch (e) {
          failed++
          const msg = e instanceof Error ? e.message : String(e)
          notes.push(`rep ${rep} ${w.name} ${t}: FAILED ${msg}`)
          process.stderr.write(`[rep ${rep}/${opts.reps}] ${w.name} ${t}: FAILED ${msg}\n`)
        }
      }
    }
  }

  const render = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>, rightFrom: number): string =>
    opts.markdown ? markdownTable(header, rows, rightFrom) : table(header, rows, rightFrom)
  const out: Array<string> = []
  const json: Record<string, unknown> = {}
  for (const w of selected) {
    const columns: Array<Column> = []
    for (const t of targets) {
      const m = measured.get(key(w.name, t))
      if (m === undefined) continue
      const p = plain.get(key(w.name, t))
      columns.push({ label: LABEL[t], measured: m, unprofiled: p === undefined ? undefined : median(p) })
    }
    if (columns.length === 0) continue
    const unit = w.name === "ask" ? "round trip" : w.name === "startup" ? "startup (spawn → health_ok)" : "message"
    out.push(`\n${w.name}: CPU µs per ${unit}, profiled runs summed over ${opts.reps} rep(s) (${w.title})\n`)
    const t = workloadTable(columns)
    out.push(render(t.header, t.rows, 1))
    const pt = perfTable(columns)
    if (pt !== undefined) {
      out.push(`\n${w.name}: perf, on-CPU samples of every thread, µs per ${unit} (each thread group's /proc CPU split by its samples)\n`)
      out.push(render(pt.header, pt.rows, 1))
    }
    const perTarget: Record<string, unknown> = {}
    for (const c of columns) {
      const b = breakdown(c.measured)
      for (const n of b.notes) out.push(`  note (${c.label}): ${n}`)
      perTarget[c.label] = {
        units: c.measured.units,
        cpu: c.measured.cpu,
        kernelCounts: c.measured.kernel,
        samples: c.measured.counts?.samples,
        idle: c.measured.counts?.idle,
        byOwner: c.measured.counts?.byOwner,
        breakdown: b,
        groups: groups(b),
        perfSymbols: c.measured.perf === undefined
          ? undefined
          : [...c.measured.perf.bySymbol.entries()].sort((a, b) => b[1] - a[1]).slice(0, 60),
        perfSplit: perfSplit(c.measured),
        unprofiledCpuPerUnit: c.unprofiled,
        metrics: metrics.get(key(w.name, targets.find((x) => LABEL[x] === c.label) ?? "raw")),
        topFunctions: topEntries(c.measured, "byFunction", 40),
        topFiles: topEntries(c.measured, "byFile", 25)
      }
      if (c.label === "relay" || c.measured.counts === undefined) continue
      const top = topEntries(c.measured, "byFunction", 12)
      out.push(`\n${w.name}, ${c.label}: the largest functions by self time (µs per ${unit}, share of busy samples × main-thread CPU)\n`)
      out.push(render(["function", "owner", "samples", "µs"], top.map((e) => [e.name, e.owner, String(e.samples), e.usPerUnit.toFixed(2)]), 2))
      const files = topEntries(c.measured, "byFile", 8, "ours")
      out.push(`\n${w.name}, ${c.label}: our code by file\n`)
      out.push(render(["file", "owner", "samples", "µs"], files.map((e) => [e.name, e.owner, String(e.samples), e.usPerUnit.toFixed(2)]), 2))
    }
    json[w.name] = perTarget
  }
  const loadAfter = os.loadavg()
  out.push(`\nload average: ${loadBefore.map((x) => x.toFixed(2)).join(" / ")} at start, ${loadAfter.map((x) => x.toFixed(2)).join(" / ")} at end; ${os.availableParallelism()} cores; Node ${process.version}`)
  if (notes.length > 0) out.push(`\nNotes:\n${notes.map((n) => `  ${n}`).join("\n")}`)
  process.stdout.write(`${out.join("\n")}\n`)
  fs.mkdirSync(path.dirname(opts.out), { recursive: true })
  fs.writeFileSync(
    opts.out,
    `${JSON.stringify({ date: new Date().toISOString(), options: { ...opts, targets }, loadBefore, loadAfter, node: process.version, workloads: json, notes }, null, 2)}\n`
  )
  process.stdout.write(`\nWrote ${path.relative(process.cwd(), opts.out) || opts.out}\n`)
  return failed > 0 ? 1 : 0
}

Promise.resolve()
  .then(() => main(parseArgs(process.argv.slice(2))))
  .then(
    (code) => {
      cleanupAll()
      process.exit(code)
    },
    (e: unknown) => {
      process.stderr.write(`bench:profile: ${e instanceof Error ? e.message : String(e)}\n`)
      cleanupAll()
      process.exit(2)
    }
  )
