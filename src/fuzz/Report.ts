/**
 * The summary of a fuzz campaign as text: frames and bytes by attack kind,
 * connections, the worst health latency, the largest frame the broker wrote,
 * RSS before / peak / after, the findings with their first examples, and —
 * when something failed — the command that replays the campaign.
 */
import { MAX_FRAME_BYTES } from "../protocol/constants.ts"
import { ATTACKS } from "./attacks/catalogue.ts"
import type { CampaignReport } from "./Campaign.ts"
import { KNOWN_FINDINGS } from "./Findings.ts"

const mib = (bytes: number | undefined): string => bytes === undefined ? "n/a" : `${(bytes / 1048576).toFixed(1)} MiB`

const pad = (text: string, width: number): string => text.length >= width ? text : text + " ".repeat(width - text.length)
const padLeft = (text: string, width: number): string => text.length >= width ? text : " ".repeat(width - text.length) + text

/** The campaign's summary table and findings, ready to print. */
export const formatReport = (report: CampaignReport): string => {
  const lines: Array<string> = []
  const category = new Map(ATTACKS.map((attack) => [attack.kind, attack.category]))
  lines.push(
    `fuzz campaign seed ${report.seed}: ${report.mode} broker, ${report.attackers} attackers, ${(report.durationMs / 1000).toFixed(1)} s (attack phase ${
      (report.attackMs / 1000).toFixed(1)
    } s)`
  )
  lines.push("")
  lines.push(`${pad("attack", 18)} ${pad("category", 10)} ${padLeft("runs", 7)} ${padLeft("frames", 9)} ${padLeft("bytes", 12)} ${padLeft("time", 9)}`)
  for (const [kind, tally] of report.byKind) {
    lines.push(
      `${pad(kind, 18)} ${pad(category.get(kind) ?? "-", 10)} ${padLeft(String(tally.runs), 7)} ${padLeft(String(tally.frames), 9)} ${
        padLeft(mib(tally.bytes), 12)
      } ${padLeft(`${(tally.ms / 1000).toFixed(1)} s`, 9)}`
    )
  }
  lines.push(`${pad("total", 18)} ${pad("", 10)} ${padLeft("", 7)} ${padLeft(String(report.framesSent), 9)} ${padLeft(mib(report.bytesSent), 12)}`)
  lines.push("")
  const rows: ReadonlyArray<readonly [string, string]> = [
    ["connections opened", `${report.connections} (${report.dialFailures} refused)`],
    ["healthy exchanges", String(report.healthyExchanges)],
    ["health probes", `${report.probes}, worst ${report.worstHealthMs} ms, ${report.lateProbes} late`],
    [
      "largest frame written",
      `${report.maxFrameBytes} bytes${report.maxFrameBytes > MAX_FRAME_BYTES ? " (OVER 1 MiB)" : ""}, to ${report.maxFrameWhere}`
    ],
    [
      "broker RSS",
      `before ${mib(report.memory.before?.rss)}, peak ${mib(report.memory.peakRss)}, after ${mib(report.memory.after?.rss)}`
    ],
    [
      "broker heap after GC",
      `before ${mib(report.memory.before?.heap)}, after ${mib(report.memory.after?.heap)}${
        report.memory.after !== undefined && !report.memory.after.collected ? " (no --expose-gc: not collected)" : ""
      }`
    ]
  ]
  for (const [label, value] of rows) lines.push(`${pad(label, 22)} ${value}`)
  lines.push("")
  if (report.findings.length === 0) {
    lines.push("findings: none — every promise held")
  } else {
    lines.push("findings:")
    for (const finding of report.findings) {
      const known = KNOWN_FINDINGS[finding.kind]
      lines.push(`  ${finding.kind} × ${finding.count}${finding.tolerated ? " (tolerated)" : ""}${known === undefined ? "" : ` — known: ${known}`}`)
      for (const example of finding.examples) lines.push(`      ${example.slice(0, 300)}`)
    }
  }
  if (!report.ok) {
    lines.push("")
    lines.push(`replay: ${report.replay}`)
  }
  return lines.join("\n")
}
