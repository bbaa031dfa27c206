/**
 * A/B of two builds of the broker: the same workloads against both, and the
 * raw relay beside them, in alternating rounds, with paired ratios.
 *
 *   node bench/ab.ts --base <commit or built tree> [--cand <built tree>] [--only w64,fanin,ask]
 *                    [--base-flags "<node flags>"] [--cand-flags "<node flags>"]
 *                    [--rounds 6] [--durability durable|memory] [--no-raw] [--quick] [--out file.json]
 *
 * Why a tool: a change worth a few per cent is inside one run's noise on a
 * shared 2-core machine (the same build's ratio to the relay moves by ±0.1
 * between runs), and comparing two `npm run bench` tables taken minutes
 * apart compares the load as much as the code. Here each round runs every
 * workload on the relay, then the base and the candidate back to back (the
 * two swapping places every round), so a round's cand ÷ base ratio sees the same
 * machine; the report gives the median ratio, its range, how many rounds
 * the candidate won and the sign test's p-value (bench/paired.ts). `--base`
 * and `--cand` naming the same tree measure the noise floor; with
 * `--cand-flags` they screen a V8 flag (added after the client's own,
 * `BROKER_NODE_FLAGS`).
 *
 * `--base` is a built tree (a directory with `dist/bin/intercom.mjs`) or a
 * git commit of this repository, which is exported to
 * `$TMPDIR/intercom-ab/<sha>`, given this tree's `node_modules` by a
 * symlink, and built there once (later runs reuse it): built in a directory
 * of the run's own and renamed into place, so two runs with the same base at
 * once do not clobber each other's build (bench/ab-tree.ts). `--cand` defaults to
 * this tree, which must be built (`npm run build`). Each run is a fresh
 * broker process in a fresh temp dir, as in `bench/run.ts`. Workloads that
 * spawn this tree's CLI (`cli-send`) are refused: they would not measure
 * the base's. See docs/performance.md, "Running it".
 */
import { execFileSync, execSync } from "node:child_process"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { BUNDLED_CLI } from "../src/config/install.ts"
import { buildOnce, isBuilt } from "./ab-tree.ts"
import { eachArg, helpOrUnknown, runScript } from "./args.ts"
import { fmt, fmtRatio, headline, pad, table } from "./format.ts"
import type { Metrics } from "./harness.ts"
import { higherIsBetter, loadCaution, type Pair, pairedSummary } from "./paired.ts"
import { median } from "./stats.ts"
import { installCleanupHandlers, rawSpec, repoRoot, type TargetSpec, treeBrokerSpec } from "./targets.ts"
import { defaultSizes, quickSizes, selectWorkloads, type Workload, workloads } from "./workloads.ts"

const usage = `usage: node bench/ab.ts --base <commit|built tree> [--cand <built tree>] [--only name[,name...]]
                        [--base-flags "<node flags>"] [--cand-flags "<node flags>"]
                        [--rounds N] [--durability durable|memory] [--no-raw] [--quick] [--out file.json]
  --base        the build to compare against: a git commit of this repo (exported and built once under
                $TMPDIR/intercom-ab/) or a directory holding a built tree (dist/bin/intercom.mjs)
  --cand        the build under test (default: this tree, built with npm run build)
  --base-flags, --cand-flags
                node/V8 flags for that column's broker, after the client's own (e.g. "--max-opt=2")
  --only        workloads (default: w64,fanin,ask); cli-send is refused (it runs this tree's CLI)
  --rounds      alternating rounds (default 6; the sign test needs 6 one-sided rounds to reach p < 0.05)
  --durability  the mode both brokers run in (default durable, as a client spawns it)
  --no-raw      leave out the raw relay's column (faster; no ratios to the relay)`

interface Options {
  base: string | undefined
  cand: string
  baseFlags: Array<string>
  candFlags: Array<string>
  only: Array<string>
  rounds: number
  durability: "durable" | "memory"
  raw: boolean
  quick: boolean
  out: string
}

const parseArgs = (argv: ReadonlyArray<string>): Options => {
  const o: Options = {
    base: undefined,
    cand: repoRoot,
    baseFlags: [],
    candFlags: [],
    only: ["w64", "fanin", "ask"],
    rounds: 6,
    durability: "durable",
    raw: true,
    quick: false,
    out: path.join(repoRoot, "bench", "results", "ab.json")
  }
  eachArg(argv, usage, (arg) => {
    switch (arg.key) {
      case "--base":
        o.base = arg.value()
        break
      case "--cand":
        o.cand = path.resolve(arg.value())
        break
      case "--base-flags":
        o.baseFlags = arg.value().split(/\s+/).filter((f) => f !== "")
        break
      case "--cand-flags":
        o.candFlags = arg.value().split(/\s+/).filter((f) => f !== "")
        break
      case "--only":
        o.only = arg.list()
        break
      case "--rounds":
        o.rounds = arg.int(1, 100)
        break
      case "--durability": {
        const d = arg.value()
        if (d !== "durable" && d !== "memory") throw new Error(`--durability must be durable or memory\n${usage}`)
        o.durability = d
        break
      }
      case "--no-raw":
        o.raw = false
        break
      case "--quick":
        o.quick = true
        break
      case "--out":
        o.out = path.resolve(arg.value())
        break
      default:
        helpOrUnknown(arg, usage)
    }
  })
  if (o.base === undefined) throw new Error(`--base is required\n${usage}`)
  return o
}

// ---------------------------------------------------------------- trees

/** A built tree for `spec`: the directory itself, or the commit exported and built under the temp dir. */
const treeFor = (spec: string, flag: string): string => {
  const dir = path.resolve(spec)
  if (fs.existsSync(dir) && fs.statSync(dir).isDirectory()) {
    if (!isBuilt(dir)) throw new Error(`${flag} ${spec}: no ${BUNDLED_CLI} there; run \`npm run build\` in it first`)
    return dir
  }
  let sha: string
  try {
    sha = execFileSync("git", ["-C", repoRoot, "rev-parse", "--verify", "--quiet", `${spec}^{commit}`], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"]
    }).trim()
  } catch {
    throw new Error(`${flag} ${spec}: neither a directory nor a commit of ${repoRoot}`)
  }
  const tree = path.join(os.tmpdir(), "intercom-ab", sha.slice(0, 12))
  try {
    // Built in a directory of this run's and renamed into place: another run with the same base at once
    // neither removes nor writes into this run's build, nor this run into its (ab-tree.ts).
    return buildOnce(tree, (work) => {
      process.stderr.write(`ab: exporting ${sha.slice(0, 12)} to ${work} and building it (once, for ${tree})\n`)
      execSync(`git -C ${JSON.stringify(repoRoot)} archive ${sha} | tar -x -C ${JSON.stringify(work)}`, { stdio: "inherit" })
      fs.symlinkSync(path.join(repoRoot, "node_modules"), path.join(work, "node_modules"), "dir")
      execFileSync("npm", ["run", "build"], { cwd: work, stdio: ["ignore", process.stderr, process.stderr] })
    })
  } catch (e) {
    throw new Error(`${flag} ${spec}: ${e instanceof Error ? e.message : String(e)}`)
  }
}

// ---------------------------------------------------------------- runs

type Column = "raw" | "base" | "cand"

interface Reading {
  readonly round: number
  readonly workload: string
  readonly column: Column
  readonly metrics: Metrics | undefined
  readonly error?: string
}

const runOne = async (w: Workload, spec: TargetSpec): Promise<{ metrics?: Metrics; error?: string }> => {
  try {
    return { metrics: (await w.run(spec)).metrics }
  } catch (e) {
    return { error: e instanceof Error ? e.message : String(e) }
  }
}

const main = async (opts: Options): Promise<number> => {
  installCleanupHandlers()
  // The workloads first: a bad --only is refused before a base commit is exported and built (minutes).
  const sizes = opts.quick ? quickSizes : defaultSizes
  const selected = selectWorkloads(workloads(sizes), opts.only)
  if (selected.some((w) => w.name === "cli-send")) {
    throw new Error("cli-send spawns this tree's `intercom send`, not the base's: compare it with two `npm run bench` runs")
  }
  const base = treeFor(opts.base ?? "", "--base")
  const cand = treeFor(opts.cand, "--cand")
  const specs: Record<Column, TargetSpec> = {
    raw: rawSpec,
    base: treeBrokerSpec(base, opts.durability, opts.baseFlags),
    cand: treeBrokerSpec(cand, opts.durability, opts.candFlags)
  }
  const columns: ReadonlyArray<Column> = opts.raw ? ["raw", "base", "cand"] : ["base", "cand"]
  const load = os.loadavg()
  process.stderr.write(
    `ab: base ${base} ${opts.baseFlags.join(" ")}\nab: cand ${cand} ${opts.candFlags.join(" ")}\nab: ${selected.map((w) => w.name).join(", ")} × ${
      columns.join(", ")
    } × ${opts.rounds} rounds, ${opts.durability}; load ${load.map((l) => l.toFixed(1)).join(" / ")}\n`
  )

  const readings: Array<Reading> = []
  for (let round = 1; round <= opts.rounds; round++) {
    // The relay first; the two builds swap places every round, so neither always runs right after the relay.
    const builds: ReadonlyArray<Column> = round % 2 === 1 ? ["base", "cand"] : ["cand", "base"]
    const order: ReadonlyArray<Column> = opts.raw ? ["raw", ...builds] : builds
    for (const w of selected) {
      for (const column of order) {
        if (column === "raw" && w.brokerOnly === true) continue
        const r = await runOne(w, specs[column])
        readings.push({ round, workload: w.name, column, metrics: r.metrics, ...(r.error === undefined ? {} : { error: r.error }) })
        const shown = r.metrics === undefined
          ? `ERROR ${r.error ?? ""}`
          : headline(w.name).map(([k, label]) => `${label} ${fmt(r.metrics?.[k])}`).join(", ")
        process.stderr.write(`[round ${round}/${opts.rounds}] ${pad(w.name, 10)} ${pad(column, 4)} ${shown}\n`)
      }
    }
  }

  const value = (round: number, workload: string, column: Column, metric: string): number =>
    readings.find((r) => r.round === round && r.workload === workload && r.column === column)?.metrics?.[metric] ?? Number.NaN
  const rounds = Array.from({ length: opts.rounds }, (_, i) => i + 1)
  const rows: Array<Array<string>> = []
  const results: Array<Record<string, unknown>> = []
  for (const w of selected) {
    for (const [metric, label] of headline(w.name)) {
      const pairs: Array<Pair> = rounds.map((r) => ({ base: value(r, w.name, "base", metric), cand: value(r, w.name, "cand", metric) }))
      const s = pairedSummary(pairs, higherIsBetter(metric))
      const toRaw = (column: Column): number => median(rounds.map((r) => value(r, w.name, column, metric) / value(r, w.name, "raw", metric)))
      rows.push([
        w.name,
        label,
        opts.raw ? fmt(median(rounds.map((r) => value(r, w.name, "raw", metric)))) : "–",
        fmt(median(pairs.map((p) => p.base))),
        fmt(median(pairs.map((p) => p.cand))),
        `${fmtRatio(s.median)} (${fmtRatio(s.min)}–${fmtRatio(s.max)})`,
        `${s.better}/${s.worse} of ${s.rounds}`,
        s.signP.toFixed(3),
        opts.raw ? fmtRatio(toRaw("base")) : "–",
        opts.raw ? fmtRatio(toRaw("cand")) : "–"
      ])
      results.push({ workload: w.name, metric, pairs, summary: s })
    }
  }
  process.stdout.write(
    `\nA/B (${opts.durability}; medians over ${opts.rounds} rounds; cand ÷ base per round, its median and range; better/worse: rounds the candidate won/lost)\n\n`
  )
  process.stdout.write(
    `${
      table(["workload", "metric", "raw", "base", "cand", "cand ÷ base", "better/worse", "sign p", "base ÷ raw", "cand ÷ raw"], rows)
    }\n`
  )
  const caution = loadCaution([load[0] ?? 0, os.loadavg()[0] ?? 0], os.cpus().length)
  if (caution !== undefined) process.stdout.write(`\n${caution}\n`)
  const failed = readings.filter((r) => r.error !== undefined)
  for (const r of failed) process.stdout.write(`  failed: round ${r.round} ${r.workload} ${r.column}: ${r.error ?? ""}\n`)
  fs.mkdirSync(path.dirname(opts.out), { recursive: true })
  fs.writeFileSync(
    opts.out,
    `${JSON.stringify({ date: new Date().toISOString(), base, cand, options: opts, loadBefore: load, loadAfter: os.loadavg(), readings, results }, null, 2)}\n`
  )
  process.stdout.write(`\nWrote ${path.relative(process.cwd(), opts.out) || opts.out}\n`)
  return failed.length > 0 ? 1 : 0
}

runScript("ab", () => main(parseArgs(process.argv.slice(2))))
