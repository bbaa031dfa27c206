/**
 * The recipient's spans (`trace-v1`): `intercom.session.receive`, child of
 * the routing hop's context on an inbound message (`traceparent`), covering
 * its admission (de-duplication, the reply waiter, the journal, the queue
 * to the host) with the admission's outcome as an attribute; and
 * `intercom.session.handoff`, child of the receive span, one per attempt to
 * hand the message to the host. A reply sent in answer to a traced message
 * has the receive span as its parent (Actions.ts), so the reply joins the
 * same trace.
 *
 * Only for a message that carries a valid traceparent and only under a
 * tracer that goes somewhere; otherwise the handling runs as it is.
 */
import { Effect, Tracer } from "effect"
import type { InboundMessage } from "../client/events.ts"
import { parseTraceparent } from "../protocol/trace.ts"

/** The span name of a message's admission. */
export const RECEIVE_SPAN_NAME = "intercom.session.receive"
/** The span name of one attempt to hand a message to the host. */
export const HANDOFF_SPAN_NAME = "intercom.session.handoff"

/**
 * How an inbound message was admitted: a `duplicate` (answered, dropped), a
 * redelivery `joined` to the one being handed over, the `reply_waiter`'s
 * answer, or `queued` for the host.
 */
export type Admission = "duplicate" | "joined" | "reply_waiter" | "queued"

/**
 * Runs `admit` for `inbound`, inside a receive span when the message is
 * traced (see the module header); `admit` gets that span (to keep as the
 * message's trace) and answers how the message was admitted.
 */
export const receiving = (
  inbound: InboundMessage,
  admit: (span: Tracer.AnySpan | undefined) => Effect.Effect<Admission>
): Effect.Effect<void> => {
  const parent = inbound.traceparent === undefined ? undefined : parseTraceparent(inbound.traceparent)
  if (parent === undefined) return Effect.asVoid(admit(undefined))
  return Effect.flatMap(Effect.tracer, (tracer) =>
    tracer === Tracer.nativeTracer
      ? Effect.asVoid(admit(undefined))
      : Effect.useSpan(RECEIVE_SPAN_NAME, {
        parent: Tracer.externalSpan(parent),
        kind: "consumer",
        attributes: {
          "intercom.from": inbound.from.id,
          "intercom.message.id": inbound.message.id,
          "intercom.message.kind": inbound.message.expectsReply === true
            ? "ask"
            : inbound.message.replyTo === undefined
            ? "message"
            : "reply"
        }
      }, (span) =>
        Effect.withParentSpan(admit(span), span).pipe(
          Effect.tap((admission) => Effect.sync(() => span.attribute("intercom.admission", admission))),
          Effect.asVoid
        )))
}

/** `handOver` inside a hand-off span under `trace` (the message's receive span), or as it is without one. */
export const handingOff = <A, E, R>(
  trace: Tracer.AnySpan | undefined,
  attributes: Record<string, unknown>,
  handOver: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  trace === undefined ? handOver : Effect.withSpan(handOver, HANDOFF_SPAN_NAME, { parent: trace, kind: "internal", attributes })
