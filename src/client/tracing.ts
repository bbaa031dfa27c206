/**
 * The client's send spans (`trace-v1`): `intercom.client.send` around a
 * send or `supervisor_send` — from the call to the broker's answer — whose
 * context goes out as the send's `traceparent`, so the broker's routing
 * span and the recipient's spans join its trace.
 *
 * Only under a tracer that goes somewhere (`Telemetry.isTracing`): with
 * effect's default tracer the send runs as it is, with no span and no
 * `traceparent` on the wire.
 */
import { Effect, Tracer } from "effect"
import { formatTraceparent } from "../protocol/trace.ts"
import type { Delivery } from "./events.ts"
import type { SendFrameType, SendRequest } from "./requests.ts"

/** The span name of a send. */
export const SEND_SPAN_NAME = "intercom.client.send"

/** `ask` (expects a reply), `reply` (answers one) or `message`. */
const kindOf = (request: SendRequest): "ask" | "reply" | "message" =>
  request.message.expectsReply === true ? "ask" : request.message.replyTo === undefined ? "message" : "reply"

/**
 * Runs `send` with `request`, inside a send span that `request` carries as
 * its `traceparent` when tracing (see the module header).
 */
export const tracedSend = <E, R>(
  request: SendRequest,
  frameType: SendFrameType,
  send: (request: SendRequest) => Effect.Effect<Delivery, E, R>
): Effect.Effect<Delivery, E, R> =>
  Effect.flatMap(Effect.tracer, (tracer) =>
    tracer === Tracer.nativeTracer
      ? send(request)
      : Effect.useSpan(SEND_SPAN_NAME, {
        kind: "producer",
        attributes: {
          "intercom.to": request.to,
          "intercom.message.id": request.message.id,
          "intercom.message.kind": kindOf(request),
          "intercom.frame": frameType
        }
      }, (span) =>
        Effect.withParentSpan(send({ ...request, traceparent: formatTraceparent(span) }), span).pipe(
          Effect.tap((delivery) => Effect.sync(() => span.attribute("intercom.delivery", delivery.delivery))),
          Effect.tapError((error) =>
            Effect.sync(() => {
              if (typeof error === "object" && error !== null && "code" in error && typeof error.code === "string") {
                span.attribute("intercom.refusal.code", error.code)
              }
            })
          )
        )))
