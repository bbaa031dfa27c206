/**
 * How the sends the broker routed ended, counted since it started: the
 * plain counters behind `routed` in `stats-v1` and the
 * `intercom_broker_messages_routed` metrics (docs/observability.md).
 *
 * Owned by the send pipeline (Send.ts), which counts each send once, when it
 * is answered: a few integer increments on the per-frame path, and a map
 * update only for a refusal. Read when metrics are collected.
 */
import type { Outcome } from "./DeliveryRecords.ts"

/** How one send ended: its answer, `staged` (a `replace` send held for coalescing) or `replayed` (a retry answered from its record). */
export type RouteOutcome = Outcome | "staged" | "replayed"

/** Per-outcome send counters (see the module header). */
export class RouteCounts {
  /** Written to the recipient's connection at once. */
  delivered = 0
  /** Queued in the mailbox for a session that is away. */
  queued = 0
  /** Staged for coalescing (`delivery-v1` replace). */
  staged = 0
  /** Retries answered from their replay record (P46). */
  replayed = 0
  /** Refused, over every code. */
  refused = 0
  /** Refusals by delivery code. */
  readonly refusedByCode = new Map<string, number>()

  /** Counts one send's outcome. */
  count(outcome: RouteOutcome): void {
    if (outcome === "staged") this.staged++
    else if (outcome === "replayed") this.replayed++
    else if (outcome.ok) {
      if (outcome.delivery === "queued") this.queued++
      else this.delivered++
    } else {
      this.refused++
      this.refusedByCode.set(outcome.code, (this.refusedByCode.get(outcome.code) ?? 0) + 1)
    }
  }
}

/** The name of an outcome, as span attributes and docs say it: delivered, queued, staged, replayed or refused. */
export const outcomeName = (outcome: RouteOutcome): "delivered" | "queued" | "staged" | "replayed" | "refused" =>
  typeof outcome === "string" ? outcome : outcome.ok ? (outcome.delivery === "queued" ? "queued" : "delivered") : "refused"
