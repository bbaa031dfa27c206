/**
 * Telemetry settings from the standard OpenTelemetry variables: nothing set
 * means nothing installed (the default tracer stays, `isTracing` is false);
 * the base endpoint gets `/v1/<signal>` appended, a per-signal endpoint is
 * used as it is, `OTEL_SDK_DISABLED` and `OTEL_<SIGNAL>S_EXPORTER=none`
 * turn export off, and unusable values are reported in words and leave
 * their signal off.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Tracer } from "effect"
import * as Telemetry from "../../src/observability/Telemetry.ts"
import { otlpReceiver } from "../support/otlpReceiver.ts"

const withEnv = (env: Record<string, string>) => Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env }))

describe("Telemetry", () => {
  it.effect("with no OTEL variable nothing is exported and no tracer is installed", () =>
    Effect.gen(function*() {
      const settings = yield* Telemetry.settings("svc").pipe(withEnv({}))
      assert.isUndefined(settings.tracesUrl)
      assert.isUndefined(settings.metricsUrl)
      assert.deepStrictEqual(settings.problems, [])
      const inside = yield* Effect.gen(function*() {
        return {
          tracing: yield* Telemetry.isTracing,
          native: (yield* Effect.tracer) === Tracer.nativeTracer,
          enabled: yield* Telemetry.TelemetryEnabled
        }
      }).pipe(Effect.provide(Telemetry.layer("svc")), withEnv({}))
      assert.deepStrictEqual(inside, { tracing: false, native: true, enabled: { traces: false, metrics: false } })
    }))

  it.live("OTEL_EXPORTER_OTLP_ENDPOINT installs the OTLP tracer and metrics at <endpoint>/v1/<signal>", () =>
    Effect.gen(function*() {
      const receiver = yield* otlpReceiver
      const env = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_SERVICE_NAME: "mine" }
      const settings = yield* Telemetry.settings("svc").pipe(withEnv(env))
      assert.strictEqual(settings.tracesUrl, `${receiver.endpoint}/v1/traces`)
      assert.strictEqual(settings.metricsUrl, `${receiver.endpoint}/v1/metrics`)
      assert.strictEqual(settings.serviceName, "mine")
      const inside = yield* Effect.gen(function*() {
        return { tracing: yield* Telemetry.isTracing, enabled: yield* Telemetry.TelemetryEnabled }
      }).pipe(Effect.provide(Telemetry.layer("svc")), withEnv(env), Effect.scoped)
      assert.deepStrictEqual(inside, { tracing: true, enabled: { traces: true, metrics: true } })
    }))

  it.effect("a per-signal endpoint is used as given, and the default service name applies without OTEL_SERVICE_NAME", () =>
    Effect.gen(function*() {
      const settings = yield* Telemetry.settings("svc").pipe(withEnv({
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://collector:4318/custom/traces"
      }))
      assert.strictEqual(settings.tracesUrl, "http://collector:4318/custom/traces")
      assert.isUndefined(settings.metricsUrl)
      assert.strictEqual(settings.serviceName, "svc")
    }))

  it.effect("OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none turn export off", () =>
    Effect.gen(function*() {
      const base = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" }
      const disabled = yield* Telemetry.settings("svc").pipe(withEnv({ ...base, OTEL_SDK_DISABLED: "true" }))
      assert.isUndefined(disabled.tracesUrl)
      assert.isUndefined(disabled.metricsUrl)
      const noTraces = yield* Telemetry.settings("svc").pipe(withEnv({ ...base, OTEL_TRACES_EXPORTER: "none" }))
      assert.isUndefined(noTraces.tracesUrl)
      assert.strictEqual(noTraces.metricsUrl, "http://127.0.0.1:4318/v1/metrics")
    }))

  it.effect("an endpoint without an http: or https: scheme (localhost:4318) is reported like a non-URL and leaves export off", () =>
    Effect.gen(function*() {
      const base = yield* Telemetry.settings("svc").pipe(withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "localhost:4318" }))
      assert.isUndefined(base.tracesUrl)
      assert.isUndefined(base.metricsUrl)
      assert.deepStrictEqual(base.problems, [
        `OTEL_EXPORTER_OTLP_ENDPOINT is not a URL ("localhost:4318"): traces are not exported`,
        `OTEL_EXPORTER_OTLP_ENDPOINT is not a URL ("localhost:4318"): metrics are not exported`
      ])
      const own = yield* Telemetry.settings("svc").pipe(withEnv({
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "ftp://collector/v1/traces",
        OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: "https://collector/v1/metrics"
      }))
      assert.isUndefined(own.tracesUrl)
      assert.strictEqual(own.metricsUrl, "https://collector/v1/metrics")
      assert.deepStrictEqual(own.problems, [
        `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is not a URL ("ftp://collector/v1/traces"): traces are not exported`
      ])
    }))

  it.effect("an endpoint that is not a URL is reported and leaves export off; headers and intervals are read", () =>
    Effect.gen(function*() {
      const settings = yield* Telemetry.settings("svc").pipe(withEnv({
        OTEL_EXPORTER_OTLP_ENDPOINT: "not a url",
        OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer%20abc,x-team=ops",
        OTEL_BSP_SCHEDULE_DELAY: "250",
        OTEL_METRIC_EXPORT_INTERVAL: "soon"
      }))
      assert.isUndefined(settings.tracesUrl)
      assert.isUndefined(settings.metricsUrl)
      assert.deepStrictEqual(settings.headers, { authorization: "Bearer abc", "x-team": "ops" })
      assert.strictEqual(settings.tracesIntervalMs, 250)
      assert.isUndefined(settings.metricsIntervalMs)
      assert.strictEqual(settings.problems.length, 3)
      assert.include(settings.problems[0] ?? "", "OTEL_EXPORTER_OTLP_ENDPOINT is not a URL")
      assert.include(settings.problems.join("\n"), "OTEL_METRIC_EXPORT_INTERVAL")
    }))

  it.effect("OTEL_EXPORTER_OTLP_TIMEOUT bounds each export request; 10 s without it, and an unusable value is reported", () =>
    Effect.gen(function*() {
      const base = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" }
      assert.strictEqual((yield* Telemetry.settings("svc").pipe(withEnv(base))).exportTimeoutMs, 10_000)
      assert.strictEqual((yield* Telemetry.settings("svc").pipe(withEnv({ ...base, OTEL_EXPORTER_OTLP_TIMEOUT: "2500" }))).exportTimeoutMs, 2500)
      const bad = yield* Telemetry.settings("svc").pipe(withEnv({ ...base, OTEL_EXPORTER_OTLP_TIMEOUT: "0" }))
      assert.strictEqual(bad.exportTimeoutMs, Telemetry.DEFAULT_EXPORT_TIMEOUT_MS)
      assert.deepStrictEqual(bad.problems, [`OTEL_EXPORTER_OTLP_TIMEOUT is not a positive whole number of milliseconds ("0"): the default is used`])
    }))
})
