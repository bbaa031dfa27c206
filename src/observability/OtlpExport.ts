/**
 * The OTLP exporters themselves: effect's `OtlpTracer` and `OtlpMetrics`
 * with JSON serialization over `fetch`, for what `TelemetrySettings` ask.
 * A module of its own so that `Telemetry.layer` loads it (and effect's
 * exporters) only in a process that exports something.
 */
import { Layer } from "effect"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import type * as HttpClient from "effect/http/HttpClient"
import * as OtlpMetrics from "effect/observability/OtlpMetrics"
import * as OtlpSerialization from "effect/observability/OtlpSerialization"
import * as OtlpTracer from "effect/observability/OtlpTracer"
import { TelemetryEnabled, type TelemetrySettings } from "./Telemetry.ts"

/** The exporters `settings` ask for, with `TelemetryEnabled` saying which (empty when none). */
export const exportersLayer = (settings: TelemetrySettings): Layer.Layer<never> => {
  const resource = { serviceName: settings.serviceName }
  const layers: Array<Layer.Layer<never, never, OtlpSerialization.OtlpSerialization | HttpClient.HttpClient>> = []
  if (settings.tracesUrl !== undefined) {
    layers.push(OtlpTracer.layer({
      url: settings.tracesUrl,
      resource,
      headers: settings.headers,
      exportInterval: settings.tracesIntervalMs
    }))
  }
  if (settings.metricsUrl !== undefined) {
    layers.push(OtlpMetrics.layer({
      url: settings.metricsUrl,
      resource,
      headers: settings.headers,
      exportInterval: settings.metricsIntervalMs
    }))
  }
  if (layers.length === 0) return Layer.empty
  return Layer.mergeAll(
    Layer.succeed(TelemetryEnabled)({ traces: settings.tracesUrl !== undefined, metrics: settings.metricsUrl !== undefined }),
    ...layers
  ).pipe(Layer.provide(OtlpSerialization.layerJson), Layer.provide(FetchHttpClient.layer))
}
