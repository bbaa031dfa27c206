/**
 * Broker statistics (`stats-v1`): the `stats` frame, answered at once with a
 * `stats_result` carrying a snapshot of the broker's metrics, and the
 * snapshot itself, which the OTLP metric series read too (MetricSeries.ts).
 *
 * The snapshot is read from the plain counters and sizes the Router's
 * modules keep anyway (RouteCounts, Output, MailDelivery, ReplaceStaging,
 * AskEdges, StoreCommits) and a walk over the live sessions for the counts
 * by group and status: work done only when someone asks, never per frame.
 * Read-only: answering changes nothing but the asker's outbox.
 *
 * A `stats_result` must fit one 1 MiB frame (UTF-8 bytes), and the rows by
 * scope, group and status are as many as the live sessions at worst (one
 * each, with 256-character fields: about 2.3 KB a row in "€"), so the answer
 * keeps the rows that fit, most sessions first, and tells a client granted
 * `stats-rows-cut-v1` how many rows and sessions it left out. The OTLP
 * series read the whole snapshot: no frame carries it.
 */
import { MAX_FRAME_BYTES } from "../protocol/constants.ts"
import { STATS_ROWS_CUT_V1, STATS_V1 } from "../protocol/features.ts"
import { decodeClientFrame, isFrameDecodeError } from "../protocol/decode.ts"
import { frameBytes, leadingThatFit } from "../protocol/framing.ts"
import type { BrokerStatsSnapshot, RowsOmitted, SessionCount } from "../protocol/stats.ts"
import type { AskEdges } from "./AskEdges.ts"
import type { Registry } from "./Registry.ts"
import type { RouteCounts } from "./RouteCounts.ts"
import type { FrameHandlers, RouterContext } from "./RouterContext.ts"
import type { StoreCommits } from "./StoreCommits.ts"

/** Where the snapshot's numbers come from: the Router's modules. */
export interface StatsSources {
  readonly registry: Registry
  readonly unregistered: () => number
  readonly routed: RouteCounts
  readonly mailboxDepth: () => number
  readonly stagingDepth: () => number
  readonly queuedChars: () => number
  readonly backpressureWaits: () => number
  readonly asks: AskEdges
  /** The durable store's commits, when the broker has a store. */
  readonly storeCommits: StoreCommits | undefined
}

/** The stats concern: its frame and the snapshot (see the module header). */
export class Stats {
  private readonly ctx: RouterContext
  private readonly sources: StatsSources
  private readonly startedAt: number

  constructor(ctx: RouterContext, sources: StatsSources) {
    this.ctx = ctx
    this.sources = sources
    this.startedAt = ctx.now()
  }

  readonly frames: FrameHandlers = {
    stats: {
      handle: (peer, raw) => {
        // A base client never sends it; one that was not granted the extension broke the protocol.
        if (!peer.features.has(STATS_V1)) return this.ctx.protocolError(peer, `"stats" frame without the ${STATS_V1} extension`)
        const frame = decodeClientFrame.stats(raw)
        if (isFrameDecodeError(frame)) return this.ctx.protocolError(peer, frame.message)
        this.ctx.output.enqueue(peer, statsResultFrame(frame.requestId, this.snapshot(), peer.features.has(STATS_ROWS_CUT_V1)))
      }
    }
  }

  /** The broker's metrics now. */
  snapshot(): BrokerStatsSnapshot {
    const s = this.sources
    const now = this.ctx.now()
    const oldest = s.asks.oldestAskedAt()
    const routed = s.routed
    return {
      at: now,
      startedAt: this.startedAt,
      sessions: {
        live: s.registry.live,
        unregistered: s.unregistered(),
        byGroupStatus: sessionCounts(s.registry)
      },
      routed: {
        delivered: routed.delivered,
        queued: routed.queued,
        staged: routed.staged,
        replayed: routed.replayed,
        refused: routed.refused,
        refusedByCode: Object.fromEntries(routed.refusedByCode)
      },
      mailbox: { depth: s.mailboxDepth() },
      staging: { depth: s.stagingDepth() },
      outbox: { queuedChars: s.queuedChars(), backpressureWaits: s.backpressureWaits() },
      asks: { open: s.asks.size, oldestAgeMs: oldest === undefined ? null : Math.max(0, now - oldest) },
      ...(s.storeCommits === undefined ? {} : {
        store: {
          commits: s.storeCommits.commits,
          failures: s.storeCommits.failures,
          commitLatency: s.storeCommits.latency()
        }
      })
    }
  }
}

/**
 * Live sessions counted by scope, group and status: most sessions first, a tie in the order of the row's key (scope,
 * group, status), so the order, and the rows a cut keeps, do not depend on who registered first.
 */
const sessionCounts = (registry: Registry): Array<SessionCount> => {
  const counts = new Map<string, SessionCount>()
  for (const session of registry.byKey.values()) {
    const scope = session.scopeKey.startsWith("scope:") ? session.scopeKey.slice("scope:".length) : ""
    const status = session.fields.status ?? ""
    const key = JSON.stringify([scope, session.group, status])
    const known = counts.get(key)
    counts.set(key, { scope, group: session.group, status, count: (known?.count ?? 0) + 1 })
  }
  return [...counts.entries()]
    .sort(([a, rowA], [b, rowB]) => rowB.count - rowA.count || (a < b ? -1 : a > b ? 1 : 0))
    .map(([, count]) => count)
}

/** `snapshot` with `byGroupStatus` replaced by `rows` and, when `omitted` is given, `byGroupStatusOmitted` set. */
const withRows = (
  snapshot: BrokerStatsSnapshot,
  rows: ReadonlyArray<SessionCount>,
  omitted: RowsOmitted | undefined
): BrokerStatsSnapshot => ({
  ...snapshot,
  sessions: {
    live: snapshot.sessions.live,
    unregistered: snapshot.sessions.unregistered,
    byGroupStatus: rows,
    ...(omitted === undefined ? {} : { byGroupStatusOmitted: omitted })
  }
})

/** The `stats_result` text answering `requestId` with `stats`. */
const resultText = (requestId: string, stats: BrokerStatsSnapshot): string =>
  `{"type":"stats_result","requestId":${JSON.stringify(requestId)},"stats":${JSON.stringify(stats)}}`

/**
 * The `stats_result` answering `requestId` with `snapshot`, within MAX_FRAME_BYTES (UTF-8): `byGroupStatus` keeps
 * its first rows (the most sessions) while they fit, in bytes counted row by row, never the whole list serialised.
 * The room is what the frame leaves with no rows and, when `tellOmitted` (`stats-rows-cut-v1`), with the omitted
 * counts at their largest (every row, every session): what it writes is never more digits.
 */
const statsResultFrame = (requestId: string, snapshot: BrokerStatsSnapshot, tellOmitted: boolean): string => {
  const rows = snapshot.sessions.byGroupStatus
  let sessions = 0
  for (const row of rows) sessions += row.count
  const room = MAX_FRAME_BYTES -
    frameBytes(resultText(requestId, withRows(snapshot, [], tellOmitted ? { rows: rows.length, sessions } : undefined)))
  const kept = leadingThatFit(rows, room)
  let keptSessions = 0
  for (let i = 0; i < kept; i++) keptSessions += rows[i]!.count
  const omitted = tellOmitted ? { rows: rows.length - kept, sessions: sessions - keptSessions } : undefined
  return resultText(requestId, withRows(snapshot, kept === rows.length ? rows : rows.slice(0, kept), omitted))
}
