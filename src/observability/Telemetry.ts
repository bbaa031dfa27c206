/**
 * Telemetry: OTLP/HTTP export of traces and metrics, switched on by the
 * standard OpenTelemetry environment variables and off without them.
 *
 * It owns the decision "does this process export, and where": `settings`
 * reads `OTEL_EXPORTER_OTLP_ENDPOINT` (or the per-signal
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `_METRICS_ENDPOINT`),
 * `OTEL_SERVICE_NAME`, `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SDK_DISABLED`,
 * `OTEL_TRACES_EXPORTER` / `OTEL_METRICS_EXPORTER` (`none` turns one signal
 * off), `OTEL_BSP_SCHEDULE_DELAY`, `OTEL_METRIC_EXPORT_INTERVAL` and
 * `OTEL_EXPORTER_OTLP_TIMEOUT`; `layer`
 * installs effect's own OTLP tracer and metrics exporter (OTLP JSON over
 * `fetch`) for what is configured. With nothing configured the layer is
 * empty: no tracer is installed, nothing is exported, and the code that
 * traces (the client, the broker's routing spans, the session runtime)
 * sees effect's default tracer and does nothing (`isTracing`).
 *
 * The broker, the CLI and the pi extension provide `layer` themselves; a
 * program using `IntercomClient` directly provides it too (docs/observability.md).
 */
import { ConfigProvider, Context, Effect, Layer, Option, Tracer } from "effect"

/** What this process exports, and where (see the module header). */
export interface TelemetrySettings {
  /** Where spans go (OTLP/HTTP JSON), or undefined: no tracing. */
  readonly tracesUrl: string | undefined
  /** Where metrics go (OTLP/HTTP JSON), or undefined: no metric export. */
  readonly metricsUrl: string | undefined
  /** `service.name` of the resource: `OTEL_SERVICE_NAME`, else the process's own default. */
  readonly serviceName: string
  /** Extra request headers (`OTEL_EXPORTER_OTLP_HEADERS`: `key=value,key2=value2`, values URI-encoded). */
  readonly headers: Readonly<Record<string, string>> | undefined
  /** How often spans are sent, ms (`OTEL_BSP_SCHEDULE_DELAY`; effect's default 5 s). */
  readonly tracesIntervalMs: number | undefined
  /** How often metrics are sent, ms (`OTEL_METRIC_EXPORT_INTERVAL`; effect's default 10 s). */
  readonly metricsIntervalMs: number | undefined
  /**
   * How long one export request may take, answer and body included, ms
   * (`OTEL_EXPORTER_OTLP_TIMEOUT`; default `DEFAULT_EXPORT_TIMEOUT_MS`):
   * past it the request is abandoned and counts as failed.
   */
  readonly exportTimeoutMs: number
  /** Settings that were set but unusable, in words (the signal they belong to is off). */
  readonly problems: ReadonlyArray<string>
}

/**
 * How long an export request may take when `OTEL_EXPORTER_OTLP_TIMEOUT`
 * does not say (the OpenTelemetry default): 10 s.
 */
export const DEFAULT_EXPORT_TIMEOUT_MS = 10_000

/**
 * Which signals this process exports: set by `layer`, read by code that
 * would otherwise do work for nothing (the broker registers its metric
 * series only when metrics are exported).
 */
export const TelemetryEnabled = Context.Reference<{ readonly traces: boolean; readonly metrics: boolean }>(
  "effect-intercom/observability/TelemetryEnabled",
  { defaultValue: () => ({ traces: false, metrics: false }) }
)

/**
 * One variable from effect's current `ConfigProvider` (the environment
 * unless a test provides another), read with the provider's own `load`
 * rather than through `Config`: these are plain strings, and `Config`'s
 * schema decoding costs every process that starts a few ms of CPU on first
 * use (docs/performance.md, "Startup"). An empty value counts as unset, as
 * with `Config.String`.
 */
const optionalString = (provider: ConfigProvider.ConfigProvider, name: string) =>
  Effect.map(provider.load([name]), (node) => Option.fromUndefinedOr(node?.value === "" ? undefined : node?.value))

/**
 * Whether `url` is an http: or https: URL. `URL.canParse` alone is not
 * enough: it reads `localhost:4318` as the scheme `localhost:`, to which
 * nothing can be exported.
 */
const isHttpUrl = (url: string): boolean => {
  if (!URL.canParse(url)) return false
  const protocol = new URL(url).protocol
  return protocol === "http:" || protocol === "https:"
}

/** An endpoint for one signal: its own variable as given, else the base one with `/v1/<signal>` appended. */
const endpoint = (
  signal: "TRACES" | "METRICS",
  own: Option.Option<string>,
  base: Option.Option<string>,
  problems: Array<string>
): string | undefined => {
  if (Option.isSome(own) && own.value.trim() !== "") {
    const url = own.value.trim()
    if (isHttpUrl(url)) return url
    problems.push(`OTEL_EXPORTER_OTLP_${signal}_ENDPOINT is not a URL (${JSON.stringify(url)}): ${signal.toLowerCase()} are not exported`)
    return undefined
  }
  if (Option.isNone(base) || base.value.trim() === "") return undefined
  const url = base.value.trim()
  if (!isHttpUrl(url)) {
    problems.push(`OTEL_EXPORTER_OTLP_ENDPOINT is not a URL (${JSON.stringify(url)}): ${signal.toLowerCase()} are not exported`)
    return undefined
  }
  return `${url.endsWith("/") ? url : `${url}/`}v1/${signal.toLowerCase()}`
}

/** A signal is off when its exporter list is set without `otlp` (e.g. `none`). */
const exporterOn = (list: Option.Option<string>): boolean =>
  Option.isNone(list) || list.value.trim() === "" ||
  list.value.split(",").some((name) => name.trim().toLowerCase() === "otlp")

/** A positive whole number of ms from `name`, or undefined (unset, or unusable: then reported in `problems`). */
const interval = (name: string, value: Option.Option<string>, problems: Array<string>): number | undefined => {
  if (Option.isNone(value) || value.value.trim() === "") return undefined
  const ms = Number(value.value)
  if (Number.isInteger(ms) && ms > 0) return ms
  problems.push(`${name} is not a positive whole number of milliseconds (${JSON.stringify(value.value)}): the default is used`)
  return undefined
}

const parseHeaders = (value: Option.Option<string>, problems: Array<string>): Record<string, string> | undefined => {
  if (Option.isNone(value) || value.value.trim() === "") return undefined
  const headers: Record<string, string> = {}
  for (const pair of value.value.split(",")) {
    const at = pair.indexOf("=")
    if (at <= 0) {
      problems.push(`OTEL_EXPORTER_OTLP_HEADERS has an entry without key=value (${JSON.stringify(pair)}): it is ignored`)
      continue
    }
    try {
      headers[decodeURIComponent(pair.slice(0, at).trim())] = decodeURIComponent(pair.slice(at + 1).trim())
    } catch {
      problems.push(`OTEL_EXPORTER_OTLP_HEADERS has an entry that is not URI-encoded (${JSON.stringify(pair)}): it is ignored`)
    }
  }
  return headers
}

/**
 * The telemetry settings of this process, from its environment (effect's
 * `ConfigProvider`); `serviceName` is the name used when
 * `OTEL_SERVICE_NAME` is not set.
 */
export const settings = (serviceName: string): Effect.Effect<TelemetrySettings> =>
  Effect.gen(function*() {
    const provider = yield* ConfigProvider.ConfigProvider
    const read = (name: string) => optionalString(provider, name)
    const env = yield* Effect.all({
      disabled: read("OTEL_SDK_DISABLED"),
      base: read("OTEL_EXPORTER_OTLP_ENDPOINT"),
      traces: read("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
      metrics: read("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"),
      tracesExporter: read("OTEL_TRACES_EXPORTER"),
      metricsExporter: read("OTEL_METRICS_EXPORTER"),
      service: read("OTEL_SERVICE_NAME"),
      headers: read("OTEL_EXPORTER_OTLP_HEADERS"),
      tracesInterval: read("OTEL_BSP_SCHEDULE_DELAY"),
      metricsInterval: read("OTEL_METRIC_EXPORT_INTERVAL"),
      timeout: read("OTEL_EXPORTER_OTLP_TIMEOUT")
    }).pipe(Effect.orElseSucceed(() => undefined))
    const problems: Array<string> = []
    const disabled = env === undefined ||
      (Option.isSome(env.disabled) && env.disabled.value.trim().toLowerCase() === "true")
    return {
      tracesUrl: disabled || !exporterOn(env.tracesExporter) ? undefined : endpoint("TRACES", env.traces, env.base, problems),
      metricsUrl: disabled || !exporterOn(env.metricsExporter) ? undefined : endpoint("METRICS", env.metrics, env.base, problems),
      serviceName: env !== undefined && Option.isSome(env.service) && env.service.value.trim() !== ""
        ? env.service.value.trim()
        : serviceName,
      headers: env === undefined ? undefined : parseHeaders(env.headers, problems),
      tracesIntervalMs: env === undefined ? undefined : interval("OTEL_BSP_SCHEDULE_DELAY", env.tracesInterval, problems),
      metricsIntervalMs: env === undefined ? undefined : interval("OTEL_METRIC_EXPORT_INTERVAL", env.metricsInterval, problems),
      exportTimeoutMs: (env === undefined ? undefined : interval("OTEL_EXPORTER_OTLP_TIMEOUT", env.timeout, problems)) ??
        DEFAULT_EXPORT_TIMEOUT_MS,
      problems
    }
  })

/**
 * OTLP export for this process as its environment configures it (see the
 * module header); `serviceName` names it unless `OTEL_SERVICE_NAME` does.
 * Unusable settings are logged as warnings and leave their signal off; they
 * never stop the program.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Telemetry } from "effect-intercom/observability"
 *
 * const program = Effect.log("hello")
 * program.pipe(Effect.provide(Telemetry.layer("my-agent")), Effect.runFork)
 * ```
 */
export const layer = (serviceName: string): Layer.Layer<never> =>
  Layer.unwrap(Effect.gen(function*() {
    const found = yield* settings(serviceName)
    for (const problem of found.problems) yield* Effect.logWarning(`Telemetry: ${problem}`)
    if (found.tracesUrl === undefined && found.metricsUrl === undefined) return Layer.empty
    // Loaded only when something is exported: a process without OTLP settings never loads the exporters.
    const { exportersLayer } = yield* Effect.promise(() => import("./OtlpExport.ts"))
    return exportersLayer(found)
  }))

/**
 * Whether spans made now would go anywhere: the current tracer is not
 * effect's default in-memory one. Code on a hot path checks this once and
 * makes no span (and sends no trace context) when it is false.
 */
export const isTracing: Effect.Effect<boolean> = Effect.map(Effect.tracer, (tracer) => tracer !== Tracer.nativeTracer)
