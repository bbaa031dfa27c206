/**
 * `trace-v1` over real Unix sockets: a send's `traceparent` reaches a
 * recipient granted the extension — as it came from a broker that does not
 * trace, as the broker's routing span (child of the sender's) from one that
 * does — and never a base recipient; a sender without the extension, or a
 * malformed traceparent, puts none on the wire.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { ROUTE_SPAN_NAME } from "../../src/broker/RoutingSpans.ts"
import { TRACE_V1 } from "../../src/protocol/features.ts"
import { parseTraceparent } from "../../src/protocol/trace.ts"
import { assertDelivered, assertFailed } from "../support/assertions.ts"
import { message, messageFor, send, withBroker } from "../support/broker.ts"
import { recordingTracer } from "../support/recordingTracer.ts"

const traced = { frame: { features: [TRACE_V1] } }
const SENDER_CONTEXT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

describe("trace-v1", () => {
  it.live("the broker grants trace-v1 only to a client that asks for it", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const asking = yield* broker.session(traced)
      const base = yield* broker.session()
      assert.include(asking.registered.features ?? [], TRACE_V1)
      assert.notInclude(base.registered.features ?? [], TRACE_V1)
    }))

  it.live("a broker that does not trace forwards the sender's traceparent as it came to a traced recipient", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const sender = yield* broker.session({ name: "Sender", ...traced })
      yield* broker.session({ sessionId: "recipient", name: "Recipient", ...traced }).pipe(Effect.flatMap((recipient) =>
        Effect.gen(function*() {
          const hello = message("hello")
          assertDelivered(yield* send(sender.client, "recipient", hello, { traceparent: SENDER_CONTEXT }))
          const got = yield* messageFor(recipient.client, hello.id)
          assert.strictEqual(got.traceparent, SENDER_CONTEXT)
        })
      ))
    }))

  it.live("a base recipient gets no traceparent field, and the message otherwise as usual", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const sender = yield* broker.session({ name: "Sender", ...traced })
      const base = yield* broker.session({ sessionId: "base", name: "Base" })
      const hello = message("hello")
      assertDelivered(yield* send(sender.client, "base", hello, { traceparent: SENDER_CONTEXT }))
      const got = yield* messageFor(base.client, hello.id)
      assert.isFalse(Object.hasOwn(got, "traceparent"))
      assert.strictEqual(got.message.content.text, "hello")
    }))

  it.live("a traceparent from a sender without trace-v1, or a malformed one, is not forwarded and the send is delivered", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const base = yield* broker.session({ name: "BaseSender" })
      const sender = yield* broker.session({ name: "Sender", ...traced })
      const recipient = yield* broker.session({ sessionId: "recipient", name: "Recipient", ...traced })
      const fromBase = message("from a base sender")
      assertDelivered(yield* send(base.client, "recipient", fromBase, { traceparent: SENDER_CONTEXT }))
      assert.isFalse(Object.hasOwn(yield* messageFor(recipient.client, fromBase.id), "traceparent"))
      for (const bad of ["hello", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", SENDER_CONTEXT.toUpperCase(), 42]) {
        const attempt = message(`malformed ${String(bad)}`)
        assertDelivered(yield* send(sender.client, "recipient", attempt, { traceparent: bad }))
        assert.isFalse(Object.hasOwn(yield* messageFor(recipient.client, attempt.id), "traceparent"), String(bad))
      }
    }))

  it.live("a tracing broker makes a routing span, child of the sender's, and hands its own context on", () =>
    Effect.gen(function*() {
      const { tracer, spans } = recordingTracer()
      const broker = yield* withBroker().pipe(Effect.withTracer(tracer))
      const sender = yield* broker.session({ name: "Sender", ...traced })
      const recipient = yield* broker.session({ sessionId: "recipient", name: "Recipient", ...traced })
      const hello = message("hello")
      assertDelivered(yield* send(sender.client, "recipient", hello, { traceparent: SENDER_CONTEXT }))
      const got = yield* messageFor(recipient.client, hello.id)
      const route = spans.find((span) => span.name === ROUTE_SPAN_NAME)
      assert.isDefined(route)
      if (route === undefined) return
      const forwarded = parseTraceparent(got.traceparent)
      assert.deepStrictEqual(forwarded, { traceId: route.traceId, spanId: route.spanId, sampled: true })
      assert.strictEqual(route.traceId, "4bf92f3577b34da6a3ce929d0e0e4736")
      assert.strictEqual(Option.getOrUndefined(route.parent)?.spanId, "00f067aa0ba902b7")
      assert.strictEqual(route.status._tag, "Ended")
      assert.strictEqual(route.attributes.get("intercom.outcome"), "delivered")
      assert.strictEqual(route.attributes.get("intercom.message.id"), hello.id)
      assert.strictEqual(route.attributes.get("intercom.to"), "recipient")
    }))

  it.live("a refused traced send ends its routing span with the refusal code; an untraced send makes no span", () =>
    Effect.gen(function*() {
      const { tracer, spans } = recordingTracer()
      const broker = yield* withBroker().pipe(Effect.withTracer(tracer))
      const sender = yield* broker.session({ name: "Sender", ...traced })
      yield* broker.session({ sessionId: "recipient", name: "Recipient", ...traced })
      assertDelivered(yield* send(sender.client, "recipient", message("untraced")))
      assert.strictEqual(spans.filter((span) => span.name === ROUTE_SPAN_NAME).length, 0)
      assertFailed(yield* send(sender.client, "nobody", message("lost"), { traceparent: SENDER_CONTEXT }), "E_TARGET_NOT_FOUND")
      const route = spans.find((span) => span.name === ROUTE_SPAN_NAME)
      assert.strictEqual(route?.attributes.get("intercom.outcome"), "refused")
      assert.strictEqual(route?.attributes.get("intercom.refusal.code"), "E_TARGET_NOT_FOUND")
    }))
})
