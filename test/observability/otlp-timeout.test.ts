/**
 * OTLP export to a collector that does not answer (docs/observability.md): each
 * request is abandoned after `OTEL_EXPORTER_OTLP_TIMEOUT` and fails; effect retries
 * it three times a second apart, then stops exporting for 60 s and drops what it
 * held. Without the bound one unanswered request stopped metric export for good,
 * and a tracer held every unanswered request, each with its batch, open forever.
 *
 * The collector is a real local HTTP server; the exporters' schedule (interval,
 * request timeout, retry delay, the 60 s pause) runs on the TestClock, so each step
 * is a clock adjustment followed by waiting for what the server sees.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Deferred, Effect, Exit, Fiber, Layer, Metric, Queue, Scope } from "effect"
import { TestClock } from "effect/testing"
import * as http from "node:http"
// Loaded with the file (Telemetry.layer imports it on first use): the first test does not pay for it.
import "../../src/observability/OtlpExport.ts"
import * as Telemetry from "../../src/observability/Telemetry.ts"

/** One request as the collector saw it: its body (once read) and when the client gave it up. */
interface Arrival {
  readonly body: Deferred.Deferred<string>
  readonly closed: Deferred.Deferred<void>
}

/**
 * A collector on 127.0.0.1 that reads every request and answers only those `answer`
 * picks (by their 1-based number); the others stay open until the client aborts them.
 */
const collector = (answer: (n: number) => boolean) =>
  Effect.gen(function*() {
    const arrivals = yield* Queue.unbounded<Arrival>()
    let count = 0
    let open = 0
    const server = yield* Effect.acquireRelease(
      Effect.callback<http.Server>((resume) => {
        const created = http.createServer((request, response) => {
          const n = ++count
          open++
          const arrival: Arrival = { body: Deferred.makeUnsafe(), closed: Deferred.makeUnsafe() }
          const chunks: Array<Buffer> = []
          request.on("data", (chunk: Buffer) => chunks.push(chunk))
          request.on("end", () => {
            Deferred.doneUnsafe(arrival.body, Exit.succeed(Buffer.concat(chunks).toString("utf8")))
            if (answer(n)) response.writeHead(200, { "content-type": "application/json" }).end("{}")
          })
          response.on("close", () => {
            open--
            Deferred.doneUnsafe(arrival.closed, Exit.void)
          })
          Queue.offerUnsafe(arrivals, arrival)
        })
        created.listen(0, "127.0.0.1", () => resume(Effect.succeed(created)))
      }),
      (server) =>
        Effect.callback<void>((resume) => {
          server.closeAllConnections()
          server.close(() => resume(Effect.void))
        })
    )
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    /** The next request; fails the test if none comes within 3 s of real time. */
    const next = Queue.take(arrivals).pipe(
      Effect.timeoutOrElse({ duration: "3 seconds", orElse: () => Effect.die(new Error("no export request came")) }),
      TestClock.withLive
    )
    /** Waits (real time, at most 3 s) for the client to give `arrival` up. */
    const closed = (arrival: Arrival) =>
      Deferred.await(arrival.closed).pipe(
        Effect.timeoutOrElse({ duration: "3 seconds", orElse: () => Effect.die(new Error("the request was never abandoned")) }),
        TestClock.withLive
      )
    const body = (arrival: Arrival) => Deferred.await(arrival.body).pipe(TestClock.withLive)
    return { endpoint: `http://127.0.0.1:${port}`, next, closed, body, count: () => count, open: () => open }
  })

/** Telemetry.layer built for `env` into a scope of its own (closed by the caller). */
const exporting = (env: Record<string, string>) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const layer = Telemetry.layer("test").pipe(
      Layer.provide(Layer.succeed(ConfigProvider.ConfigProvider)(ConfigProvider.fromEnv({ env })))
    )
    const context = yield* Layer.buildWithScope(layer, scope)
    return { scope, context }
  })

describe("OTLP export to a collector that does not answer", () => {
  it.effect("an unanswered metrics request is abandoned after the timeout; export goes on once the collector answers", () =>
    Effect.gen(function*() {
      const server = yield* collector((n) => n > 1)
      const { context, scope } = yield* exporting({
        OTEL_EXPORTER_OTLP_ENDPOINT: server.endpoint,
        OTEL_TRACES_EXPORTER: "none",
        OTEL_METRIC_EXPORT_INTERVAL: "1000",
        OTEL_EXPORTER_OTLP_TIMEOUT: "2000"
      })
      yield* Metric.update(Metric.counter("otlp_timeout_test"), 1).pipe(Effect.provideContext(context))
      yield* TestClock.adjust("1 second")
      const first = yield* server.next
      yield* TestClock.adjust("2 seconds") // the timeout: the client aborts the request
      yield* server.closed(first)
      yield* TestClock.adjust("1 second") // effect's retry delay
      const retried = yield* server.next
      assert.include(yield* server.body(retried), "otlp_timeout_test")
      yield* server.closed(retried) // answered
      // The next interval exports again: one unanswered request did not stop export.
      yield* TestClock.adjust("1 second")
      const later = yield* server.next
      assert.include(yield* server.body(later), "otlp_timeout_test")
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("span export: each attempt is abandoned, then export stops for 60 s and drops what it held", () =>
    Effect.gen(function*() {
      const server = yield* collector(() => false)
      const { context, scope } = yield* exporting({
        OTEL_EXPORTER_OTLP_ENDPOINT: server.endpoint,
        OTEL_METRICS_EXPORTER: "none",
        OTEL_BSP_SCHEDULE_DELAY: "1000",
        OTEL_EXPORTER_OTLP_TIMEOUT: "2000"
      })
      const span = (name: string) => Effect.void.pipe(Effect.withSpan(name), Effect.provideContext(context))
      yield* span("before-hang")
      yield* TestClock.adjust("1 second")
      // The first attempt and effect's three retries: each abandoned at the timeout, one open at a time.
      for (let attempt = 1; attempt <= 4; attempt++) {
        const arrival = yield* server.next
        assert.include(yield* server.body(arrival), "before-hang")
        assert.strictEqual(server.open(), 1, `attempt ${attempt}: one request open`)
        yield* TestClock.adjust("2 seconds")
        yield* server.closed(arrival)
        assert.strictEqual(server.open(), 0, `attempt ${attempt}: abandoned`)
        if (attempt < 4) yield* TestClock.adjust("1 second")
      }
      // Export is off for 60 s: what is made meanwhile is dropped, nothing is sent.
      yield* span("while-off")
      yield* TestClock.adjust("59 seconds")
      assert.strictEqual(server.count(), 4)
      yield* TestClock.adjust("2 seconds")
      // Back on: a new span goes out alone; the held batch and the spans made while off are gone.
      yield* span("after-pause")
      yield* TestClock.adjust("1 second")
      const resumed = yield* server.next
      const body = yield* server.body(resumed)
      assert.include(body, "after-pause")
      assert.notInclude(body, "before-hang")
      assert.notInclude(body, "while-off")
      assert.strictEqual(server.count(), 5)
      yield* TestClock.adjust("2 seconds")
      yield* server.closed(resumed)
      // Closing waits for the export in flight (its retry is due in 1 s) up to effect's 3 s shutdown bound.
      const closing = yield* Effect.forkChild(Scope.close(scope, Exit.void), { startImmediately: true })
      yield* TestClock.adjust("3 seconds")
      yield* Fiber.join(closing)
    }))
})
