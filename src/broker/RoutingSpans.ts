/**
 * The broker's routing spans (`trace-v1`): one span per traced send, named
 * `intercom.broker.route`, child of the sender's span (its `traceparent`),
 * and itself the parent handed on to the recipient. It records the routing
 * decision: the outcome (delivered, queued, staged, replayed, refused) and,
 * for a refusal, its code.
 *
 * Exists only in a broker whose program installed a tracer (Broker.ts reads
 * it at startup); the span is made and ended synchronously through that
 * tracer's own `span` method, inside the send pipeline's one synchronous
 * pass, so no Effect runs per frame. A send without `traceparent` never
 * reaches this module.
 */
import { Context, Exit, Option, Tracer } from "effect"
import { formatTraceparent, parseTraceparent } from "../protocol/trace.ts"
import type { Peer } from "./Peer.ts"
import { outcomeName, type RouteOutcome } from "./RouteCounts.ts"

/** The span name of a routing decision. */
export const ROUTE_SPAN_NAME = "intercom.broker.route"

/** A routing span begun for one send: its context to hand on, and how to end it. */
export interface RoutingSpan {
  /** The traceparent the recipient gets: this span's. */
  readonly traceparent: string
  /** Records the outcome and ends the span. */
  readonly end: (peer: Peer, frame: { readonly [key: string]: unknown }, outcome: RouteOutcome) => void
}

const EMPTY_ANNOTATIONS = Context.empty()

/** Makes routing spans through one tracer (see the module header). */
export class RoutingSpans {
  private readonly tracer: Tracer.Tracer
  private readonly nanos: () => bigint

  /** @param nanos the broker clock in nanoseconds (span start and end times). */
  constructor(tracer: Tracer.Tracer, nanos: () => bigint) {
    this.tracer = tracer
    this.nanos = nanos
  }

  /** Begins the routing span of a send carrying `traceparent`; undefined when it is not a valid one (ignored). */
  begin(traceparent: unknown): RoutingSpan | undefined {
    const parent = parseTraceparent(traceparent)
    if (parent === undefined) return undefined
    const span = this.tracer.span({
      name: ROUTE_SPAN_NAME,
      parent: Option.some(Tracer.externalSpan(parent)),
      annotations: EMPTY_ANNOTATIONS,
      links: [],
      startTime: this.nanos(),
      kind: "server",
      root: false,
      sampled: parent.sampled
    })
    return {
      traceparent: formatTraceparent(span),
      end: (peer, frame, outcome) => {
        annotate(span, peer, frame, outcome)
        span.end(this.nanos(), Exit.void)
      }
    }
  }
}

/** The attributes of a routing span (docs/observability.md lists them). */
const annotate = (span: Tracer.Span, peer: Peer, frame: { readonly [key: string]: unknown }, outcome: RouteOutcome) => {
  const message = frame.message
  if (typeof message === "object" && message !== null) {
    const id = Reflect.get(message, "id")
    if (typeof id === "string") span.attribute("intercom.message.id", id)
    span.attribute("intercom.message.kind", messageKind(message))
  }
  if (peer.session !== undefined) span.attribute("intercom.from", peer.session.id)
  if (typeof frame.to === "string") span.attribute("intercom.to", frame.to)
  span.attribute("intercom.frame", typeof frame.type === "string" ? frame.type : "send")
  span.attribute("intercom.outcome", outcomeName(outcome))
  if (typeof outcome === "object" && !outcome.ok) span.attribute("intercom.refusal.code", outcome.code)
}

/** `ask` (expects a reply), `reply` (answers one) or `message`. */
const messageKind = (message: object): "ask" | "reply" | "message" =>
  Reflect.get(message, "expectsReply") === true ? "ask" : Reflect.get(message, "replyTo") !== undefined ? "reply" : "message"
