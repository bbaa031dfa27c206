/**
 * The client's side of `trace-v1`: a send runs in an `intercom.client.send`
 * span whose context goes out as `traceparent` only under a tracer that
 * goes somewhere, and only to a broker that granted `trace-v1`; under
 * effect's default tracer the request is sent as it was given.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Tracer } from "effect"
import type { Delivery } from "../../src/client/events.ts"
import { type SendRequest, sendFrameText } from "../../src/client/requests.ts"
import { SEND_SPAN_NAME, tracedSend } from "../../src/client/tracing.ts"
import { TRACE_V1 } from "../../src/protocol/features.ts"
import { formatTraceparent } from "../../src/protocol/trace.ts"

const request: SendRequest = { to: "bob", message: { id: "m1", timestamp: 1, content: { text: "hi" } } }
const CONTEXT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

/** Runs `tracedSend`, capturing the request the connection would have sent. */
const capture = () => {
  const sent: Array<SendRequest> = []
  const run = tracedSend(request, "send", (traced) =>
    Effect.sync((): Delivery => {
      sent.push(traced)
      return { messageId: traced.message.id, delivery: "socket_delivered" }
    }))
  return { sent, run }
}

describe("client tracing (trace-v1)", () => {
  it.effect("under effect's default tracer the request goes out unchanged, with no traceparent", () =>
    Effect.gen(function*() {
      const { sent, run } = capture()
      yield* run
      assert.strictEqual(sent.length, 1)
      assert.isFalse(Object.hasOwn(sent[0] ?? {}, "traceparent"))
    }))

  it.effect("under a tracer the send runs in a span whose context is the request's traceparent", () =>
    Effect.gen(function*() {
      const spans: Array<Tracer.NativeSpan> = []
      const tracer = Tracer.make({
        span: (options) => {
          const span = new Tracer.NativeSpan(options)
          spans.push(span)
          return span
        }
      })
      const { sent, run } = capture()
      yield* run.pipe(Effect.withTracer(tracer))
      const span = spans.find((s) => s.name === SEND_SPAN_NAME)
      assert.isDefined(span)
      if (span === undefined) return
      assert.strictEqual(sent[0]?.traceparent, formatTraceparent(span))
      assert.strictEqual(span.kind, "producer")
      assert.strictEqual(span.attributes.get("intercom.to"), "bob")
      assert.strictEqual(span.attributes.get("intercom.delivery"), "socket_delivered")
      assert.strictEqual(span.status._tag, "Ended")
    }))

  it("the send frame carries traceparent only for a broker that granted trace-v1", () => {
    const traced: SendRequest = { ...request, traceparent: CONTEXT }
    const granted = sendFrameText(traced, "send", new Set([TRACE_V1]), 0)
    const base = sendFrameText(traced, "send", new Set(), 0)
    assert.strictEqual(typeof granted === "string" && JSON.parse(granted).traceparent, CONTEXT)
    assert.isTrue(typeof base === "string" && !Object.hasOwn(JSON.parse(base), "traceparent"))
  })
})
