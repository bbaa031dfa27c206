/**
 * Broker statistics (extension `stats-v1`): the wire shapes of `stats`
 * (client → broker) and `stats_result` (broker → client), whose `stats` is a
 * read-only snapshot of the broker's metrics — what `intercom broker stats`
 * prints and what the broker exports over OTLP (docs/observability.md has
 * every field with its unit).
 */
import { Schema } from "effect"
import * as Limits from "./limits.ts"

const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/** `stats`, client → broker (`stats-v1`): asks for a snapshot of the broker's metrics. */
export const StatsFrame = Schema.Struct({
  type: Schema.tag("stats"),
  requestId: Schema.String.check(Schema.isMaxLength(Limits.MAX_ID_LENGTH))
})
/** A `stats` frame, as decoded. */
export type StatsFrame = typeof StatsFrame.Type

/** Live sessions of one group with one status (`status` is `""` when a session announced none). */
export const SessionCount = Schema.Struct({
  scope: Schema.String,
  group: Schema.String,
  status: Schema.String,
  count: Count
})
/** Live sessions of one group and status. */
export type SessionCount = typeof SessionCount.Type

/**
 * What a `stats_result` left out of `byGroupStatus` to fit its 1 MiB frame
 * (extension `stats-rows-cut-v1`): how many rows, and how many live sessions
 * those rows count. Both 0 when nothing was left out.
 */
export const RowsOmitted = Schema.Struct({ rows: Count, sessions: Count })
/** Rows of `byGroupStatus` left out, and their sessions. */
export type RowsOmitted = typeof RowsOmitted.Type

/**
 * A latency histogram in milliseconds: how many observations, their sum,
 * smallest and largest (0 while there are none), and cumulative bucket counts (`count` observations took at most
 * `leMs`; observations above the last bound are only in the total).
 */
export const LatencyHistogram = Schema.Struct({
  count: Count,
  sumMs: Schema.Finite,
  minMs: Schema.Finite,
  maxMs: Schema.Finite,
  buckets: Schema.Array(Schema.Struct({ leMs: Schema.Finite, count: Count }))
})
/** A latency histogram in milliseconds. */
export type LatencyHistogram = typeof LatencyHistogram.Type

/** What a broker reports in `stats_result` (counters since the broker started; gauges as of `at`). */
export const BrokerStatsSnapshot = Schema.Struct({
  /** Broker clock when the snapshot was taken, epoch ms. */
  at: Schema.Finite,
  /** Broker clock when the broker started, epoch ms. */
  startedAt: Schema.Finite,
  sessions: Schema.Struct({
    /** Live registered sessions. */
    live: Count,
    /** Connections accepted and not registered yet. */
    unregistered: Count,
    /**
     * Live sessions by scope, group and status, most sessions first (ties in
     * the order of scope, group, status); in a `stats_result`, the first rows
     * that fit its 1 MiB frame.
     */
    byGroupStatus: Schema.Array(SessionCount),
    /**
     * The rows `byGroupStatus` left out, and their sessions: present only to a
     * client granted `stats-rows-cut-v1`, in every answer to it.
     */
    byGroupStatusOmitted: Schema.optionalKey(RowsOmitted)
  }),
  /** Sends routed since start, by outcome (`supervisor_send` included). */
  routed: Schema.Struct({
    delivered: Count,
    queued: Count,
    staged: Count,
    /** Retries answered from their replay record (P46). */
    replayed: Count,
    refused: Count,
    /** Refusals by delivery code (`E_…`). */
    refusedByCode: Schema.Record(Schema.String, Count)
  }),
  /** Messages held for sessions that are away. */
  mailbox: Schema.Struct({ depth: Count }),
  /** `replace` messages staged for coalescing (`delivery-v1`). */
  staging: Schema.Struct({ depth: Count }),
  outbox: Schema.Struct({
    /** Characters of frame text queued in every connection's outbox together. */
    queuedChars: Count,
    /** Times a connection's reader waited for room in a full outbox (backpressure), since start. */
    backpressureWaits: Count
  }),
  asks: Schema.Struct({
    /** Open ask edges (asks awaiting their reply). */
    open: Count,
    /** Age of the oldest open ask on the broker clock, ms; null when none is open or its age is unknown (restored from the store). */
    oldestAgeMs: Schema.NullOr(Schema.Finite)
  }),
  /** The durable store's commits (absent for a memory-only broker). */
  store: Schema.optionalKey(Schema.Struct({
    commits: Count,
    failures: Count,
    commitLatency: LatencyHistogram
  }))
})
/** A broker's metrics snapshot (`stats-v1`). */
export type BrokerStatsSnapshot = typeof BrokerStatsSnapshot.Type

/** `stats_result`, broker → client (`stats-v1`): the answer to `stats`. */
export const StatsResultFrame = Schema.Struct({
  type: Schema.tag("stats_result"),
  requestId: Schema.String,
  stats: BrokerStatsSnapshot
})
/** A `stats_result` frame, as decoded. */
export type StatsResultFrame = typeof StatsResultFrame.Type
