/**
 * `intercom broker stats [--json]`: the running broker's metrics
 * (`stats-v1`, fetched by `fetchBrokerStats`), as a few readable lines or,
 * with `--json`, the snapshot as one JSON object. The rows by group and
 * status are those the broker's answer kept (most sessions first), followed
 * by how many it left out, when it did.
 */
import type { BrokerStatsSnapshot } from "../protocol/stats.ts"
import { terminalSafe } from "./terminalText.ts"

const plural = (count: number, one: string, many = `${one}s`) => `${count} ${count === 1 ? one : many}`

/** A duration in ms as a person reads it: 850 ms, 12.5 s, 3.2 min, 1.5 h. */
export const formatAge = (ms: number): string =>
  ms < 1_000
    ? `${Math.round(ms)} ms`
    : ms < 60_000
    ? `${(ms / 1_000).toFixed(1)} s`
    : ms < 3_600_000
    ? `${(ms / 60_000).toFixed(1)} min`
    : `${(ms / 3_600_000).toFixed(1)} h`

/** The snapshot as the lines `intercom broker stats` prints. */
export const statsText = (stats: BrokerStatsSnapshot): string => {
  const { sessions, routed, asks, store } = stats
  const lines = [
    `Intercom broker statistics (up ${formatAge(stats.at - stats.startedAt)})`,
    `  sessions:   ${sessions.live} live${sessions.unregistered > 0 ? `, ${sessions.unregistered} connecting` : ""}`
  ]
  for (const row of sessions.byGroupStatus) {
    const scope = row.scope === "" ? "" : `scope ${terminalSafe(row.scope)}, `
    const status = row.status === "" ? "(none)" : terminalSafe(row.status)
    lines.push(`    ${scope}group ${terminalSafe(row.group)}, status ${status}: ${row.count}`)
  }
  const omitted = sessions.byGroupStatusOmitted
  if (omitted !== undefined && omitted.rows > 0) {
    lines.push(`    … and ${plural(omitted.rows, "more row")} (${plural(omitted.sessions, "session")})`)
  }
  const codes = Object.entries(routed.refusedByCode).sort(([a], [b]) => a.localeCompare(b))
  lines.push(
    `  routed:     ${routed.delivered} delivered, ${routed.queued} queued, ${routed.staged} staged, ${routed.replayed} replayed, ${routed.refused} refused`
  )
  if (codes.length > 0) lines.push(`    refused by code: ${codes.map(([code, count]) => `${terminalSafe(code)} ${count}`).join(", ")}`)
  lines.push(
    `  mailbox:    ${plural(stats.mailbox.depth, "message")} held for sessions that are away`,
    `  staging:    ${plural(stats.staging.depth, "message")} staged (replace)`,
    `  outboxes:   ${stats.outbox.queuedChars} chars queued, ${plural(stats.outbox.backpressureWaits, "backpressure wait")}`,
    `  asks:       ${asks.open} open${asks.oldestAgeMs === null ? "" : `, oldest ${formatAge(asks.oldestAgeMs)}`}`
  )
  if (store !== undefined) {
    const latency = store.commitLatency
    const mean = latency.count === 0 ? 0 : latency.sumMs / latency.count
    lines.push(
      `  store:      ${plural(store.commits, "commit")}, ${plural(store.failures, "failure")}; latency mean ${
        mean.toFixed(2)
      } ms, max ${latency.maxMs.toFixed(2)} ms`
    )
  } else {
    lines.push("  store:      none (memory-only broker)")
  }
  return lines.join("\n")
}
