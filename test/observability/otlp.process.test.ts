/**
 * OTLP export across processes: a broker process and two CLI client
 * processes (`intercom watch` receiving, `intercom send` sending), all with
 * `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at a receiver this test runs. One
 * send yields spans of one trace whose parent links go sender → broker →
 * recipient (→ hand-off to its host), each from its own process; the
 * broker's metrics arrive too (unset variables: telemetry.test.ts). A
 * broker started through the full parser (`--idle-exit`) exports as
 * `intercom-broker` too, not as the CLI.
 * Needs `npm run build` (the built `intercom`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { type Agent, makeAgent, runCli, startWatch } from "../cli-client/support.ts"
import { otlpReceiver } from "../support/otlpReceiver.ts"

/** The agent with OTLP pointed at `endpoint`, exporting often. */
const exporting = (agent: Agent, endpoint: string): Agent => ({
  ...agent,
  env: {
    ...agent.env,
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_BSP_SCHEDULE_DELAY: "100",
    OTEL_METRIC_EXPORT_INTERVAL: "200"
  }
})

describe("OTLP export", () => {
  it.live("one send from a client process to another through a broker process is one connected trace", () =>
    Effect.gen(function*() {
      const receiver = yield* otlpReceiver
      const agent = exporting(yield* makeAgent, receiver.endpoint)
      const watch = yield* startWatch(agent, "bob")
      const sent = yield* runCli(agent, ["send", "bob", "traced hello"])
      assert.strictEqual(sent.code, 0, sent.stderr)
      yield* watch.waitStdout(/traced hello/)

      const chain = yield* receiver.waitFor("the send's spans from all three processes", () => {
        const spans = receiver.spans()
        const send = spans.find((span) => span.name === "intercom.client.send")
        if (send === undefined) return undefined
        const route = spans.find((span) => span.name === "intercom.broker.route" && span.parentSpanId === send.spanId)
        const receive = route && spans.find((span) => span.name === "intercom.session.receive" && span.parentSpanId === route.spanId)
        const handoff = receive && spans.find((span) => span.name === "intercom.session.handoff" && span.parentSpanId === receive.spanId)
        return handoff === undefined || route === undefined || receive === undefined ? undefined : { send, route, receive, handoff }
      })
      const { send, route, receive, handoff } = chain
      for (const span of [route, receive, handoff]) assert.strictEqual(span.traceId, send.traceId, span.name)
      // Each hop from its own process: the CLI sender, the broker, the watching CLI.
      assert.strictEqual(send.service, "intercom-cli")
      assert.strictEqual(route.service, "intercom-broker")
      assert.strictEqual(receive.service, "intercom-cli")
      assert.strictEqual(send.attributes["intercom.message.kind"], "message")
      assert.strictEqual(route.attributes["intercom.outcome"], "delivered")
      assert.strictEqual(route.attributes["intercom.message.id"], send.attributes["intercom.message.id"])
      assert.strictEqual(receive.attributes["intercom.admission"], "queued")
      // The sender's span has no parent: the trace starts at the send.
      assert.isUndefined(send.parentSpanId)

      // The broker's metrics are exported too, read from its counters.
      yield* receiver.waitFor("intercom_broker_messages_routed{outcome=delivered} >= 1", () =>
        receiver.metrics().find((point) =>
          point.name === "intercom_broker_messages_routed" && point.attributes["outcome"] === "delivered" &&
          (point.value ?? 0) >= 1
        ))
    }))

  it.live("a broker started through the full CLI parser (--idle-exit) exports as intercom-broker", () =>
    Effect.gen(function*() {
      const receiver = yield* otlpReceiver
      const agent = exporting(yield* makeAgent, receiver.endpoint)
      // --idle-exit is not taken by the fast path (argv.ts): this broker runs under effect/cli (program.ts).
      const ran = yield* runCli(agent, ["broker", "--idle-exit", "1s"])
      assert.strictEqual(ran.code, 0, ran.stderr)
      // The broker's series are flushed when it exits, at the latest.
      const point = yield* receiver.waitFor("a metric point of the broker", () =>
        receiver.metrics().find((point) => point.name === "intercom_broker_sessions_live"))
      assert.strictEqual(point.service, "intercom-broker")
      assert.deepStrictEqual([...new Set(receiver.metrics().map((point) => point.service))], ["intercom-broker"])
    }))
})
