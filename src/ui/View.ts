/**
 * What the `intercom ui` page shows, computed from one broker snapshot: the
 * `UiView` the server streams to the page as JSON.
 *
 * Pure (the time is an argument), so every rule here is a unit test:
 * session ids shown as names, ages from the snapshot's clock, asks joined
 * with their replies, an open ask older than the stuck threshold marked
 * `stuck` (in the asks table, the joined table and the chart), and the
 * chart's rows (SequenceChart.ts).
 *
 * The input is `ViewInput`, the page's own reading of a snapshot; the
 * adapter from the observe-v1 snapshot is `fromSnapshot` (ObservedInput.ts),
 * so a change of the snapshot's shape touches one function.
 */
import { type ChartLane, type ChartRow, laneLabel, lanesOf, renderChart } from "./SequenceChart.ts"

/** One live session, as the page reads it from a snapshot. */
export interface InputSession {
  readonly id: string
  readonly name: string
  readonly group: string
  readonly status: string
  readonly health: string
  readonly pendingAsks: number
  readonly lastActivityAt: number | null
  readonly messagesIn: number
  readonly messagesOut: number
  /** Messages per second in and out, if the snapshot says; else `null`. */
  readonly ratePerSecond: number | null
}

/** One routed message of the recent-traffic ring. */
export interface InputTraffic {
  readonly at: number
  /** Session id (or name) of the sender. */
  readonly from: string
  /** Session id of the recipient, or the target as the sender named it. */
  readonly to: string
  readonly kind: "message" | "ask" | "reply"
  readonly messageId: string
  /** For a reply: the ask it answers. */
  readonly replyTo: string | null
  /** `delivered`, `queued`, `staged`, or the refusal's code. */
  readonly outcome: string
}

/** The page's reading of one snapshot. */
export interface ViewInput {
  /** The broker's clock when it took the snapshot (ms since the epoch). */
  readonly at: number
  /** Live sessions in all (`sessions` may hold fewer: the broker bounds the list). */
  readonly sessionCount: number
  readonly sessions: ReadonlyArray<InputSession>
  /** Messages in the mailbox, `replace` messages staged, characters queued in the outboxes. */
  readonly queues: { readonly mailbox: number; readonly staging: number; readonly outbox: number }
  /** Open asks in all (`openAsks` may hold fewer: the broker lists the oldest 100). */
  readonly askCount: number
  /** The open asks the broker listed, at most the 100 oldest. */
  readonly openAsks: ReadonlyArray<{ readonly from: string; readonly to: string; readonly messageId: string; readonly askedAt: number }>
  readonly refusals: ReadonlyArray<
    { readonly at: number; readonly from: string; readonly target: string; readonly code: string; readonly reason: string }
  >
  /** Oldest first. */
  readonly traffic: ReadonlyArray<InputTraffic>
  readonly totals: { readonly routed: number; readonly refused: number; readonly messagesPerSecond: number }
}

/** The state of the ui's link to the broker. */
export interface ConnectionState {
  /** `stale`: connected, but the broker has sent nothing for a while (LiveView.ts); what is shown is its last update. */
  readonly state: "connecting" | "connected" | "stale" | "lost"
  /** What the page shows in its header, e.g. `connected`, `broker not reachable: …`. */
  readonly detail: string
}

/** A row of the sessions table. */
export interface SessionRow {
  readonly id: string
  readonly name: string
  readonly group: string
  readonly status: string
  readonly health: string
  readonly pendingAsks: number
  readonly lastActivityAgoMs: number | null
  readonly messagesIn: number
  readonly messagesOut: number
  readonly ratePerSecond: number | null
}

/** A row of the open-asks table. */
export interface AskRow {
  readonly from: string
  readonly to: string
  readonly messageId: string
  readonly askedAt: number
  readonly ageMs: number
  readonly stuck: boolean
}

/** An ask joined with its reply, when the reply is in the traffic ring. */
export interface ExchangeRow {
  readonly from: string
  readonly to: string
  readonly messageId: string
  readonly askedAt: number
  readonly latencyMs: number | null
  /** `answered`, `open`, `stuck` (open past the threshold), `refused`, or `closed` (no longer open, no reply seen: timed out, cancelled, or its reply left the ring). */
  readonly state: "answered" | "open" | "stuck" | "refused" | "closed"
}

/** A row of the refusals table. */
export interface RefusalRow {
  readonly at: number
  readonly from: string
  readonly target: string
  readonly code: string
  readonly reason: string
}

/** Everything the page renders, streamed to it as JSON. */
export interface UiView {
  readonly connection: ConnectionState
  readonly socketPath: string
  /** The time the view was computed for. */
  readonly at: number
  readonly stuckAfterMs: number
  readonly totals: {
    readonly sessions: number
    readonly messagesPerSecond: number
    readonly routed: number
    readonly refused: number
    readonly openAsks: number
    readonly stuckAsks: number
    readonly mailbox: number
    readonly staging: number
    /** Characters queued in every outbox together. */
    readonly outbox: number
  }
  readonly sessions: ReadonlyArray<SessionRow>
  readonly openAsks: ReadonlyArray<AskRow>
  readonly exchanges: ReadonlyArray<ExchangeRow>
  readonly refusals: ReadonlyArray<RefusalRow>
  /** The sequence chart's SVG markup (SequenceChart.ts). */
  readonly chart: string
}

/** How many of the most recent traffic rows the chart draws. */
export const CHART_ROWS = 60

/** What `buildView` needs besides the snapshot. */
export interface ViewContext {
  readonly now: number
  readonly stuckAfterMs: number
  readonly connection: ConnectionState
  readonly socketPath: string
}

const refusedOutcome = (outcome: string): boolean => outcome.startsWith("E_") || outcome === "refused"

const seconds = (ms: number): string => ms < 1_000 ? `${Math.round(ms)} ms` : `${(ms / 1_000).toFixed(1)} s`

/** The view of `input` (or of no snapshot yet: empty tables) at `context.now`. */
export const buildView = (input: ViewInput | undefined, context: ViewContext): UiView => {
  const snapshot = input ?? emptyInput(context.now)
  const lanes = sessionLanes(snapshot.sessions)
  const partyOf = lanes.partyOf
  const nameOf = (idOrName: string): string => laneLabel(partyOf(idOrName))
  // Ages count from the later of the two clocks: a snapshot is never "in the future" of the view.
  const now = Math.max(context.now, snapshot.at)
  const stuck = (askedAt: number) => now - askedAt >= context.stuckAfterMs

  const openAsks: Array<AskRow> = snapshot.openAsks.map((ask) => ({
    from: nameOf(ask.from),
    to: nameOf(ask.to),
    messageId: ask.messageId,
    askedAt: ask.askedAt,
    ageMs: now - ask.askedAt,
    stuck: stuck(ask.askedAt)
  }))
  openAsks.sort((a, b) => a.askedAt - b.askedAt)
  const openById = new Map(openAsks.map((ask) => [ask.messageId, ask]))

  const replies = new Map<string, InputTraffic>()
  for (const entry of snapshot.traffic) {
    if (entry.kind === "reply" && entry.replyTo !== null && !refusedOutcome(entry.outcome)) replies.set(entry.replyTo, entry)
  }

  const exchanges: Array<ExchangeRow> = []
  const joined = new Set<string>()
  for (const entry of snapshot.traffic) {
    if (entry.kind !== "ask") continue
    joined.add(entry.messageId)
    const reply = replies.get(entry.messageId)
    const open = openById.get(entry.messageId)
    exchanges.push({
      from: nameOf(entry.from),
      to: nameOf(entry.to),
      messageId: entry.messageId,
      askedAt: entry.at,
      latencyMs: reply === undefined ? null : reply.at - entry.at,
      state: reply !== undefined
        ? "answered"
        : refusedOutcome(entry.outcome)
        ? "refused"
        : open !== undefined
        ? (open.stuck ? "stuck" : "open")
        : "closed"
    })
  }
  // An open ask older than the traffic ring is still an exchange the person wants to see.
  for (const ask of openAsks) {
    if (joined.has(ask.messageId)) continue
    exchanges.push({
      from: ask.from,
      to: ask.to,
      messageId: ask.messageId,
      askedAt: ask.askedAt,
      latencyMs: null,
      state: ask.stuck ? "stuck" : "open"
    })
  }
  exchanges.sort((a, b) => b.askedAt - a.askedAt)

  const chartRows: Array<ChartRow> = snapshot.traffic.slice(-CHART_ROWS).map((entry) => {
    const refused = refusedOutcome(entry.outcome)
    const open = openById.get(entry.messageId)
    const reply = replies.get(entry.messageId)
    const note = refused
      ? entry.outcome
      : entry.kind === "ask"
      ? (reply !== undefined
        ? `answered in ${seconds(reply.at - entry.at)}`
        : open !== undefined
        ? `${open.stuck ? "STUCK, " : ""}open ${seconds(open.ageMs)}`
        : "")
      : entry.kind === "reply" && entry.replyTo !== null
      ? `to ${entry.replyTo.slice(0, 8)}`
      : ""
    const outcome = !refused && entry.outcome !== "delivered" ? entry.outcome : ""
    return {
      at: entry.at,
      from: partyOf(entry.from),
      to: partyOf(entry.to),
      kind: entry.kind,
      messageId: entry.messageId,
      note: [note, outcome].filter((part) => part !== "").join(" · "),
      stuck: entry.kind === "ask" && open !== undefined && open.stuck,
      refused
    }
  })

  return {
    connection: context.connection,
    socketPath: context.socketPath,
    at: now,
    stuckAfterMs: context.stuckAfterMs,
    totals: {
      sessions: snapshot.sessionCount,
      messagesPerSecond: snapshot.totals.messagesPerSecond,
      routed: snapshot.totals.routed,
      refused: snapshot.totals.refused,
      // All open asks, not only the listed ones; stuck is known for the listed ones alone.
      openAsks: snapshot.askCount,
      stuckAsks: openAsks.filter((ask) => ask.stuck).length,
      mailbox: snapshot.queues.mailbox,
      staging: snapshot.queues.staging,
      outbox: snapshot.queues.outbox
    },
    sessions: snapshot.sessions.map((session) => ({
      id: session.id,
      name: session.name,
      group: session.group,
      status: session.status,
      health: session.health,
      pendingAsks: session.pendingAsks,
      lastActivityAgoMs: session.lastActivityAt === null ? null : Math.max(0, now - session.lastActivityAt),
      messagesIn: session.messagesIn,
      messagesOut: session.messagesOut,
      ratePerSecond: session.ratePerSecond
    })),
    openAsks,
    exchanges,
    refusals: snapshot.refusals.map((refusal) => ({ ...refusal, from: nameOf(refusal.from) })).sort((a, b) => b.at - a.at),
    chart: renderChart(lanesOf(lanes.live, chartRows), chartRows)
  }
}

/**
 * The chart's lanes of the live sessions, and the lane of any party a row
 * names. A session's lane is keyed by its group and name: sessions of one
 * name in different groups get a lane each, and the lane shows the group
 * when its name alone is ambiguous (two sessions of one name and group share
 * a lane). Lanes are in name order (then group), so they stay put while the
 * sessions' order (most recently active first) changes.
 *
 * A party is a session id or a name (ObservedInput.ts passes a live session
 * by its id): an id gets its session's lane; a name (a session that left, a
 * refused target) gets the lane of the one live session of that name if
 * there is exactly one, else a lane of its own, keyed by the name alone.
 */
const sessionLanes = (sessions: ReadonlyArray<InputSession>): {
  readonly live: ReadonlyArray<ChartLane>
  readonly partyOf: (idOrName: string) => ChartLane
} => {
  const keyOf = (session: InputSession) => JSON.stringify(["session", session.group, session.name])
  const groupsByName = new Map<string, Set<string>>()
  for (const session of sessions) {
    const groups = groupsByName.get(session.name) ?? new Set<string>()
    groups.add(session.group)
    groupsByName.set(session.name, groups)
  }
  const byKey = new Map<string, ChartLane>()
  for (const session of sessions) {
    const key = keyOf(session)
    if (byKey.has(key)) continue
    const ambiguous = (groupsByName.get(session.name)?.size ?? 0) > 1
    byKey.set(key, { key, name: session.name, group: ambiguous ? session.group : undefined })
  }
  const byId = new Map(sessions.map((session) => [session.id, byKey.get(keyOf(session))]))
  const byName = new Map<string, ChartLane>()
  for (const lane of byKey.values()) {
    if ((groupsByName.get(lane.name)?.size ?? 0) === 1) byName.set(lane.name, lane)
  }
  const live = [...byKey.values()].sort((a, b) => a.name.localeCompare(b.name) || (a.group ?? "").localeCompare(b.group ?? ""))
  return {
    live,
    partyOf: (idOrName) =>
      byId.get(idOrName) ?? byName.get(idOrName) ?? { key: JSON.stringify(["other", idOrName]), name: idOrName, group: undefined }
  }
}

const emptyInput = (at: number): ViewInput => ({
  at,
  sessionCount: 0,
  sessions: [],
  queues: { mailbox: 0, staging: 0, outbox: 0 },
  askCount: 0,
  openAsks: [],
  refusals: [],
  traffic: [],
  totals: { routed: 0, refused: 0, messagesPerSecond: 0 }
})
