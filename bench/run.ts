/**
 * `npm run bench` — black-box benchmark of the broker, side by side with the
 * broker in memory mode, the raw relay and (when `nats-server` is on the PATH)
 * a NATS server as an outside reference.
 *
 *   node bench/run.ts [--reps N] [--quick] [--only w64,ask,...] [--targets raw,broker,memory,nats]
 *                     [--target broker|raw|both] [--baseline raw|memory] [--no-nats]
 *                     [--broker-cmd "node bench/raw-relay.ts {sock}"] [--out file.json] [--ci]
 *
 * Runs are interleaved rep → workload → target (target order reverses every
 * other rep). Each run uses a fresh process in a fresh temp dir. Reported
 * values are medians over reps; ratios are computed within each rep, then the
 * median is taken. `--ci` is the short non-gating run `npm test` ends with: it
 * always exits 0. See docs/performance.md.
 */
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { BUNDLED_CLI, brokerEntryPoint } from "../src/config/install.ts"
import { eachArg, helpOrUnknown, parseTargets } from "./args.ts"
import { checkNames, issue16Checks } from "./checks.ts"
import { fmt, headline, pad, table } from "./format.ts"
import { type RunRecord, summarize, tableHeader, tableRows } from "./summary.ts"
import {
  brokerSpec,
  cleanupAll,
  customBrokerSpec,
  findNatsServer,
  installCleanupHandlers,
  isBroker,
  memoryBrokerSpec,
  natsSpec,
  rawSpec,
  repoRoot,
  TARGET_ORDER,
  type TargetName,
  type TargetSpec
} from "./targets.ts"
import { defaultSizes, quickSizes, selectWorkloads, type Sizes, type Workload, workloads } from "./workloads.ts"

// ---------------------------------------------------------------- options

interface Options {
  reps: number
  quick: boolean
  only: Array<string>
  /** Explicit columns (`--targets`, or what `--target` / `--baseline` imply); undefined: every one available. */
  targets: Array<TargetName> | undefined
  nats: boolean
  brokerCmd: string | undefined
  out: string
  regConcurrency: number | undefined
  ci: boolean
}

const usage = `usage: node bench/run.ts [--reps N] [--quick] [--only name[,name...]] [--targets raw,broker,memory,nats]
                         [--target broker|raw|both] [--baseline raw|memory] [--no-nats] [--ci]
                         [--broker-cmd "<cmd with {dir}/{sock}>"] [--reg-concurrency N] [--out file.json]
targets: raw (the raw relay), broker (ours, durable: the default), memory (ours, --durability memory),
         nats (nats-server from the PATH; skipped with a note when absent). Default: all of them.
         --target broker|raw|both and --baseline memory (= --targets memory,broker) are kept for old scripts.
--ci:    the short non-gating run (quick sizes, 1 rep, w64 fanin ask startup cli-send against raw and broker,
         w64 also against memory); prints its table and always exits 0.
workloads: w1 w64 sustained fanin ask payload-100B payload-10KiB payload-500KiB idle-1k idle-10k idle-50k
           storm-1k startup cli-send replace-storm topic-fanout   (a prefix selects a group: "payload", "idle")
           opt-in, only by their full name: w64-steady fanin-steady ask-granted idle-10k-settled`

/** The workloads of `--ci`. */
const CI_WORKLOADS = ["w64", "fanin", "ask", "startup", "cli-send"]

/** `--ci` runs memory mode only where a target compares with it (durable vs memory, w64): it keeps the run short. */
const CI_MEMORY_WORKLOADS = ["w64"]

const parseArgs = (argv: ReadonlyArray<string>): Options => {
  const o: Options = {
    reps: 3,
    quick: false,
    only: [],
    targets: undefined,
    nats: true,
    brokerCmd: process.env["BENCH_BROKER_CMD"],
    out: path.join(repoRoot, "bench", "results", "latest.json"),
    regConcurrency: undefined,
    ci: false
  }
  let repsGiven = false
  let outGiven = false
  eachArg(argv, usage, (arg) => {
    const { key, value } = arg
    switch (key) {
      case "--reps":
        o.reps = arg.int(1, 50)
        repsGiven = true
        break
      case "--quick":
        o.quick = true
        break
      case "--ci":
        o.ci = true
        break
      case "--only":
        o.only.push(...arg.list())
        break
      case "--targets":
        o.targets = parseTargets(arg.list())
        break
      case "--target": {
        const t = value()
        if (t !== "broker" && t !== "raw" && t !== "both") throw new Error(`--target must be broker, raw or both`)
        o.targets = t === "both" ? undefined : [t]
        break
      }
      case "--baseline": {
        const b = value()
        if (b !== "raw" && b !== "memory") throw new Error(`--baseline must be raw or memory`)
        // memory: our broker in memory mode is the baseline, as issue 13 measured it (durable vs memory).
        if (b === "memory") o.targets = ["memory", "broker"]
        break
      }
      case "--no-nats":
        o.nats = false
        break
      case "--broker-cmd":
        o.brokerCmd = value()
        break
      case "--reg-concurrency":
        o.regConcurrency = arg.int(1, 4096)
        break
      case "--out":
        o.out = path.resolve(value())
        outGiven = true
        break
      default:
        helpOrUnknown(arg, usage)
    }
  })
  if (o.ci) {
    o.quick = true
    o.nats = false
    if (o.only.length === 0) o.only = [...CI_WORKLOADS]
    o.targets ??= ["raw", "broker", "memory"]
    if (!outGiven) o.out = path.join(repoRoot, "bench", "results", "ci.json")
  }
  if (o.quick && !repsGiven) o.reps = 1
  return o
}

// ---------------------------------------------------------------- targets

/** The specs of the columns to run, in table order, with a note for each one skipped. */
const resolveTargets = (opts: Options, notes: Array<string>): Map<TargetName, TargetSpec> => {
  const wanted = opts.targets ?? TARGET_ORDER.filter((t) => t !== "nats" || opts.nats)
  const specs = new Map<TargetName, TargetSpec>()
  const built = fs.existsSync(brokerEntryPoint())
  const note = (msg: string): void => {
    notes.push(msg)
    process.stderr.write(`bench: ${msg}\n`)
  }
  for (const t of TARGET_ORDER) {
    if (!wanted.includes(t)) continue
    if (t === "raw") specs.set(t, rawSpec)
    else if (t === "broker" && opts.brokerCmd !== undefined) specs.set(t, customBrokerSpec(opts.brokerCmd))
    else if (t === "broker" || t === "memory") {
      if (built) specs.set(t, t === "broker" ? brokerSpec : memoryBrokerSpec)
    } else {
      const binary = findNatsServer()
      if (binary === undefined) note("nats-server not found on the PATH: the NATS column is skipped (apt-get install nats-server)")
      else specs.set(t, natsSpec(binary))
    }
  }
  if (!built && (wanted.includes("memory") || (wanted.includes("broker") && opts.brokerCmd === undefined))) {
    note("the built CLI was not found (run `npm run build`); broker columns are skipped")
  } else if (built && !brokerEntryPoint().endsWith(BUNDLED_CLI)) {
    note(`${BUNDLED_CLI} not found: the broker runs unbundled from ${brokerEntryPoint()} (slow startup)`)
  }
  return specs
}

// ---------------------------------------------------------------- main

/** Drops Node's ExperimentalWarning for stripTypeScriptTypes (used to prepare the raw relay). */
const quietExperimentalWarnings = (): void => {
  process.removeAllListeners("warning")
  process.on("warning", (w) => {
    if (w.name !== "ExperimentalWarning") process.stderr.write(`${w.name}: ${w.message}\n`)
  })
}

const runOne = async (w: Workload, spec: TargetSpec, rep: number): Promise<RunRecord | undefined> => {
  const run = spec.name === "nats" ? w.natsRun : w.brokerOnly === true && !isBroker(spec) ? undefined : w.run
  if (run === undefined) return undefined // no equivalent on this target
  const t0 = performance.now()
  try {
    const r = await run(spec)
    return { rep, workload: w.name, target: spec.name, ok: true, metrics: r.metrics, notes: r.notes, wallMs: performance.now() - t0 }
  } catch (e) {
    const error = e instanceof Error ? e.message : String(e)
    return { rep, workload: w.name, target: spec.name, ok: false, metrics: {}, notes: [], error, wallMs: performance.now() - t0 }
  }
}

const main = async (opts: Options): Promise<number> => {
  quietExperimentalWarnings()
  installCleanupHandlers()
  // --ci: quick sizes with two startup spawns and two CLI sends, to stay inside its 40 s on a busy 2-core machine.
  const base = opts.ci ? { ...quickSizes, startupSpawns: 2, cliSends: 2 } : opts.quick ? quickSizes : defaultSizes
  const sizes: Sizes = opts.regConcurrency === undefined ? base : { ...base, regConcurrency: opts.regConcurrency }
  const all = workloads(sizes)
  const selected: Array<Workload> = selectWorkloads(all, opts.only)

  const notes: Array<string> = []
  const specs = resolveTargets(opts, notes)
  if (specs.size === 0) throw new Error("no target to run")
  const targets = [...specs.keys()]

  const started = new Date()
  const loadBefore = os.loadavg()
  if ((loadBefore[0] ?? 0) > 0.5) {
    const msg = `1-minute load average is ${(loadBefore[0] ?? 0).toFixed(2)} at start: other work on this machine will add noise`
    notes.push(msg)
    process.stderr.write(`bench: ${msg}\n`)
  }
  process.stderr.write(
    `bench: ${selected.length} workloads × ${targets.join(", ")} × ${opts.reps} reps${opts.quick ? " (quick)" : ""}\n`
  )
  const runs: Array<RunRecord> = []
  for (let rep = 1; rep <= opts.reps; rep++) {
    const order = rep % 2 === 1 ? targets : [...targets].reverse()
    for (const w of selected) {
      for (const t of order) {
        const spec = specs.get(t)
        if (spec === undefined) continue
        if (opts.ci && t === "memory" && !CI_MEMORY_WORKLOADS.includes(w.name)) continue
        const rec = await runOne(w, spec, rep)
        if (rec === undefined) continue
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

  // ---- the side-by-side table
  const names = selected.map((w) => w.name)
  const summary = summarize(runs, names, targets, opts.reps)
  const brokerIs = opts.brokerCmd === undefined ? "ours, durable" : "--broker-cmd"
  process.stdout.write(
    `\nResults (median over reps; a/b = median of same-rep ratios; broker = ${brokerIs}; memory = ours, --durability memory)\n\n`
  )
  process.stdout.write(`${table(tableHeader(targets), tableRows(summary, runs, names, targets, opts.reps))}\n`)

  const failed = runs.filter((r) => !r.ok)
  if (failed.length > 0) {
    process.stdout.write(`\nFailed runs:\n`)
    for (const r of failed) process.stdout.write(`  rep ${r.rep} ${r.workload} ${r.target}: ${r.error ?? ""}\n`)
  }
  const noted = runs.filter((r) => r.notes.length > 0)
  if (noted.length > 0 || notes.length > 0) {
    process.stdout.write(`\nNotes:\n`)
    for (const n of notes) process.stdout.write(`  ${n}\n`)
    for (const r of noted) process.stdout.write(`  rep ${r.rep} ${r.workload} ${r.target}: ${r.notes.join("; ")}\n`)
  }

  // ---- targets (issue 16)
  const checks = issue16Checks(summary, checkNames(sizes))
  process.stdout.write(`\nTargets (issue 16; n/a: not measured in this run)\n\n`)
  process.stdout.write(`${table(["status", "target", "bound", "measured"], checks.map((c) => [c.status, c.name, c.target, c.value]), 9)}\n`)

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
      ci: opts.ci,
      only: opts.only,
      targets,
      brokerCmd: opts.brokerCmd ?? null
    },
    sizes,
    notes,
    workloads: names,
    runs,
    summary,
    checks
  }
  fs.mkdirSync(path.dirname(opts.out), { recursive: true })
  fs.writeFileSync(opts.out, `${JSON.stringify(result, null, 2)}\n`)
  process.stdout.write(`\nWrote ${path.relative(process.cwd(), opts.out) || opts.out} (${(result.durationSec).toFixed(0)} s)\n`)
  return failed.length > 0 ? 1 : 0
}

/** `--ci` never fails the build: its own errors are printed and the exit code is 0. */
const CI_WATCHDOG_MS = 120_000

const ciMode = process.argv.includes("--ci")
const exit = (code: number): never => {
  cleanupAll()
  process.exit(ciMode ? 0 : code)
}
if (ciMode) {
  setTimeout(() => {
    process.stderr.write(`bench --ci: still running after ${CI_WATCHDOG_MS / 1000} s; stopped (non-gating)\n`)
    exit(0)
  }, CI_WATCHDOG_MS).unref()
}
Promise.resolve()
  .then(() => main(parseArgs(process.argv.slice(2))))
  .then(
    (code) => {
      if (ciMode && code !== 0) process.stderr.write(`bench --ci: some runs failed (see above); non-gating, exit 0\n`)
      exit(code)
    },
    (e: unknown) => {
      process.stderr.write(`bench${ciMode ? " --ci" : ""}: ${e instanceof Error ? e.message : String(e)}\n`)
      exit(2)
    }
  )
