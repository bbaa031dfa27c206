/**
 * The OTLP exporters themselves: effect's `OtlpTracer` and `OtlpMetrics`
 * with JSON serialization over `fetch`, for what `TelemetrySettings` ask.
 * A module of its own so that `Telemetry.layer` loads it (and effect's
 * exporters) only in a process that exports something.
 *
 * Every export request is bounded (`TelemetrySettings.exportTimeoutMs`):
 * effect's exporters set no timeout of their own, and a collector that
 * accepts a request and never answers would otherwise hold it, and its
 * batch, for the life of the process — the metrics exporter waits for its
 * last export before the next, so it would export nothing more, and the
 * tracer starts another unanswered request for every full batch. Bounded,
 * such a request fails like a refused connection: effect retries it (three
 * times, a second apart), then stops exporting for 60 s and drops what it
 * held.
 */
import { Duration, Effect, Layer } from "effect"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientError from "effect/http/HttpClientError"
import * as OtlpMetrics from "effect/observability/OtlpMetrics"
import * as OtlpSerialization from "effect/observability/OtlpSerialization"
import * as OtlpTracer from "effect/observability/OtlpTracer"
import { TelemetryEnabled, type TelemetrySettings } from "./Telemetry.ts"

/**
 * `fetch`, with each request failed as a `TransportError` unless its answer
 * and body arrive within `timeoutMs` (the request is aborted then). The body
 * is read inside the bound; the exporter's own read of it finds it cached.
 */
const boundedFetch = (timeoutMs: number): Layer.Layer<HttpClient.HttpClient> =>
  Layer.effect(HttpClient.HttpClient)(Effect.map(
    Effect.service(HttpClient.HttpClient),
    HttpClient.transform((response, request) =>
      response.pipe(
        Effect.tap((answer) => answer.arrayBuffer),
        Effect.timeoutOrElse({
          duration: Duration.millis(timeoutMs),
          orElse: () =>
            Effect.fail(
              new HttpClientError.HttpClientError({
                reason: new HttpClientError.TransportError({
                  request,
                  description: `the collector did not answer within ${timeoutMs} ms (OTEL_EXPORTER_OTLP_TIMEOUT)`
                })
              })
            )
        })
      )
    )
  )).pipe(Layer.provide(FetchHttpClient.layer))

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
  ).pipe(Layer.provide(OtlpSerialization.layerJson), Layer.provide(boundedFetch(settings.exportTimeoutMs)))
}
