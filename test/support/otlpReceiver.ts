/**
 * A local OTLP/HTTP receiver for tests: a `node:http` server on 127.0.0.1
 * (a free port) that records every POST body (OTLP JSON, what effect's
 * exporters send with `OtlpSerialization.layerJson`) and answers 200. It
 * closes with the Scope. Reading what arrived is `spans()` / `metrics()`;
 * waiting for something is `waitFor`, which polls with a generous deadline.
 */
import { Data, Duration, Effect, Schedule, type Scope } from "effect"
import * as http from "node:http"

/** One span as the receiver saw it, with the service that sent it. */
export interface ReceivedSpan {
  readonly service: string
  readonly name: string
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string | undefined
  readonly attributes: Readonly<Record<string, unknown>>
}

/** One metric data point as the receiver saw it. */
export interface ReceivedPoint {
  readonly service: string
  readonly name: string
  /** The metric's `unit` (UCUM) and `description` as sent. */
  readonly unit: string | undefined
  readonly description: string | undefined
  readonly attributes: Readonly<Record<string, unknown>>
  readonly value: number | undefined
}

export class ReceiverTimeout extends Data.TaggedError("ReceiverTimeout")<{ readonly what: string; readonly seen: string }> {
  override get message(): string {
    return `OTLP receiver: timed out waiting for ${this.what}; received:\n${this.seen}`
  }
}

class NotYet extends Data.TaggedError("NotYet")<{}> {}

export interface OtlpReceiver {
  /** `http://127.0.0.1:<port>`: the value for OTEL_EXPORTER_OTLP_ENDPOINT. */
  readonly endpoint: string
  /** Paths of every POST so far, in order. */
  readonly paths: () => ReadonlyArray<string>
  readonly spans: () => ReadonlyArray<ReceivedSpan>
  readonly metrics: () => ReadonlyArray<ReceivedPoint>
  /** Polls `found` until it returns a value (or fails after `timeout`, default 20 s). */
  readonly waitFor: <A>(what: string, found: () => A | undefined, timeout?: Duration.Input) => Effect.Effect<A, ReceiverTimeout>
}

const record = (value: unknown): Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? Object.fromEntries(Object.entries(value)) : {}
const list = (value: unknown): ReadonlyArray<unknown> => (Array.isArray(value) ? value : [])

/** OTLP `KeyValue[]` as a plain object (the first of stringValue, intValue, doubleValue, boolValue). */
const attributesOf = (value: unknown): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  for (const item of list(value)) {
    const { key, value: any } = record(item)
    const v = record(any)
    if (typeof key === "string") out[key] = v.stringValue ?? v.intValue ?? v.doubleValue ?? v.boolValue
  }
  return out
}

const serviceOf = (resource: unknown): string => String(attributesOf(record(resource).attributes)["service.name"] ?? "")

/** Starts a receiver for the lifetime of the Scope. */
export const otlpReceiver: Effect.Effect<OtlpReceiver, never, Scope.Scope> = Effect.gen(function*() {
  const posts: Array<{ readonly path: string; readonly body: unknown }> = []
  const server = yield* Effect.acquireRelease(
    Effect.callback<http.Server>((resume) => {
      const created = http.createServer((request, response) => {
        const chunks: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => chunks.push(chunk))
        request.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8")
          let body: unknown = undefined
          try {
            body = JSON.parse(text)
          } catch {
            body = text
          }
          posts.push({ path: request.url ?? "", body })
          response.writeHead(200, { "content-type": "application/json" })
          response.end("{}")
        })
      })
      created.listen(0, "127.0.0.1", () => resume(Effect.succeed(created)))
    }),
    (server) => Effect.callback<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
  )
  const address = server.address()
  const port = typeof address === "object" && address !== null ? address.port : 0
  const spans = (): Array<ReceivedSpan> =>
    posts.filter((post) => post.path === "/v1/traces").flatMap((post) =>
      list(record(post.body).resourceSpans).flatMap((resourceSpans) => {
        const service = serviceOf(record(resourceSpans).resource)
        return list(record(resourceSpans).scopeSpans).flatMap((scope) =>
          list(record(scope).spans).map((raw) => {
            const span = record(raw)
            const parent = span.parentSpanId
            return {
              service,
              name: String(span.name),
              traceId: String(span.traceId),
              spanId: String(span.spanId),
              parentSpanId: typeof parent === "string" && parent !== "" ? parent : undefined,
              attributes: attributesOf(span.attributes)
            }
          })
        )
      })
    )
  const metrics = (): Array<ReceivedPoint> =>
    posts.filter((post) => post.path === "/v1/metrics").flatMap((post) =>
      list(record(post.body).resourceMetrics).flatMap((resourceMetrics) => {
        const service = serviceOf(record(resourceMetrics).resource)
        return list(record(resourceMetrics).scopeMetrics).flatMap((scope) =>
          list(record(scope).metrics).flatMap((raw) => {
            const metric = record(raw)
            const data = record(metric.sum ?? metric.gauge ?? metric.histogram)
            return list(data.dataPoints).map((rawPoint) => {
              const point = record(rawPoint)
              const value = point.asInt ?? point.asDouble ?? point.count
              return {
                service,
                name: String(metric.name),
                unit: typeof metric.unit === "string" ? metric.unit : undefined,
                description: typeof metric.description === "string" ? metric.description : undefined,
                attributes: attributesOf(point.attributes),
                value: value === undefined ? undefined : Number(value)
              }
            })
          })
        )
      })
    )
  const waitFor = <A>(what: string, found: () => A | undefined, timeout: Duration.Input = "20 seconds") =>
    Effect.suspend(() => {
      const value = found()
      return value === undefined ? Effect.fail(new NotYet()) : Effect.succeed(value)
    }).pipe(
      // Polled until found: the schedule never ends, so NotYet never escapes (the timeout below ends the wait).
      Effect.retry({ schedule: Schedule.spaced(Duration.millis(100)) }),
      Effect.orDie,
      Effect.timeoutOrElse({
        duration: timeout,
        orElse: () =>
          Effect.fail(
            new ReceiverTimeout({
              what,
              seen: spans().map((span) => `${span.service} ${span.name} ${span.traceId}/${span.spanId}<-${span.parentSpanId}`).join("\n")
            })
          )
      })
    )
  return { endpoint: `http://127.0.0.1:${port}`, paths: () => posts.map((post) => post.path), spans, metrics, waitFor }
})
