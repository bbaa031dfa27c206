/**
 * `npm run bench:profile` — where each target's CPU per message goes, and
 * where the gap between the broker and the raw relay goes (issue 16's "Done
 * when": the profile that shows which part of the gap is the kernel, V8,
 * Node, effect or our code).
 *
 *   node bench/profile.ts [--only w64,fanin,ask] [--targets raw,broker,memory] [--reps N]
 *                         [--broker-cmd "<cmd>"] [--interval µs] [--no-unprofiled] [--no-cpu-prof]
 *                         [--keep-profiles dir] [--perf] [--perf-hz N] [--markdown] [--quick] [--out file.json]
 *                         [--relay-flags <node flags>]
 *
 * Runs bench/run.ts's workloads (bench/workloads.ts) against bench/targets.ts's
 * targets, each Node target under `--cpu-prof` (bench/profile-run.ts; the
 * options in bench/profile-options.ts). The workloads tell the profiler where
 * their measured interval (after warm-up) starts and ends
 * (`TargetSpec.measure`); inside it the target's CPU is read per thread from
 * /proc (bench/profile-proc.ts), its profile samples are counted by owner
 * (bench/profile-cpuprofile.ts) and, with `--perf`, perf's samples by kind
 * (bench/profile-perf.ts); bench/profile-split.ts joins them. This module runs
 * the reps and prints the tables. Each rep runs every target once profiled
 * and once not (the profiler's overhead); the target order reverses every
 * other rep, as in bench/run.ts. Besides each target's own tables, every
 * workload gets one table of functions side by side (bench/profile-compare.ts):
 * each target's sample count beside its µs per unit, so a comparison shows
 * what each figure rests on. Not part of CI: a measurement, never a test.
 */
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { markdownTable, table } from "./format.ts"
import { runScript } from "./args.ts"
import { MEASURED, type Options, parseArgs, plainCpuPerUnit, resolveSpecs, usage } from "./profile-options.ts"
import { findPerf } from "./profile-perf.ts"
import { functionsSideBySide, NOISE_SAMPLES } from "./profile-compare.ts"
import { addMeasured, runProfiled } from "./profile-run.ts"
import { breakdown, type Column, groups, type Measured, perfSplit, perfTable, topEntries, workloadTable } from "./profile-split.ts"
import { median } from "./stats.ts"
import { installCleanupHandlers, type TargetName } from "./targets.ts"
import { defaultSizes, quickSizes, workloads } from "./workloads.ts"

// ---------------------------------------------------------------- main

const LABEL: Readonly<Record<TargetName, string>> = { raw: "relay", broker: "broker", memory: "memory", nats: "nats" }

const main = async (opts: Options): Promise<number> => {
  installCleanupHandlers()
  process.removeAllListeners("warning")
  const all = workloads(opts.quick ? quickSizes : defaultSizes)
  const selected = all.filter((w) => opts.only.includes(w.name))
  for (const name of opts.only) {
    if (!all.some((w) => w.name === name)) throw new Error(`--only: unknown workload ${name}\n${usage}`)
    if (!MEASURED.test(name)) throw new Error(`--only: ${name} marks no measured interval (profiled: w1 w64 sustained w64-steady fanin fanin-steady ask payload-* startup)`)
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
    if (columns.filter((c) => c.measured.counts !== undefined).length > 0) {
      const side = functionsSideBySide(columns.filter((c) => c.measured.counts !== undefined), 12)
      out.push(`\n${w.name}: functions side by side, each target's 12 largest by self samples (samples / µs per ${unit}; ~: under ${NOISE_SAMPLES} samples, counting noise)\n`)
      out.push(render(side.header, side.rows, 2))
    }
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
  out.push(`\nload average: ${loadBefore.map((x) => x.toFixed(2)).join(" / ")} at start, ${loadAfter.map((x) => x.toFixed(2)).join(" / ")} at end; ${os.availableParallelism()} cores; Node ${process.version}` +
    `${opts.relayFlags.length === 0 ? "" : `; relay started with ${opts.relayFlags.join(" ")}`}`)
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

runScript("bench:profile", () => main(parseArgs(process.argv.slice(2))))
