/**
 * The broker's metrics as effect `Metric` series, for the OTLP metrics
 * exporter: every series is registered with `Metric.registerUnsafe` and a
 * `get` hook that reads the broker's metrics snapshot (Stats.ts) when the
 * exporter collects — so the per-frame path updates no Metric at all, it
 * only bumps the plain counters the snapshot reads.
 *
 * Registered only in a broker whose program exports metrics
 * (`TelemetryEnabled`), and removed when the broker's Scope closes. The
 * sessions-by-scope/group/status series come and go with the combinations
 * that exist: this module's fiber reconciles them every
 * `SESSION_SERIES_REFRESH`. docs/observability.md lists every series.
 * A collection indexes the snapshot's rows once (`countsByRow`), so each of
 * those series reads its count from a Map: linear in the rows, not one scan
 * of the rows per series.
 *
 * Each series names its unit in UCUM, the form OTLP's `unit` field takes:
 * `ms` for times, an annotation such as `{session}` for a count of things.
 * effect's OTLP exporter reads it from the metric's `unit` attribute (and so
 * also sends it as an attribute of every point); without one it sends `1`.
 */
import { Context, Duration, Effect, Metric, type Scope } from "effect"
import type { BrokerStatsSnapshot, SessionCount } from "../protocol/stats.ts"
import { COMMIT_LATENCY_BOUNDS_MS } from "./StoreCommits.ts"

/** How often the per-(scope, group, status) session series are reconciled with the live sessions. */
export const SESSION_SERIES_REFRESH: Duration.Duration = Duration.seconds(5)

const sessions = Metric.gauge("intercom_broker_sessions", {
  description: "Live sessions by scope, group and status",
  attributes: { unit: "{session}" }
})
const sessionsLive = Metric.gauge("intercom_broker_sessions_live", {
  description: "Live registered sessions",
  attributes: { unit: "{session}" }
})
const unregistered = Metric.gauge("intercom_broker_connections_unregistered", {
  description: "Connections accepted and not registered yet",
  attributes: { unit: "{connection}" }
})
const routed = Metric.counter("intercom_broker_messages_routed", {
  description: "Sends routed since the broker started, by outcome",
  incremental: true,
  attributes: { unit: "{send}" }
})
const refused = Metric.frequency("intercom_broker_messages_refused", {
  description: "Refused sends since the broker started, by delivery code (attribute key)",
  attributes: { unit: "{send}" }
})
const mailboxDepth = Metric.gauge("intercom_broker_mailbox_depth", {
  description: "Messages held for sessions that are away",
  attributes: { unit: "{message}" }
})
const stagingDepth = Metric.gauge("intercom_broker_staging_depth", {
  description: "replace messages staged for coalescing (delivery-v1)",
  attributes: { unit: "{message}" }
})
const outboxChars = Metric.gauge("intercom_broker_outbox_queued_chars", {
  description: "Characters of frame text queued in every connection's outbox together",
  attributes: { unit: "{char}" }
})
const backpressureWaits = Metric.counter("intercom_broker_outbox_backpressure_waits", {
  description: "Times a connection's reader waited for room in a full outbox",
  incremental: true,
  attributes: { unit: "{wait}" }
})
const asksOpen = Metric.gauge("intercom_broker_asks_open", {
  description: "Open asks awaiting their reply",
  attributes: { unit: "{ask}" }
})
const asksOldest = Metric.gauge("intercom_broker_asks_oldest_age", {
  description: "Age of the oldest open ask (0 when none)",
  attributes: { unit: "ms" }
})
const storeCommits = Metric.counter("intercom_broker_store_commits", {
  description: "Durable store commits that succeeded",
  incremental: true,
  attributes: { unit: "{commit}" }
})
const storeFailures = Metric.counter("intercom_broker_store_commit_failures", {
  description: "Durable store commits that failed",
  incremental: true,
  attributes: { unit: "{commit}" }
})
const storeLatency = Metric.histogram("intercom_broker_store_commit_latency", {
  description: "Durable store commit latency",
  boundaries: COMMIT_LATENCY_BOUNDS_MS,
  attributes: { unit: "ms" }
})

const ROUTE_OUTCOMES = ["delivered", "queued", "staged", "replayed", "refused"] as const

/** The key of a (scope, group, status) row: the one its `intercom_broker_sessions` series is kept under. */
const rowKey = (row: { readonly scope: string; readonly group: string; readonly status: string }): string =>
  JSON.stringify([row.scope, row.group, row.status])

/**
 * Each row's count by its (scope, group, status) key, read in one pass. A key
 * that appears twice keeps its first row's count, as a search from the start
 * of `rows` would.
 */
export const countsByRow = (rows: ReadonlyArray<SessionCount>): ReadonlyMap<string, number> => {
  const counts = new Map<string, number>()
  for (const row of rows) {
    const key = rowKey(row)
    if (!counts.has(key)) counts.set(key, row.count)
  }
  return counts
}

/**
 * Registers the broker's series (see the module header) for the lifetime of
 * the current Scope. `snapshot` is called at most once per millisecond of
 * `now`: one collection reads one snapshot for all series.
 */
export const registerBrokerMetrics = (
  snapshot: () => BrokerStatsSnapshot,
  now: () => number
): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    const context = yield* Effect.context<never>()
    let cached: BrokerStatsSnapshot | undefined
    let cachedAt = Number.NaN
    const read = (): BrokerStatsSnapshot => {
      const at = now()
      if (cached === undefined || at !== cachedAt) {
        cached = snapshot()
        cachedAt = at
      }
      return cached
    }
    const register = <I, S>(
      metric: Metric.Metric<I, S>,
      attributes: Metric.Metric.AttributeSet | undefined,
      get: (stats: BrokerStatsSnapshot) => S
    ): Metric.Registration =>
      Metric.registerUnsafe(
        metric,
        attributes === undefined ? context : Context.add(context, Metric.CurrentMetricAttributes, attributes),
        { get: () => get(read()), update: () => {}, modify: () => {} }
      )
    const counted = (count: number) => ({ count, incremental: true })
    // The rows of the last snapshot indexed, built by the first session series a collection reads.
    let indexed: { readonly of: BrokerStatsSnapshot; readonly counts: ReadonlyMap<string, number> } | undefined
    const countOf = (stats: BrokerStatsSnapshot, key: string): number => {
      if (indexed === undefined || indexed.of !== stats) indexed = { of: stats, counts: countsByRow(stats.sessions.byGroupStatus) }
      return indexed.counts.get(key) ?? 0
    }

    const fixed: Array<Metric.Registration> = [
      register(sessionsLive, undefined, (s) => ({ value: s.sessions.live })),
      register(unregistered, undefined, (s) => ({ value: s.sessions.unregistered })),
      ...ROUTE_OUTCOMES.map((outcome) => register(routed, { outcome }, (s) => counted(s.routed[outcome]))),
      register(refused, undefined, (s) => ({ occurrences: new Map(Object.entries(s.routed.refusedByCode)) })),
      register(mailboxDepth, undefined, (s) => ({ value: s.mailbox.depth })),
      register(stagingDepth, undefined, (s) => ({ value: s.staging.depth })),
      register(outboxChars, undefined, (s) => ({ value: s.outbox.queuedChars })),
      register(backpressureWaits, undefined, (s) => counted(s.outbox.backpressureWaits)),
      register(asksOpen, undefined, (s) => ({ value: s.asks.open })),
      register(asksOldest, undefined, (s) => ({ value: s.asks.oldestAgeMs ?? 0 }))
    ]
    if (snapshot().store !== undefined) {
      fixed.push(
        register(storeCommits, undefined, (s) => counted(s.store?.commits ?? 0)),
        register(storeFailures, undefined, (s) => counted(s.store?.failures ?? 0)),
        register(storeLatency, undefined, (s) => {
          const latency = s.store?.commitLatency
          return {
            buckets: (latency?.buckets ?? []).map((bucket): [number, number] => [bucket.leMs, bucket.count]),
            count: latency?.count ?? 0,
            min: latency?.minMs ?? 0,
            max: latency?.maxMs ?? 0,
            sum: latency?.sumMs ?? 0
          }
        })
      )
    }

    // One series per (scope, group, status) that has live sessions; a combination that empties goes away.
    const bySession = new Map<string, Metric.Registration>()
    const reconcile = () => {
      const present = new Set<string>()
      for (const row of read().sessions.byGroupStatus) {
        const key = rowKey(row)
        present.add(key)
        if (bySession.has(key)) continue
        const attributes = { scope: row.scope, group: row.group, status: row.status }
        bySession.set(
          key,
          register(sessions, attributes, (s) => ({ value: countOf(s, key) }))
        )
      }
      for (const [key, registration] of bySession) {
        if (present.has(key)) continue
        registration.remove()
        bySession.delete(key)
      }
    }
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        for (const registration of fixed) registration.remove()
        for (const registration of bySession.values()) registration.remove()
      })
    )
    yield* Effect.forkScoped(Effect.forever(
      Effect.sync(reconcile).pipe(Effect.andThen(Effect.sleep(SESSION_SERIES_REFRESH))),
      { disableYield: true }
    ))
  })
