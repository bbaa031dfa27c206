/**
 * Trace context on the wire (extension `trace-v1`): a W3C `traceparent`
 * string (`00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`) that a
 * `send` may carry and a forwarded `message` carries to a recipient granted
 * the extension. It is advisory: a value that is not a version-00
 * traceparent is ignored (not forwarded, no span), as W3C Trace Context says
 * a receiver does with a malformed header, and the message is routed as if
 * it had none.
 */

/** The length of a version-00 traceparent. */
export const TRACEPARENT_LENGTH = 55

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/
const ZERO_TRACE = "0".repeat(32)
const ZERO_SPAN = "0".repeat(16)

/** The parts of a traceparent: whose trace, which span, and whether it was sampled. */
export interface TraceContext {
  readonly traceId: string
  readonly spanId: string
  readonly sampled: boolean
}

/**
 * The trace context a traceparent names, or undefined when `value` is not a
 * valid version-00 traceparent (all-zero ids are invalid).
 *
 * @example
 * ```ts
 * import { parseTraceparent } from "effect-intercom/protocol"
 *
 * parseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
 * // { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", sampled: true }
 * parseTraceparent("hello") // undefined
 * ```
 */
export const parseTraceparent = (value: unknown): TraceContext | undefined => {
  if (typeof value !== "string" || value.length !== TRACEPARENT_LENGTH) return undefined
  const match = TRACEPARENT.exec(value)
  if (match === null) return undefined
  const [, traceId = ZERO_TRACE, spanId = ZERO_SPAN, flags = "00"] = match
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined
  return { traceId, spanId, sampled: (Number.parseInt(flags, 16) & 1) === 1 }
}

/**
 * The traceparent of a span.
 *
 * @example
 * ```ts
 * import { formatTraceparent } from "effect-intercom/protocol"
 *
 * formatTraceparent({ traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", sampled: true })
 * // "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
 * ```
 */
export const formatTraceparent = (span: TraceContext): string =>
  `00-${span.traceId}-${span.spanId}-${span.sampled ? "01" : "00"}`
