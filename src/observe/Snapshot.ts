/**
 * The broker's live view as a client holds it (`observe-v1`): the Schemas of
 * a `BrokerSnapshot` and of the `ObserveEvent`s a watch streams (defined with
 * the wire protocol, src/protocol/observe.ts, and re-exported here for the
 * views built on them), and `applyEvent`, which folds an event into the
 * snapshot it follows — so a view keeps one current snapshot whatever it
 * received.
 */
import {
  type BrokerSnapshot,
  type ObserveEvent,
  REFUSAL_RING_SIZE,
  type SessionRow,
  TRAFFIC_RING_SIZE
} from "../protocol/observe.ts"

export {
  BrokerSnapshot,
  DEFAULT_OBSERVE_INTERVAL_MS,
  MAX_OBSERVE_INTERVAL_MS,
  MAX_OBSERVED_ASKS,
  MAX_OBSERVED_SESSIONS,
  MIN_OBSERVE_INTERVAL_MS,
  ObservedParty,
  ObservedState,
  ObserveEvent,
  OpenAsk,
  QueueDepths,
  REFUSAL_RING_SIZE,
  RefusalEntry,
  SessionRow,
  TRAFFIC_RING_SIZE,
  TrafficEntry,
  TrafficKind,
  TrafficOutcome,
  TrafficRate,
  TrafficTotals
} from "../protocol/observe.ts"

/**
 * The snapshot after `event`: routed messages and refusals are appended
 * (keeping the latest TRAFFIC_RING_SIZE / REFUSAL_RING_SIZE, as the broker
 * does), a `state` replaces everything else.
 *
 * @example
 * ```ts
 * import { Stream } from "effect"
 * import { applyEvent, ObserveClient } from "effect-intercom/observe"
 *
 * // One current snapshot per update of the watch.
 * const live = ObserveClient.watch({}).pipe(
 *   Stream.scan(undefined as BrokerSnapshot | undefined, (current, next) =>
 *     "type" in next ? current && applyEvent(current, next) : next)
 * )
 * ```
 */
export const applyEvent = (snapshot: BrokerSnapshot, event: ObserveEvent): BrokerSnapshot => {
  switch (event.type) {
    case "traffic":
      return { ...snapshot, traffic: [...snapshot.traffic, ...event.entries].slice(-TRAFFIC_RING_SIZE) }
    case "refusals":
      return { ...snapshot, refusals: [...snapshot.refusals, ...event.entries].slice(-REFUSAL_RING_SIZE) }
    case "state":
      return { ...event.state, traffic: snapshot.traffic, refusals: snapshot.refusals }
  }
}

/** Whether an element of `ObserveClient.watch` is an event (else it is the first snapshot). */
export const isObserveEvent = (element: BrokerSnapshot | ObserveEvent): element is ObserveEvent =>
  "type" in element

/** How long a session has not been read from before `healthOf` calls it quiet, in ms. */
export const QUIET_AFTER_MS = 60_000

/**
 * A session's health in a word, from what the broker knows: `no-asks` when
 * it said it takes no asks now, `quiet` when the broker has read nothing from
 * it for QUIET_AFTER_MS, else `ok`.
 */
export const healthOf = (row: SessionRow, now: number): "ok" | "no-asks" | "quiet" =>
  row.acceptsAsks === false ? "no-asks" : now - row.lastSeen > QUIET_AFTER_MS ? "quiet" : "ok"

/** Updates missed, at the least, before a watch's view counts its broker as not answering. */
export const STALE_AFTER_INTERVALS = 3
/** The least time without an update before a watch's view counts its broker as not answering, in ms. */
export const MIN_STALE_AFTER_MS = 3_000

/**
 * How long a watch with `intervalMs` may go without an update before its
 * view says the broker is not answering: three intervals, at least 3 s. A
 * broker sends a watch an update every interval even when nothing changed,
 * so a longer silence means it is stopped (SIGSTOP, a debugger), hung or
 * overloaded, while its connection stays open — and what the view shows is
 * no longer current. `intercom top` and `intercom ui` both use it.
 */
export const staleAfterMs = (intervalMs: number): number => Math.max(MIN_STALE_AFTER_MS, STALE_AFTER_INTERVALS * intervalMs)
