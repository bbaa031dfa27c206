/**
 * The metrics table of docs/observability.md against what the OTLP exporter
 * really sends: every series the broker registers (MetricSeries.ts) and the
 * two of the session runtime (the ask round trip, abandoned inbound
 * messages), exported in-process to a local receiver. Each one is in the
 * table, with the table's unit as its OTLP `unit` and no attribute the table
 * does not name (besides `unit`, which effect's exporter puts on every point).
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Metric } from "effect"
import { readFileSync } from "node:fs"
import { registerBrokerMetrics } from "../../src/broker/MetricSeries.ts"
import * as Telemetry from "../../src/observability/Telemetry.ts"
import type { BrokerStatsSnapshot } from "../../src/protocol/stats.ts"
import { askRoundTrip } from "../../src/session/Ask.ts"
import { inboundAbandoned } from "../../src/session/HostHandoff.ts"
import { otlpReceiver } from "../support/otlpReceiver.ts"

/** The rows of the metrics table: name → unit and the attribute names it lists. */
const documented = (): ReadonlyMap<string, { readonly unit: string; readonly attributes: ReadonlyArray<string> }> => {
  const text = readFileSync(new URL("../../docs/observability.md", import.meta.url), "utf8")
  const rows = new Map<string, { readonly unit: string; readonly attributes: ReadonlyArray<string> }>()
  for (const line of text.split("\n")) {
    const match = /^\| `(intercom_[a-z_]+)` \| [^|]+ \| `([^`]+)` \| ?([^|]*)\|/.exec(line)
    if (match === null) continue
    // An attribute name is a backquoted word at the start of the cell or after a comma.
    const attributes = [...match[3]!.matchAll(/(?:^|, )`([a-z_]+)`/g)].map((m) => m[1]!)
    rows.set(match[1]!, { unit: match[2]!, attributes })
  }
  return rows
}

const stats: BrokerStatsSnapshot = {
  at: 1,
  startedAt: 0,
  sessions: { live: 2, unregistered: 1, byGroupStatus: [{ scope: "", group: "default", status: "idle", count: 2 }] },
  routed: { delivered: 3, queued: 1, staged: 0, replayed: 0, refused: 1, refusedByCode: { E_TARGET_NOT_FOUND: 1 } },
  mailbox: { depth: 1 },
  staging: { depth: 0 },
  outbox: { queuedChars: 10, backpressureWaits: 0 },
  asks: { open: 1, oldestAgeMs: 5 },
  store: { commits: 1, failures: 0, commitLatency: { count: 1, sumMs: 1, minMs: 1, maxMs: 1, buckets: [{ leMs: 1, count: 1 }] } }
}

describe("metric units", () => {
  it.live("every exported series is in docs/observability.md's table, with its unit and attributes", () =>
    Effect.gen(function*() {
      const receiver = yield* otlpReceiver
      const env = { OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: `${receiver.endpoint}/v1/metrics` }
      // The exporter sends once more when its layer's Scope closes, at the end of this effect.
      yield* Effect.gen(function*() {
        yield* registerBrokerMetrics(() => stats, () => 1)
        // The per-(scope, group, status) series are registered by a fiber: wait for its first pass.
        while (!(yield* Metric.snapshot).some((state) => state.id === "intercom_broker_sessions")) yield* Effect.yieldNow
        yield* Metric.update(askRoundTrip, 12)
        yield* Metric.update(inboundAbandoned, 1)
      }).pipe(
        Effect.provide(Telemetry.layer("svc")),
        Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env })),
        Effect.scoped
      )
      const table = documented()
      const points = receiver.metrics()
      const exported = new Set(points.map((point) => point.name))
      const missing = [...table.keys()].filter((name) => !exported.has(name))
      const extra = [...exported].filter((name) => !table.has(name))
      assert.deepStrictEqual({ missing, extra }, { missing: [], extra: [] }, "the table lists exactly the exported series")
      for (const point of points) {
        const row = table.get(point.name)!
        assert.strictEqual(point.unit, row.unit, point.name)
        assert.isNotEmpty(point.description, point.name)
        for (const key of Object.keys(point.attributes)) {
          assert.include([...row.attributes, "unit"], key, `${point.name}: attribute ${key}`)
        }
        assert.strictEqual(point.attributes["unit"], row.unit, `${point.name}: the unit attribute`)
      }
    }).pipe(
      Effect.scoped,
      // A registry of this test's own: the shared worker's other files register series in the default one.
      Effect.provideService(Metric.MetricRegistry, new Map())
    ))
})
