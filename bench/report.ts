/**
 * Renders a results file written by `bench/run.ts` as Markdown (for
 * docs/performance.md): the same side-by-side table and target checks that
 * the run printed.
 *
 *   node bench/report.ts [bench/results/latest.json]
 */
import fs from "node:fs"
import path from "node:path"
import { markdownTable } from "./format.ts"
import { eachArg, helpOrUnknown, runScript } from "./args.ts"
import { isRecord } from "./framing.ts"
import { type RunRecord, type Summary, tableHeader, tableRows } from "./summary.ts"
import { repoRoot, TARGET_ORDER, type TargetName } from "./targets.ts"

const usage = "usage: node bench/report.ts [results.json]   (default: bench/results/latest.json)"

/** The results file named on the command line (at most one), or the default; `--help` prints the usage and exits 0. */
const fileArg = (argv: ReadonlyArray<string>): string => {
  const files: Array<string> = []
  eachArg(argv, usage, (arg) => {
    if (arg.key.startsWith("-")) helpOrUnknown(arg, usage)
    else files.push(arg.raw)
  })
  if (files.length > 1) throw new Error(`one results file at most, not ${files.length}\n${usage}`)
  return files[0] ?? path.join(repoRoot, "bench", "results", "latest.json")
}

/** The file's JSON, or an error naming it (not there: run the bench first). */
const readResults = (file: string): Record<string, unknown> => {
  let text: string
  try {
    text = fs.readFileSync(file, "utf8")
  } catch (e) {
    throw new Error(`cannot read ${file} (${e instanceof Error ? e.message : String(e)}); \`npm run bench\` writes bench/results/latest.json`)
  }
  let data: unknown
  try {
    data = JSON.parse(text)
  } catch (e) {
    throw new Error(`${file}: not JSON (${e instanceof Error ? e.message : String(e)})`)
  }
  if (!isRecord(data)) throw new Error(`${file}: not a results object`)
  return data
}

const rec = (v: unknown): Record<string, unknown> => (isRecord(v) ? v : {})
const num = (v: unknown): number | undefined => (typeof v === "number" ? v : undefined)
const arr = (v: unknown): ReadonlyArray<unknown> => (Array.isArray(v) ? v : [])
const str = (v: unknown): string => (typeof v === "string" ? v : "")

const numbers = (v: unknown): Record<string, number> => {
  const out: Record<string, number> = {}
  for (const [k, x] of Object.entries(rec(v))) {
    const n = num(x)
    out[k] = n ?? Number.NaN
  }
  return out
}

const main = async (): Promise<number> => {
  const file = fileArg(process.argv.slice(2))
  const data = readResults(file)

  const machine = rec(data["machine"])
  const options = rec(data["options"])
  const reps = num(options["reps"]) ?? 0
  const load = arr(machine["loadavgBefore"]).map(num)
  const targets: Array<TargetName> = arr(options["targets"]).flatMap((t) => TARGET_ORDER.filter((name) => name === t))
  if (targets.length === 0) throw new Error(`${file}: no targets (written by an older bench/run.ts?)`)
  const runs: Array<RunRecord> = arr(data["runs"]).map(rec).flatMap((r) => {
    const target = TARGET_ORDER.find((t) => t === r["target"])
    return target === undefined ? [] : [{
      rep: num(r["rep"]) ?? 0,
      workload: str(r["workload"]),
      target,
      ok: r["ok"] === true,
      metrics: numbers(r["metrics"]),
      notes: arr(r["notes"]).map(str),
      wallMs: num(r["wallMs"]) ?? 0
    }]
  })
  const summary: Summary = {}
  for (const [w, metrics] of Object.entries(rec(data["summary"]))) {
    summary[w] = {}
    for (const [m, s] of Object.entries(rec(metrics))) {
      const values: Partial<Record<TargetName, number>> = {}
      for (const [t, v] of Object.entries(rec(rec(s)["values"]))) {
        const target = TARGET_ORDER.find((name) => name === t)
        const n = num(v)
        if (target !== undefined && n !== undefined) values[target] = n
      }
      const ratios: Record<string, { median: number | undefined; perRep: Array<number> }> = {}
      for (const [label, r] of Object.entries(rec(rec(s)["ratios"]))) {
        ratios[label] = { median: num(rec(r)["median"]), perRep: arr(rec(r)["perRep"]).flatMap((x) => num(x) ?? []) }
      }
      summary[w][m] = { values, ratios }
    }
  }
  const names = arr(data["workloads"]).map(str)

  const out: Array<string> = []
  out.push(
    `Run ${str(data["date"]) || "?"}: ${reps} rep(s)${options["quick"] === true ? ", quick sizes" : ""}; ` +
      `${String(machine["nproc"] ?? "?")} cores (${String(machine["cpu"] ?? "?")}), ${String(machine["memGiB"] ?? "?")} GiB, ` +
      `Node ${String(machine["node"] ?? "?")}, ${String(machine["platform"] ?? "?")}; ` +
      `load average at start ${load.map((x) => (x === undefined ? "?" : x.toFixed(2))).join(" / ")}.`
  )
  out.push("")
  out.push(
    markdownTable(
      tableHeader(targets),
      tableRows(summary, runs, names, targets, reps).map((row) => row.map((cell, i) => (i === 0 && cell !== "" ? `\`${cell}\`` : cell)))
    )
  )
  const checks = arr(data["checks"]).map(rec)
  if (checks.length > 0) {
    out.push("")
    out.push(
      markdownTable(
        ["target", "bound", "measured", "status"],
        checks.map((c) => [str(c["name"]), str(c["target"]), str(c["value"]), `**${str(c["status"])}**`]),
        9
      )
    )
  }
  process.stdout.write(`${out.join("\n")}\n`)
  return 0
}

runScript("report", main)
