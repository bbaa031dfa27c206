/**
 * Renders a results file written by `bench/run.ts` as Markdown (for
 * docs/performance.md):
 *
 *   node bench/report.ts [bench/results/latest.json]
 */
import fs from "node:fs"
import path from "node:path"
import { isRecord } from "./framing.ts"
import { fmt, fmtRatio, headline, markdownTable } from "./format.ts"
import { repoRoot } from "./targets.ts"

const file = process.argv[2] ?? path.join(repoRoot, "bench", "results", "latest.json")
const data: unknown = JSON.parse(fs.readFileSync(file, "utf8"))
if (!isRecord(data)) throw new Error(`${file}: not a results object`)

const rec = (v: unknown): Record<string, unknown> => (isRecord(v) ? v : {})
const num = (v: unknown): number | undefined => (typeof v === "number" ? v : undefined)
const arr = (v: unknown): ReadonlyArray<unknown> => (Array.isArray(v) ? v : [])

const machine = rec(data["machine"])
const options = rec(data["options"])
const summary = rec(data["summary"])
const runs = arr(data["runs"]).map(rec)
const reps = num(options["reps"]) ?? 0
const load = arr(machine["loadavgBefore"]).map(num)

const okCount = (workload: string, target: string): string =>
  `${runs.filter((r) => r["workload"] === workload && r["target"] === target && r["ok"] === true).length}/${reps}`

const rows: Array<Array<string>> = []
for (const [workload, metrics] of Object.entries(summary)) {
  headline(workload).forEach(([key, label], i) => {
    const s = rec(rec(metrics)[key])
    rows.push([
      i === 0 ? `\`${workload}\`` : "",
      label,
      fmt(num(s["raw"])),
      fmt(num(s["broker"])),
      fmtRatio(num(s["ratio"])),
      i === 0 ? `${okCount(workload, "raw")} / ${okCount(workload, "broker")}` : ""
    ])
  })
}

const out: Array<string> = []
out.push(
  `Run ${String(data["date"] ?? "?")}: ${reps} rep(s)${options["quick"] === true ? ", quick sizes" : ""}; ` +
    `${String(machine["nproc"] ?? "?")} cores (${String(machine["cpu"] ?? "?")}), ${String(machine["memGiB"] ?? "?")} GiB, ` +
    `Node ${String(machine["node"] ?? "?")}, ${String(machine["platform"] ?? "?")}; ` +
    `load average at start ${load.map((x) => (x === undefined ? "?" : x.toFixed(2))).join(" / ")}.`
)
out.push("")
out.push(markdownTable(["workload", "metric", "raw relay", "broker", "broker/raw", "ok runs (raw / broker)"], rows))
const checks = arr(data["checks"]).map(rec)
if (checks.length > 0) {
  out.push("")
  out.push(
    markdownTable(
      ["target", "bound", "measured", "status"],
      checks.map((c) => [String(c["name"] ?? ""), String(c["target"] ?? ""), String(c["value"] ?? ""), `**${String(c["status"] ?? "")}**`]),
      9
    )
  )
}
process.stdout.write(`${out.join("\n")}\n`)
