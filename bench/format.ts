/** Number formatting, plain-text tables and the headline metrics shown per workload. */

export const fmt = (x: number | undefined): string => {
  if (x === undefined || !Number.isFinite(x)) return "–"
  const a = Math.abs(x)
  const digits = a >= 100 ? 0 : a >= 10 ? 1 : 2
  return x.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits })
}

export const fmtRatio = (x: number | undefined): string => (x === undefined || !Number.isFinite(x) ? "–" : x.toFixed(2))

export const pad = (s: string, n: number, right = false): string => (right ? s.padStart(n) : s.padEnd(n))

export const table = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>, rightFrom = 2): string => {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)))
  const line = (cells: ReadonlyArray<string>): string =>
    cells.map((c, i) => pad(c, widths[i] ?? 0, i >= rightFrom)).join("  ")
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n")
}

/** Headline metrics per workload (the JSON has all of them). */
export const headline = (name: string): ReadonlyArray<readonly [string, string]> => {
  if (name === "w1" || name === "w64" || name === "w64-steady" || name === "fanin" || name === "fanin-steady") {
    return [["msgPerSec", "msg/s"], ["cpuUsPerMsg", "CPU µs/msg"]]
  }
  if (name === "sustained") {
    return [
      ["msgPerSec", "msg/s"],
      ["firstQuarterMsgPerSec", "msg/s, first ¼"],
      ["lastQuarterMsgPerSec", "msg/s, last ¼"],
      ["lastOverFirstQuarter", "last ¼ / first ¼"],
      ["firstQuarterCpuUsPerMsg", "CPU µs/msg, first ¼"],
      ["lastQuarterCpuUsPerMsg", "CPU µs/msg, last ¼"]
    ]
  }
  if (name === "ask" || name === "ask-granted") return [["p50Us", "p50 µs"], ["p90Us", "p90 µs"], ["p99Us", "p99 µs"], ["cpuUsPerRound", "CPU µs/round trip"]]
  if (name.startsWith("payload-")) return [["msgPerSec", "msg/s"], ["mbPerSec", "MB/s"], ["cpuUsPerMsg", "CPU µs/msg"]]
  if (name.endsWith("-settled")) {
    return [
      ["sessions", "sessions held"],
      ["rssPerSessionKiB", "RSS KiB/session"],
      ["rssPerSessionSettled5sKiB", "… after 5 s idle"],
      ["rssPerSessionSettled15sKiB", "… 15 s"],
      ["rssPerSessionSettled30sKiB", "… 30 s"]
    ]
  }
  if (name.startsWith("idle-")) {
    return [
      ["sessions", "sessions held"],
      ["registerMs", "register all, ms"],
      ["registerPerSec", "registrations/s"],
      ["rssPerSessionKiB", "RSS KiB/session"],
      ["listP50Us", "list p50 µs"],
      ["listFaultsPerList", "page faults/list"],
      ["listSize", "sessions per list"]
    ]
  }
  if (name.startsWith("storm-")) {
    return [
      ["registerMs", "register all, ms"],
      ["quietMs", "until quiet, ms"],
      ["rssBeforeKiB", "RSS before KiB"],
      ["hwmKiB", "peak RSS KiB"]
    ]
  }
  if (name === "cli-send") {
    return [
      ["sendMs", "spawn → exit ms"],
      ["nodeMs", "`node -e 0` ms"],
      ["sendOverNodeMs", "send − node, same rep ms"]
    ]
  }
  if (name === "startup") {
    return [
      ["healthMs", "spawn → health_ok ms"],
      ["healthCpuMs", "CPU until health_ok ms"],
      ["readyLineMs", "spawn → ready line ms"],
      ["idleRssKiB", "idle RSS KiB"]
    ]
  }
  if (name === "replace-storm") {
    return [
      ["achievedRate", "updates/s sent"],
      ["delivered", "delivered"],
      ["superseded", "superseded receipts"],
      ["refused", "refused at the cap"],
      ["threadsEndingOnLatest", "threads ending on latest"],
      ["stalenessP99Ms", "delivered update age p99 ms"],
      ["rssPeakKiB", "broker RSS peak KiB"],
      ["brokerCpuUsPerUpdate", "CPU µs/update"]
    ]
  }
  if (name === "topic-fanout") {
    return [
      ["deliveriesPerSec", "records delivered/s"],
      ["publicationsPerSec", "publications/s"],
      ["ackP50Us", "topic_published p50 µs"],
      ["fanoutP50Us", "last subscriber has it, p50 µs"],
      ["fanoutMaxUs", "last subscriber has it, max µs"],
      ["deliveryP50Us", "one subscriber, p50 µs"],
      ["deliveryP99Us", "one subscriber, p99 µs"],
      ["hwmKiB", "broker peak RSS KiB"]
    ]
  }
  return []
}

export const markdownTable = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>, rightFrom = 2): string =>
  [
    `| ${header.join(" | ")} |`,
    `|${header.map((_, i) => (i >= rightFrom ? "---:" : "---")).join("|")}|`,
    ...rows.map((r) => `| ${r.join(" | ")} |`)
  ].join("\n")
