/**
 * Traces through the session runtime (`trace-v1`), on the in-memory broker
 * under TestClock with a tracer that records effect's in-memory spans: an
 * ask and its reply form one trace — the asker's send, the broker's routing,
 * the answerer's receive and hand-off, the answerer's reply (child of that
 * receive) routed back, and the asker's receive that the reply waiter took —
 * and the ask's round trip is recorded in the client histogram (what
 * happens without a tracer: test/client/tracing.test.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Metric, Option, Queue, Tracer } from "effect"
import { ROUTE_SPAN_NAME } from "../../src/broker/RoutingSpans.ts"
import { SEND_SPAN_NAME } from "../../src/client/tracing.ts"
import { askRoundTrip } from "../../src/session/Ask.ts"
import { HANDOFF_SPAN_NAME, RECEIVE_SPAN_NAME } from "../../src/session/InboundTracing.ts"
import { memoryWorld } from "../support/memoryWorld.ts"
import { recordingTracer } from "../support/recordingTracer.ts"

const parentId = (span: Tracer.NativeSpan): string | undefined => Option.getOrUndefined(span.parent)?.spanId

describe("session tracing (trace-v1)", () => {
  it.effect("an ask and its reply are one trace: send → route → receive → hand-off, reply under the receive, back to the waiter", () => {
    const { tracer, spans } = recordingTracer()
    return Effect.gen(function*() {
      const world = yield* memoryWorld()
      const asker = yield* world.session("asker")
      const answerer = yield* world.session("answerer")
      const asking = yield* Effect.forkChild(asker.session.ask({ to: "answerer", message: "migrate?" }))
      const question = yield* Queue.take(answerer.inbound)
      yield* answerer.session.reply({ message: "done" })
      yield* Fiber.join(asking)
      // The waiter resolves inside the asker's admission; one more message through the same inbound fiber
      // is the barrier after which that admission (and its span) has ended.
      yield* answerer.session.send({ to: "asker", message: "after" })
      yield* Queue.take(asker.inbound)

      const named = (name: string) => spans.filter((span) => span.name === name)
      const [askSend, replySend] = named(SEND_SPAN_NAME)
      assert.isDefined(askSend)
      assert.isDefined(replySend)
      if (askSend === undefined || replySend === undefined) return
      assert.strictEqual(askSend.attributes.get("intercom.message.kind"), "ask")
      assert.strictEqual(askSend.attributes.get("intercom.message.id"), question.message.id)
      const [askRoute, replyRoute] = named(ROUTE_SPAN_NAME)
      const [answererReceive, askerReceive] = named(RECEIVE_SPAN_NAME).filter((span) =>
        span.attributes.get("intercom.message.kind") !== "message"
      )
      const [handoff] = named(HANDOFF_SPAN_NAME)
      assert.strictEqual(askRoute && parentId(askRoute), askSend.spanId)
      assert.strictEqual(answererReceive && parentId(answererReceive), askRoute?.spanId)
      assert.strictEqual(answererReceive?.attributes.get("intercom.admission"), "queued")
      assert.strictEqual(handoff && parentId(handoff), answererReceive?.spanId)
      assert.strictEqual(parentId(replySend), answererReceive?.spanId)
      assert.strictEqual(replySend.attributes.get("intercom.message.kind"), "reply")
      assert.strictEqual(replyRoute && parentId(replyRoute), replySend.spanId)
      assert.strictEqual(askerReceive && parentId(askerReceive), replyRoute?.spanId)
      assert.strictEqual(askerReceive?.attributes.get("intercom.admission"), "reply_waiter")
      for (const span of [askRoute, answererReceive, handoff, replySend, replyRoute, askerReceive]) {
        assert.strictEqual(span?.traceId, askSend.traceId, span?.name)
      }
      const roundTrips = yield* Metric.value(askRoundTrip)
      assert.strictEqual(roundTrips.count, 1)
    }).pipe(Effect.withTracer(tracer), Effect.provideService(Metric.MetricRegistry, new Map()))
  })
})
