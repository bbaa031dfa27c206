/**
 * The broker's live view (extension `observe-v1`, src/protocol/observe.ts):
 * answers `observe` with a snapshot — sessions, queue depths, open asks,
 * totals and rates, the latest routed messages and refusals — and keeps the
 * watches: per observer connection, when its next `observe_events` frame is
 * due and how far into the traffic and refusal rings it has been sent.
 *
 * Nothing here runs per routed frame: the traffic record it reads is
 * Traffic.ts's (written by the send pipeline at next to no cost), and the
 * snapshot is built only when an observer asks, or when a watch is due — on
 * the broker's observe fiber (Broker.ts), which sleeps on `nextDue()` and
 * calls `tick`, the same way the staging fiber handles `replace` windows.
 *
 * A watch whose connection has not taken its previous frames (more than
 * OBSERVER_BACKLOG_CHARS still queued) skips the tick: a slow terminal gets
 * fewer updates, never an ever-growing outbox; the rings' `missed` counts
 * say what it did not see.
 *
 * Single owner: the Router's synchronous code (frames) and the observe fiber
 * (`tick`), which never interleave.
 */
import { MAX_FRAME_BYTES } from "../protocol/constants.ts"
import { OBSERVE_V1 } from "../protocol/features.ts"
import { frameBytes } from "../protocol/framing.ts"
import { decodeClientFrame, isFrameDecodeError } from "../protocol/decode.ts"
import {
  type BrokerSnapshot,
  DEFAULT_OBSERVE_INTERVAL_MS,
  MAX_OBSERVED_ASKS,
  MAX_OBSERVED_SESSIONS,
  type ObservedState,
  type ObserveEvent,
  type OpenAsk,
  REFUSAL_RING_SIZE,
  type SessionRow,
  TRAFFIC_RING_SIZE
} from "../protocol/observe.ts"
import { askedAtOf, type AskEdges, dueOf } from "./AskEdges.ts"
import type { Peer } from "./Peer.ts"
import type { Session } from "./Registry.ts"
import type { FrameHandlers, RouterContext } from "./RouterContext.ts"
import type { Traffic } from "./Traffic.ts"

/** Characters an observer may leave unread in its outbox before its watch skips ticks. */
export const OBSERVER_BACKLOG_CHARS = 1_048_576

/** What the view reads from the other concerns. */
export interface ObserveSources {
  readonly traffic: Traffic
  readonly edges: AskEdges
  /** Messages waiting in the mailbox. */
  readonly mailbox: () => number
  /** `replace` messages staged (`delivery-v1`). */
  readonly staged: () => number
  /** Connections not registered. */
  readonly unregistered: () => number
}

/** One observer's watch. */
interface Watch {
  readonly requestId: string
  readonly intervalMs: number
  /** When its next frame is due (broker clock). */
  due: number
  /** The next routed message and refusal (`seq`) it has not been sent. */
  trafficSeq: number
  refusalSeq: number
  /** Counters at its previous frame, for the rates of the next. */
  sampleAt: number
  sampleRouted: number
  sampleSessions: Map<string, SessionSample>
}

/**
 * A session's messages in and out at a watch's previous frame, and when its
 * traffic started counting (`SessionTraffic.since`): a session that
 * registers again under the same key starts a new count at 0, which the
 * next rate must not subtract the old count from.
 */
interface SessionSample {
  readonly count: number
  readonly since: number
}

/** The live view; see the module header. */
export class Observe {
  private readonly ctx: RouterContext
  private readonly sources: ObserveSources
  private readonly wake: () => void
  private readonly watches = new Map<Peer, Watch>()
  /** Broker clock when the broker started: the rate window of a snapshot with no earlier sample. */
  readonly startedAt: number

  /**
   * @param wake wakes the observe fiber: a watch was added, so the next due time may be earlier.
   */
  constructor(ctx: RouterContext, sources: ObserveSources, wake: () => void) {
    this.ctx = ctx
    this.sources = sources
    this.wake = wake
    this.startedAt = ctx.now()
  }

  readonly frames: FrameHandlers = {
    observe: { observer: true, handle: (peer, frame) => this.onObserve(peer, frame) }
  }

  /** When the earliest watch is due (broker clock), or undefined with none. */
  nextDue(): number | undefined {
    let due: number | undefined
    for (const watch of this.watches.values()) if (due === undefined || watch.due < due) due = watch.due
    return due
  }

  /** The connection is gone: its watch ends. */
  detached(peer: Peer): void {
    this.watches.delete(peer)
  }

  private onObserve(peer: Peer, raw: unknown): void {
    // Only an observer connection sees the whole broker; a session's group is a boundary (C-GRP).
    if (peer.state !== "observing" || !peer.features.has(OBSERVE_V1)) {
      return this.ctx.protocolError(peer, `"observe" frame from a connection not registered as an observer (observe-v1)`)
    }
    const frame = decodeClientFrame.observe(raw)
    if (isFrameDecodeError(frame)) return this.ctx.protocolError(peer, frame.message)
    const now = this.ctx.now()
    const traffic = this.sources.traffic
    const snapshot = this.snapshot(now)
    this.ctx.output.enqueue(
      peer,
      fitted((keep) => JSON.stringify({ type: "observe_snapshot", requestId: frame.requestId, snapshot: cut(snapshot, keep) }))
    )
    if (frame.watch !== true) return
    const intervalMs = frame.intervalMs ?? DEFAULT_OBSERVE_INTERVAL_MS
    this.watches.set(peer, {
      requestId: frame.requestId,
      intervalMs,
      due: now + intervalMs,
      trafficSeq: traffic.nextRoutedSeq,
      refusalSeq: traffic.nextRefusedSeq,
      sampleAt: now,
      sampleRouted: routedTotal(traffic),
      sampleSessions: sessionSample(this.liveSessions())
    })
    this.wake()
  }

  /**
   * Sends every watch that is due its `observe_events` frame — the routed
   * messages and refusals since its previous one, and the current state —
   * unless its connection is closing or has not read what it was sent.
   */
  tick(now: number): void {
    const traffic = this.sources.traffic
    for (const [peer, watch] of this.watches) {
      if (watch.due > now) continue
      watch.due = now + watch.intervalMs
      if (peer.isClosing || peer.state !== "observing") {
        this.watches.delete(peer)
        continue
      }
      if (peer.outboxChars > OBSERVER_BACKLOG_CHARS) continue
      const events: Array<ObserveEvent> = []
      const routed = traffic.trafficSince(watch.trafficSeq)
      const refused = traffic.refusalsSince(watch.refusalSeq)
      const routedMissed = Math.max(0, traffic.nextRoutedSeq - TRAFFIC_RING_SIZE - watch.trafficSeq)
      const refusedMissed = Math.max(0, traffic.nextRefusedSeq - REFUSAL_RING_SIZE - watch.refusalSeq)
      if (routed.length > 0 || routedMissed > 0) events.push({ type: "traffic", entries: routed, missed: routedMissed })
      if (refused.length > 0 || refusedMissed > 0) {
        events.push({ type: "refusals", entries: refused, missed: refusedMissed })
      }
      watch.trafficSeq = traffic.nextRoutedSeq
      watch.refusalSeq = traffic.nextRefusedSeq
      const sessions = this.liveSessions()
      events.push({ type: "state", state: this.state(now, sessions, watch) })
      watch.sampleAt = now
      watch.sampleRouted = routedTotal(traffic)
      watch.sampleSessions = sessionSample(sessions)
      this.ctx.output.enqueue(
        peer,
        fitted((keep) =>
          JSON.stringify({ type: "observe_events", requestId: watch.requestId, events: events.map((event) => cutEvent(event, keep)) })
        )
      )
    }
  }

  /** The whole view now: the state, with the rings (rates over the broker's lifetime). */
  snapshot(now: number): BrokerSnapshot {
    const traffic = this.sources.traffic
    return {
      ...this.state(now, this.liveSessions(), undefined),
      traffic: traffic.trafficSince(0),
      refusals: traffic.refusalsSince(0)
    }
  }

  private liveSessions(): Array<Session> {
    return [...this.ctx.registry.byKey.values()]
  }

  /**
   * The state now. Rates are over the time since `sample`'s previous frame,
   * or — for a one-off snapshot — since the broker started (totals) and since
   * each session registered (its own).
   */
  private state(now: number, live: ReadonlyArray<Session>, sample: Watch | undefined): ObservedState {
    const { traffic, edges } = this.sources
    const pending = new Map<string, number>()
    const waiting = new Map<string, number>()
    const asks: Array<OpenAsk> = []
    const byKey = this.ctx.registry.byKey
    let askCount = 0
    for (const edge of edges.values()) {
      // An edge past its deadline is closed at the next send's prune; it is no longer open.
      if (dueOf(edge) <= now) continue
      askCount++
      pending.set(edge.targetKey, (pending.get(edge.targetKey) ?? 0) + 1)
      waiting.set(edge.askerKey, (waiting.get(edge.askerKey) ?? 0) + 1)
      // Edges are kept in the order they were opened: the first ones are the oldest.
      if (asks.length < MAX_OBSERVED_ASKS) {
        const askedAt = askedAtOf(edge)
        asks.push({
          messageId: edge.messageId,
          from: partyOf(edge.askerKey, byKey.get(edge.askerKey)),
          to: partyOf(edge.targetKey, byKey.get(edge.targetKey)),
          // On the broker's clock, as `at` (the edge's own times are stamps): when it is due, and asked that long before.
          ...(askedAt === undefined ? {} : { askedAt }),
          deadline: dueOf(edge)
        })
      }
    }
    const rows = live.map((session) => {
      return rowOf(session, pending, waiting, sessionRate(session, sample, now))
    })
    rows.sort((a, b) => b.lastActivity - a.lastActivity || a.registeredAt - b.registeredAt)
    const windowMs = now - (sample?.sampleAt ?? this.startedAt)
    return {
      at: now,
      startedAt: this.startedAt,
      sessionCount: live.length,
      sessions: rows.length > MAX_OBSERVED_SESSIONS ? rows.slice(0, MAX_OBSERVED_SESSIONS) : rows,
      queues: {
        mailbox: this.sources.mailbox(),
        staged: this.sources.staged(),
        outboxChars: this.ctx.output.queuedChars,
        unregistered: this.sources.unregistered()
      },
      askCount,
      asks,
      totals: { ...traffic.totals },
      rate: { windowMs, routedPerSec: rate(routedTotal(traffic) - (sample?.sampleRouted ?? 0), windowMs) }
    }
  }
}

/**
 * The frame `encode(1)` builds, or — when its lists make it larger than a
 * frame may be (ids, names and groups up to 256 characters each, in the
 * hundreds of rows) — `encode(keep)` with each list cut to that fraction,
 * halved until it fits. Counts (`sessionCount`, `askCount`) stay whole.
 */
const fitted = (encode: (keep: number) => string): string => {
  let keep = 1
  let text = encode(keep)
  while (text.length * 3 > MAX_FRAME_BYTES - FRAME_ROOM && frameBytes(text) > MAX_FRAME_BYTES - FRAME_ROOM && keep > 1 / 1024) {
    keep /= 2
    text = encode(keep)
  }
  return text
}

/** Bytes left free below the frame limit for the frame's own fields. */
const FRAME_ROOM = 4096

/** The first `keep` of `items` (the most relevant: most active sessions, oldest asks). */
const head = <A>(items: ReadonlyArray<A>, keep: number): ReadonlyArray<A> =>
  keep >= 1 ? items : items.slice(0, Math.floor(items.length * keep))

/** The last `keep` of `items` (the latest traffic and refusals). */
const tail = <A>(items: ReadonlyArray<A>, keep: number): ReadonlyArray<A> =>
  keep >= 1 ? items : items.slice(items.length - Math.floor(items.length * keep))

const cutState = (state: ObservedState, keep: number): ObservedState =>
  keep >= 1 ? state : { ...state, sessions: head(state.sessions, keep), asks: head(state.asks, keep) }

const cut = (snapshot: BrokerSnapshot, keep: number): BrokerSnapshot =>
  keep >= 1 ? snapshot : {
    ...snapshot,
    ...cutState(snapshot, keep),
    traffic: tail(snapshot.traffic, keep),
    refusals: tail(snapshot.refusals, keep)
  }

const cutEvent = (event: ObserveEvent, keep: number): ObserveEvent => {
  if (keep >= 1) return event
  switch (event.type) {
    case "traffic": {
      const entries = tail(event.entries, keep)
      return { ...event, entries, missed: event.missed + event.entries.length - entries.length }
    }
    case "refusals": {
      const entries = tail(event.entries, keep)
      return { ...event, entries, missed: event.missed + event.entries.length - entries.length }
    }
    case "state":
      return { ...event, state: cutState(event.state, keep) }
  }
}

/** Messages routed so far, whatever the outcome. */
const routedTotal = (traffic: Traffic): number =>
  traffic.totals.delivered + traffic.totals.queued + traffic.totals.staged

/** A session's messages in and out. */
const countOf = (session: Session): number => session.traffic.sent + session.traffic.received

const sessionSample = (sessions: ReadonlyArray<Session>): Map<string, SessionSample> =>
  new Map(sessions.map((session) => [session.key, { count: countOf(session), since: session.traffic.since }]))

/**
 * A session's messages per second: since `sample`'s frame, from the count it
 * had then — or, when its traffic started after that frame (a new or
 * re-registered session) or is not the one sampled, from 0 since it started;
 * without a sample, since it registered.
 */
const sessionRate = (session: Session, sample: Watch | undefined, now: number): number => {
  const started = session.traffic.since
  if (sample === undefined) return rate(countOf(session), now - started)
  const before = sample.sampleSessions.get(session.key)
  if (before === undefined || before.since !== started || started > sample.sampleAt) {
    return rate(countOf(session), now - Math.max(started, sample.sampleAt))
  }
  return rate(countOf(session) - before.count, now - sample.sampleAt)
}

/** Per second over `ms` (0 for an empty window). */
const rate = (count: number, ms: number): number => ms <= 0 ? 0 : Math.round((count * 1000 / ms) * 100) / 100

/** A session as the view names it; the id of a registry key (`<space>\u0000<id>`) when it is not live. */
const partyOf = (key: string, session: Session | undefined): { readonly id: string; readonly name?: string } => {
  if (session === undefined) return { id: key.slice(key.lastIndexOf("\u0000") + 1) }
  const name = session.fields.name
  return name === undefined ? { id: session.id } : { id: session.id, name }
}

const rowOf = (
  session: Session,
  pending: ReadonlyMap<string, number>,
  waiting: ReadonlyMap<string, number>,
  ratePerSec: number
): SessionRow => {
  const { fields, health, traffic } = session
  const scope = session.scopeKey === "" ? undefined : session.scopeKey.slice("scope:".length)
  return {
    id: session.id,
    ...(fields.name === undefined ? {} : { name: fields.name }),
    ...(scope === undefined ? {} : { scope }),
    group: session.group,
    ...(fields.status === undefined ? {} : { status: fields.status }),
    lastSeen: health.lastSeen,
    lastActivity: Math.max(fields.lastActivity, health.lastIntercomActivity),
    ...(health.acceptsAsks === undefined ? {} : { acceptsAsks: health.acceptsAsks }),
    pendingAsks: pending.get(session.key) ?? 0,
    waitingAsks: waiting.get(session.key) ?? 0,
    messagesOut: traffic.sent,
    messagesIn: traffic.received,
    outboxChars: session.peer.outboxChars,
    ratePerSec,
    registeredAt: traffic.since
  }
}
