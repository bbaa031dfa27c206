/**
 * The page's reading of the broker's live view: `observe-v1` snapshots
 * (src/observe) turned into the `ViewInput` View.ts works on, and the
 * stream of them `intercom ui` follows.
 *
 * The one place that knows the snapshot's shape: a party that is a live
 * session is passed on by its id (View.ts shows it by name, and tells apart
 * sessions of one name in different groups), any other by its name (an id's
 * first 8 characters when it has none), health is `healthOf`'s
 * word, refused sends join the routed ones in the traffic (as arrows marked
 * with their code), and an ask restored from the durable store, whose asking
 * time the broker no longer knows, counts from the broker's start.
 */
import * as Stream from "effect/Stream"
import { ObserveClient, type ObserveError, type WatchOptions } from "../observe/ObserveClient.ts"
import {
  applyEvent,
  type BrokerSnapshot,
  healthOf,
  isObserveEvent,
  type ObservedParty,
  type ObserveEvent
} from "../observe/Snapshot.ts"
import type { InputTraffic, ViewInput } from "./View.ts"

const nameOf = (party: ObservedParty): string => party.name ?? party.id.slice(0, 8)

/** The `ViewInput` of one snapshot. */
export const fromSnapshot = (snapshot: BrokerSnapshot): ViewInput => {
  // A live party by its id, so the view finds its session (and its group); any other by its name.
  const live = new Set(snapshot.sessions.map((row) => row.id))
  const partyRef = (party: ObservedParty): string => live.has(party.id) ? party.id : nameOf(party)
  const routed: Array<InputTraffic> = snapshot.traffic.map((entry) => ({
    at: entry.at,
    from: partyRef(entry.from),
    to: partyRef(entry.to),
    kind: entry.kind,
    messageId: entry.messageId,
    replyTo: entry.replyTo ?? null,
    outcome: entry.outcome
  }))
  const refused: Array<InputTraffic> = snapshot.refusals.map((entry) => ({
    at: entry.at,
    from: partyRef(entry.from),
    to: entry.to,
    kind: "message",
    messageId: entry.messageId,
    replyTo: null,
    outcome: entry.code
  }))
  return {
    at: snapshot.at,
    sessionCount: snapshot.sessionCount,
    sessions: snapshot.sessions.map((row) => ({
      id: row.id,
      name: row.name ?? row.id.slice(0, 8),
      group: row.scope === undefined ? row.group : `${row.group} (${row.scope})`,
      status: row.status ?? "",
      health: healthOf(row, snapshot.at),
      pendingAsks: row.pendingAsks,
      lastActivityAt: row.lastActivity > 0 ? row.lastActivity : null,
      messagesIn: row.messagesIn,
      messagesOut: row.messagesOut,
      ratePerSecond: row.ratePerSec
    })),
    queues: { mailbox: snapshot.queues.mailbox, staging: snapshot.queues.staged, outbox: snapshot.queues.outboxChars },
    askCount: snapshot.askCount,
    openAsks: snapshot.asks.map((ask) => ({
      from: partyRef(ask.from),
      to: partyRef(ask.to),
      messageId: ask.messageId,
      askedAt: ask.askedAt ?? snapshot.startedAt
    })),
    refusals: snapshot.refusals.map((entry) => ({
      at: entry.at,
      from: partyRef(entry.from),
      target: entry.to,
      code: entry.code,
      reason: entry.reason
    })),
    // Sorted by time, routed and refused together; a stable sort keeps the broker's order within one millisecond.
    traffic: [...routed, ...refused].sort((a, b) => a.at - b.at),
    totals: {
      routed: snapshot.totals.delivered + snapshot.totals.queued + snapshot.totals.staged,
      refused: snapshot.totals.refused,
      messagesPerSecond: snapshot.rate.routedPerSec
    }
  }
}

/**
 * One snapshot per element of a watch: the first snapshot, then that
 * snapshot with each event folded in (`applyEvent`).
 */
export const currentSnapshots = <E, R>(
  watch: Stream.Stream<BrokerSnapshot | ObserveEvent, E, R>
): Stream.Stream<BrokerSnapshot, E, R> =>
  watch.pipe(
    Stream.mapAccum(
      (): BrokerSnapshot | undefined => undefined,
      (current, element) => {
        const next = isObserveEvent(element) ? (current === undefined ? undefined : applyEvent(current, element)) : element
        return [next, next === undefined ? [] : [next]]
      }
    )
  )

/** The stream `intercom ui` follows: the broker's view as `ViewInput`s, every `intervalMs`. */
export const observedInputs = (options: WatchOptions): Stream.Stream<ViewInput, ObserveError> =>
  currentSnapshots(ObserveClient.watch(options)).pipe(Stream.map(fromSnapshot))
