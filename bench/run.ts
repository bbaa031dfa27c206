/**
 * `npm run bench` — black-box benchmark of the broker against the raw relay.
 *
 *   node bench/run.ts [--reps N] [--quick] [--only w64,ask,...] [--target broker|raw|both]
 *                     [--broker-cmd "node bench/raw-relay.ts {sock}"] [--out file.json]
 *
 * Runs are interleaved rep → workload → target (target order alternates per
 * rep). Each run uses a fresh process in a fresh temp dir. Reported values are
 * medians over reps; ratios are broker/raw computed within each rep, then the
 * median is taken. See docs/performance.md.
 */
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { BUNDLED_CLI, brokerEntryPoint } from "../src/config/install.ts"
import { fmt, fmtRatio, headline, pad, table } from "./format.ts"
import { median } from "./stats.ts"
import {
  brokerSpec,
  cleanupAll,
  customBrokerSpec,
  installCleanupHandlers,
  memoryBrokerSpec,
  rawSpec,
  repoRoot,
  type TargetName,
  type TargetSpec
} from "./targets.ts"
import { defaultSizes, type Metrics, quickSizes, type Workload, workloads } from "./workloads.ts"

// ---------------------------------------------------------------- options

interface Options {
  reps: number
  quick: boolean
  only: Array<string>
  target: "broker" | "raw" | "both"
  brokerCmd: string | undefined
  out: string
  regConcurrency: number | undefined
  /** What the broker is compared with: the raw relay, or the broker itself with `--durability memory`. */
  baseline: "raw" | "memory"
}

const usage = `usage: node bench/run.ts [--reps N] [--quick] [--only name[,name...]] [--target broker|raw|both]
                         [--broker-cmd "<cmd with {dir}/{sock}>"] [--reg-concurrency N] [--out file.json]
                         [--baseline raw|memory]   (memory: the baseline column is our broker with --durability memory)
workloads: w1 w64 sustained fanin ask payload-100B payload-10KiB payload-500KiB idle-1k idle-10k startup replace-storm topic-fanout
           (a prefix selects a group: "payload", "idle")`

const parseArgs = (argv: ReadonlyArray<string>): Options => {
  const o: Options = {
    reps: 3,
    quick: false,
    only: [],
    target: "both",
    brokerCmd: process.env["BENCH_BROKER_CMD"],
    out: path.join(repoRoot, "bench", "results", "latest.json"),
    regConcurrency: undefined,
    baseline: "raw"
  }
  let repsGiven = false
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
    switch (key) {
      case "--reps": {
        const n = Number(value())
        if (!Number.isInteger(n) || n < 1 || n > 50) throw new Error("--reps must be an integer in 1..50")
        o.reps = n
        repsGiven = true
        break
      }
      case "--quick":
        o.quick = true
        break
      case "--only":
        o.only.push(...value().split(",").map((s) => s.trim()).filter((s) => s !== ""))
        break
      case "--target": {
        const t = value()
        if (t !== "broker" && t !== "raw" && t !== "both") throw new Error(`--target must be broker, raw or both`)
        o.target = t
        break
      }
      case "--broker-cmd":
        o.brokerCmd = value()
        break
      case "--baseline": {
        const b = value()
        if (b !== "raw" && b !== "memory") throw new Error(`--baseline must be raw or memory`)
        o.baseline = b
        break
      }
      case "--reg-concurrency": {
        const n = Number(value())
        if (!Number.isInteger(n) || n < 1 || n > 4096) throw new Error("--reg-concurrency must be an integer in 1..4096")
        o.regConcurrency = n
        break
      }
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
  if (o.quick && !repsGiven) o.reps = 1
  return o
}

// ---------------------------------------------------------------- main

interface RunRecord {
  readonly rep: number
  readonly workload: string
  readonly target: TargetName
  readonly ok: boolean
  readonly metrics: Metrics
  readonly notes: Array<string>
  readonly error?: string
  readonly wallMs: number
}

interface Summary {
  readonly raw: number | undefined
  readonly broker: number | undefined
  readonly ratio: number | undefined
  readonly ratios: Array<number>
}

interface Check {
  readonly name: string
  readonly target: string
  readonly value: string
  readonly status: "PASS" | "FAIL" | "n/a"
}

/** Drops Node's ExperimentalWarning for stripTypeScriptTypes (used to prepare the raw relay). */
const quietExperimentalWarnings = (): void => {
  process.removeAllListeners("warning")
  process.on("warning", (w) => {
    if (w.name !== "ExperimentalWarning") process.stderr.write(`${w.name}: ${w.message}\n`)
  })
}

const main = async (): Promise<number> => {
  const opts = parseArgs(process.argv.slice(2))
  quietExperimentalWarnings()
  installCleanupHandlers()
  const base = opts.quick ? quickSizes : defaultSizes
  const sizes = opts.regConcurrency === undefined ? base : { ...base, regConcurrency: opts.regConcurrency }
  const all = workloads(sizes)
  const selected: Array<Workload> = opts.only.length === 0
    ? all
    : all.filter((w) => opts.only.some((o) => w.name.startsWith(o)))
  if (selected.length === 0) throw new Error(`--only matched no workload\n${usage}`)

  const specs = new Map<TargetName, TargetSpec>()
  const notes: Array<string> = []
  // The baseline runs in the "raw" slot: the relay, or our broker in memory mode (durable vs memory, issue 13).
  if (opts.target !== "broker") specs.set("raw", opts.baseline === "memory" ? memoryBrokerSpec : rawSpec)
  if (opts.target !== "raw") {
    if (opts.brokerCmd !== undefined) specs.set("broker", customBrokerSpec(opts.brokerCmd))
    else if (fs.existsSync(brokerEntryPoint())) {
      specs.set("broker", brokerSpec)
      if (!brokerEntryPoint().endsWith(BUNDLED_CLI)) {
        const msg = `${BUNDLED_CLI} not found: the broker runs unbundled from ${brokerEntryPoint()} (slow startup)`
        notes.push(msg)
        process.stderr.write(`bench: ${msg}\n`)
      }
    } else {
      const msg = "the built CLI was not found (run `npm run build`); broker columns are skipped"
      notes.push(msg)
      process.stderr.write(`bench: ${msg}\n`)
    }
  }
  if (specs.size === 0) throw new Error("no target to run")

  const started = new Date()
  const loadBefore = os.loadavg()
  if ((loadBefore[0] ?? 0) > 0.5) {
    const msg = `1-minute load average is ${(loadBefore[0] ?? 0).toFixed(2)} at start: other work on this machine will add noise`
    notes.push(msg)
    process.stderr.write(`bench: ${msg}\n`)
  }
  process.stderr.write(
    `bench: ${selected.length} workloads × ${specs.size} targets × ${opts.reps} reps${opts.quick ? " (quick)" : ""}\n`
  )
  const runs: Array<RunRecord> = []
  for (let rep = 1; rep <= opts.reps; rep++) {
    for (const w of selected) {
      const order: Array<TargetName> = rep % 2 === 1 ? ["raw", "broker"] : ["broker", "raw"]
      for (const t of order) {
        const spec = specs.get(t)
        if (spec === undefined) continue
        const t0 = performance.now()
        let rec: RunRecord
        try {
          const r = await w.run(spec)
          rec = { rep, workload: w.name, target: t, ok: true, metrics: r.metrics, notes: r.notes, wallMs: performance.now() - t0 }
        } catch (e) {
          const error = e instanceof Error ? e.message : String(e)
          rec = { rep, workload: w.name, target: t, ok: false, metrics: {}, notes: [], error, wallMs: performance.now() - t0 }
        }
        runs.push(rec)
        const shown = headline(w.name).map(([k, label]) => `${label} ${fmt(rec.metrics[k])}`).join(", ")
        process.stderr.write(
          `[rep ${rep}/${opts.reps}] ${pad(w.name, 14)} ${pad(t, 6)} ${
            rec.ok ? shown : `ERROR ${rec.error ?? ""}`
          }${rec.notes.length > 0 ? ` (${rec.notes.join("; ")})` : ""} [${(rec.wallMs / 1000).toFixed(1)} s]\n`
        )
      }
    }
  }

  // ---- summary: medians per target, median of same-rep ratios
  const summary: Record<string, Record<string, Summary>> = {}
  for (const w of selected) {
    const metricNames = new Set<string>()
    for (const r of runs) if (r.workload === w.name) for (const k of Object.keys(r.metrics)) metricNames.add(k)
    const perMetric: Record<string, Summary> = {}
    for (const m of metricNames) {
      const values = (t: TargetName): Array<number> =>
        runs.filter((r) => r.workload === w.name && r.target === t && r.ok).map((r) => r.metrics[m] ?? Number.NaN)
      const ratios: Array<number> = []
      for (let rep = 1; rep <= opts.reps; rep++) {
        const raw = runs.find((r) => r.rep === rep && r.workload === w.name && r.target === "raw" && r.ok)?.metrics[m]
        const br = runs.find((r) => r.rep === rep && r.workload === w.name && r.target === "broker" && r.ok)?.metrics[m]
        if (raw !== undefined && br !== undefined && Number.isFinite(raw / br) && raw !== 0) ratios.push(br / raw)
      }
      const rawVals = values("raw")
      const brVals = values("broker")
      perMetric[m] = {
        raw: rawVals.length > 0 ? median(rawVals) : undefined,
        broker: brVals.length > 0 ? median(brVals) : undefined,
        ratio: ratios.length > 0 ? median(ratios) : undefined,
        ratios
      }
    }
    summary[w.name] = perMetric
  }

  // ---- table
  const rows: Array<Array<string>> = []
  for (const w of selected) {
    const okCount = (t: TargetName): string =>
      specs.has(t) ? `${runs.filter((r) => r.workload === w.name && r.target === t && r.ok).length}/${opts.reps}` : "–"
    headline(w.name).forEach(([k, label], i) => {
      const s = summary[w.name]?.[k]
      rows.push([
        i === 0 ? w.name : "",
        label,
        fmt(s?.raw),
        fmt(s?.broker),
        fmtRatio(s?.ratio),
        i === 0 ? `${okCount("raw")} / ${okCount("broker")}` : ""
      ])
    })
  }
  const baseName = opts.baseline === "memory" ? "memory" : "raw"
  const ours = opts.baseline === "memory" ? "durable" : "broker"
  process.stdout.write(`\nResults (median over reps; ${ours}/${baseName} = median of same-rep ratios)\n\n`)
  process.stdout.write(`${table(["workload", "metric", baseName, ours, `${ours}/${baseName}`, `ok ${baseName} / ${ours}`], rows)}\n`)

  const failed = runs.filter((r) => !r.ok)
  if (failed.length > 0) {
    process.stdout.write(`\nFailed runs:\n`)
    for (const r of failed) process.stdout.write(`  rep ${r.rep} ${r.workload} ${r.target}: ${r.error ?? ""}\n`)
  }
  const noted = runs.filter((r) => r.notes.length > 0)
  if (noted.length > 0) {
    process.stdout.write(`\nNotes:\n`)
    for (const r of noted) process.stdout.write(`  rep ${r.rep} ${r.workload} ${r.target}: ${r.notes.join("; ")}\n`)
  }

  // ---- targets
  const checks: Array<Check> = []
  const ratioCheck = (name: string, workload: string, metric: string, op: ">=" | "<=", bound: number): void => {
    const r = summary[workload]?.[metric]?.ratio
    const status = r === undefined ? "n/a" : (op === ">=" ? r >= bound : r <= bound) ? "PASS" : "FAIL"
    checks.push({ name, target: `broker/raw ${op} ${bound}`, value: fmtRatio(r), status })
  }
  if (opts.baseline === "memory") {
    // Issue 13: durable mode keeps at least 0.7× memory mode's speed (latency at most 1/0.7×).
    ratioCheck("durable vs memory: window-64 throughput", "w64", "msgPerSec", ">=", 0.7)
    ratioCheck("durable vs memory: fan-in 16→1 throughput", "fanin", "msgPerSec", ">=", 0.7)
    ratioCheck("durable vs memory: ask round-trip p50", "ask", "p50Us", "<=", 1.43)
  } else {
    ratioCheck("window-64 throughput", "w64", "msgPerSec", ">=", 0.7)
    ratioCheck("fan-in 16→1 throughput", "fanin", "msgPerSec", ">=", 0.6)
    ratioCheck("ask round-trip p50", "ask", "p50Us", "<=", 1.4)
  }
  const idleNames = selected.filter((w) => w.name.startsWith("idle-")).map((w) => w.name)
  const largest = sizes.idle.reduce((a, b) => (b.k > a.k ? b : a), { k: 0, scopeSize: 0 })
  const idleName = idleNames.find((n) => n === `idle-${largest.k % 1000 === 0 ? `${largest.k / 1000}k` : largest.k}`)
  {
    const v = idleName === undefined ? undefined : summary[idleName]?.["rssPerSessionKiB"]?.broker
    checks.push({
      name: `${largest.k.toLocaleString("en-US")} sessions: broker RSS per session`,
      target: "<= 16 KiB",
      value: v === undefined ? "–" : `${fmt(v)} KiB`,
      status: v === undefined ? "n/a" : v <= 16 ? "PASS" : "FAIL"
    })
  }
  {
    const v = summary["startup"]?.["healthMs"]?.broker
    checks.push({
      name: "broker spawn → health_ok",
      target: "<= 150 ms",
      value: v === undefined ? "–" : `${fmt(v)} ms`,
      status: v === undefined ? "n/a" : v <= 150 ? "PASS" : "FAIL"
    })
  }
  process.stdout.write(`\nTargets\n\n`)
  process.stdout.write(`${table(["status", "check", "target", "measured"], checks.map((c) => [c.status, c.name, c.target, c.value]), 9)}\n`)

  // ---- JSON
  const result = {
    date: started.toISOString(),
    durationSec: (Date.now() - started.getTime()) / 1000,
    machine: {
      nproc: os.availableParallelism(),
      cpu: os.cpus()[0]?.model ?? "unknown",
      memGiB: Math.round(os.totalmem() / 2 ** 30),
      node: process.version,
      platform: `${os.platform()} ${os.release()}`,
      loadavgBefore: loadBefore,
      loadavgAfter: os.loadavg()
    },
    options: {
      reps: opts.reps,
      quick: opts.quick,
      only: opts.only,
      target: opts.target,
      brokerCmd: opts.brokerCmd ?? null,
      baseline: opts.baseline
    },
    sizes,
    notes,
    runs,
    summary,
    checks
  }
  fs.mkdirSync(path.dirname(opts.out), { recursive: true })
  fs.writeFileSync(opts.out, `${JSON.stringify(result, null, 2)}\n`)
  process.stdout.write(`\nWrote ${path.relative(process.cwd(), opts.out) || opts.out} (${(result.durationSec).toFixed(0)} s)\n`)
  return failed.length > 0 ? 1 : 0
}

main().then(
  (code) => {
    cleanupAll()
    process.exit(code)
  },
  (e: unknown) => {
    process.stderr.write(`bench: ${e instanceof Error ? e.message : String(e)}\n`)
    cleanupAll()
    process.exit(2)
  }
)
