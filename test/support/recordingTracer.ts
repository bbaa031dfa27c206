/**
 * A tracer for tests that keeps every span it makes (effect's own
 * `NativeSpan`s), so a test can read names, attributes and parents after
 * the fact.
 */
import { Tracer } from "effect"

/** A tracer and the spans it has made, in the order they started. */
export const recordingTracer = (): { readonly tracer: Tracer.Tracer; readonly spans: Array<Tracer.NativeSpan> } => {
  const spans: Array<Tracer.NativeSpan> = []
  const tracer = Tracer.make({
    span: (options) => {
      const span = new Tracer.NativeSpan(options)
      spans.push(span)
      return span
    }
  })
  return { tracer, spans }
}
