/**
 * The broker's live view (extension `observe-v1`): the wire shapes of the
 * read-only `observe` request and of what the broker answers — one
 * `BrokerSnapshot`, then, for a watch, `observe_events` frames carrying what
 * changed (`ObserveEvent`).
 *
 * A client asks for it by name in `register.features`; with `observer: true`
 * in the same `register` its connection is an observer: not a session (no
 * name in `list`, no `session_joined`, no mail), only a reader of this view,
 * which spans every scope and group of the broker. Only an observer
 * connection may send `observe`: a session, whose group is an authorization
 * boundary (C-GRP), cannot look past it this way. Base clients never see any
 * of it.
 *
 * Every list in a snapshot is bounded (`MAX_OBSERVED_*`), so a snapshot fits
 * one 1 MiB frame however busy the broker is; the counts say how many there
 * were in all.
 */
import { Schema } from "effect"
import * as Limits from "./limits.ts"

/** Session rows in one snapshot at most (the most recently active first). */
export const MAX_OBSERVED_SESSIONS = 300
/** Open asks in one snapshot at most (the oldest first). */
export const MAX_OBSERVED_ASKS = 100
/** Routed messages the broker remembers for the view (a ring: the latest). */
export const TRAFFIC_RING_SIZE = 200
/** Refused sends the broker remembers for the view (a ring: the latest). */
export const REFUSAL_RING_SIZE = 50
/** Shortest and longest interval between two `observe_events` frames of a watch, in ms. */
export const MIN_OBSERVE_INTERVAL_MS = 100
/** See `MIN_OBSERVE_INTERVAL_MS`. */
export const MAX_OBSERVE_INTERVAL_MS = 60_000
/** The interval of a watch that names none, in ms. */
export const DEFAULT_OBSERVE_INTERVAL_MS = 1_000

/**
 * `observe` (`observe-v1`), client → broker: answered with one
 * `observe_snapshot`; with `watch: true`, followed every `intervalMs` by
 * `observe_events` until the connection closes (one watch per connection: a
 * new `observe` with `watch` replaces the previous one).
 */
export const ObserveFrame = Schema.Struct({
  type: Schema.tag("observe"),
  requestId: Schema.String.check(Schema.isMaxLength(Limits.MAX_ID_LENGTH)),
  watch: Schema.optionalKey(Schema.Boolean),
  intervalMs: Schema.optionalKey(
    Schema.Int.check(Schema.isBetween({ minimum: MIN_OBSERVE_INTERVAL_MS, maximum: MAX_OBSERVE_INTERVAL_MS }))
  )
})
/** An `observe` frame, as decoded. */
export type ObserveFrame = typeof ObserveFrame.Type

/** How a routed message left the broker: handed to a live recipient, kept in the mailbox, or staged (`delivery-v1` replace). */
export const TrafficOutcome = Schema.Literals(["delivered", "queued", "staged"])
/** A traffic outcome. */
export type TrafficOutcome = typeof TrafficOutcome.Type

/** What a message is: a plain message, an ask (`expectsReply`), or a reply (`replyTo`). */
export const TrafficKind = Schema.Literals(["message", "ask", "reply"])
/** A traffic kind. */
export type TrafficKind = typeof TrafficKind.Type

/** One session as the view names it: its id, and its name when it has one. */
export const ObservedParty = Schema.Struct({ id: Schema.String, name: Schema.optionalKey(Schema.String) })
/** An observed party. */
export type ObservedParty = typeof ObservedParty.Type

/** One routed message (broker clock `at`, ms). `seq` numbers them from the broker's start. */
export const TrafficEntry = Schema.Struct({
  seq: Schema.Int,
  at: Schema.Finite,
  from: ObservedParty,
  to: ObservedParty,
  kind: TrafficKind,
  messageId: Schema.String,
  replyTo: Schema.optionalKey(Schema.String),
  outcome: TrafficOutcome
})
/** A traffic entry. */
export type TrafficEntry = typeof TrafficEntry.Type

/** One refused send: who sent it, what it was addressed to (`to` as sent), and the delivery code. */
export const RefusalEntry = Schema.Struct({
  seq: Schema.Int,
  at: Schema.Finite,
  from: ObservedParty,
  to: Schema.String,
  messageId: Schema.String,
  code: Schema.String,
  reason: Schema.String
})
/** A refusal entry. */
export type RefusalEntry = typeof RefusalEntry.Type

/** One live session, with what the broker knows of its health and traffic. */
export const SessionRow = Schema.Struct({
  id: Schema.String,
  name: Schema.optionalKey(Schema.String),
  /** The `scopeId` it registered with (absent: the unscoped space). */
  scope: Schema.optionalKey(Schema.String),
  group: Schema.String,
  /** Its published `status` (P32), e.g. `idle` or `thinking`. */
  status: Schema.optionalKey(Schema.String),
  /** Broker clock of the last frames read from it (`health-v1`'s `lastSeen`). */
  lastSeen: Schema.Finite,
  /** Its last intercom send or receive (epoch ms, 0: none), or the activity it published, whichever is later. */
  lastActivity: Schema.Finite,
  /** Whether it said it takes asks now (`health-v1`); absent until it says. */
  acceptsAsks: Schema.optionalKey(Schema.Boolean),
  /** Asks sent to it that it has not answered (open ask edges it is the target of). */
  pendingAsks: Schema.Int,
  /** Asks it sent that wait for an answer. */
  waitingAsks: Schema.Int,
  /** Messages it sent that the broker routed, and messages routed to it, since it registered. */
  messagesOut: Schema.Int,
  messagesIn: Schema.Int,
  /** Characters of output queued for its connection, not yet written. */
  outboxChars: Schema.Int,
  /** Messages in and out per second over the snapshot's rate window. */
  ratePerSec: Schema.Finite,
  /** Broker clock when it registered. */
  registeredAt: Schema.Finite
})
/** A session row. */
export type SessionRow = typeof SessionRow.Type

/** One open ask: who asked whom, when (broker clock), and until when the broker keeps it open. */
export const OpenAsk = Schema.Struct({
  messageId: Schema.String,
  from: ObservedParty,
  to: ObservedParty,
  /** Absent for an ask restored from the durable store after a restart. */
  askedAt: Schema.optionalKey(Schema.Finite),
  deadline: Schema.Finite
})
/** An open ask. */
export type OpenAsk = typeof OpenAsk.Type

/** How much the broker holds right now. */
export const QueueDepths = Schema.Struct({
  /** Messages waiting in the mailbox for sessions that are away. */
  mailbox: Schema.Int,
  /** `replace` messages staged for coalescing (`delivery-v1`). */
  staged: Schema.Int,
  /** Characters of output queued in every connection's outbox together. */
  outboxChars: Schema.Int,
  /** Connections accepted and not registered. */
  unregistered: Schema.Int
})
/** Queue depths. */
export type QueueDepths = typeof QueueDepths.Type

/** Counts since the broker started. */
export const TrafficTotals = Schema.Struct({
  delivered: Schema.Int,
  queued: Schema.Int,
  staged: Schema.Int,
  refused: Schema.Int,
  asks: Schema.Int,
  replies: Schema.Int
})
/** Traffic totals. */
export type TrafficTotals = typeof TrafficTotals.Type

/** Routed messages per second, over `windowMs` ending at the snapshot. */
export const TrafficRate = Schema.Struct({ windowMs: Schema.Finite, routedPerSec: Schema.Finite })
/** A traffic rate. */
export type TrafficRate = typeof TrafficRate.Type

/**
 * What the broker looks like now, apart from the recent traffic: its
 * sessions, queues, open asks, totals and rates. A watch sends it again as a
 * `state` event on every tick.
 */
export const ObservedState = Schema.Struct({
  /** Broker clock (ms) when the state was taken. */
  at: Schema.Finite,
  /** Broker clock when the broker started. */
  startedAt: Schema.Finite,
  /** Live sessions in all; `sessions` holds at most MAX_OBSERVED_SESSIONS, the most recently active first. */
  sessionCount: Schema.Int,
  sessions: Schema.Array(SessionRow),
  queues: QueueDepths,
  /** Open asks in all; `asks` holds at most MAX_OBSERVED_ASKS, the oldest first. */
  askCount: Schema.Int,
  asks: Schema.Array(OpenAsk),
  totals: TrafficTotals,
  rate: TrafficRate
})
/** An observed state. */
export type ObservedState = typeof ObservedState.Type

/** The whole view: the state, the latest routed messages and the latest refusals (oldest first). */
export const BrokerSnapshot = Schema.Struct({
  ...ObservedState.fields,
  traffic: Schema.Array(TrafficEntry),
  refusals: Schema.Array(RefusalEntry)
})
/** A broker snapshot. */
export type BrokerSnapshot = typeof BrokerSnapshot.Type

/**
 * What changed since the previous frame of a watch: routed messages and
 * refusals (with `missed`: how many fell out of the broker's ring before this
 * watch was sent them), then the current state.
 */
export const ObserveEvent = Schema.Union([
  Schema.Struct({ type: Schema.tag("traffic"), entries: Schema.Array(TrafficEntry), missed: Schema.Int }),
  Schema.Struct({ type: Schema.tag("refusals"), entries: Schema.Array(RefusalEntry), missed: Schema.Int }),
  Schema.Struct({ type: Schema.tag("state"), state: ObservedState })
])
/** An observe event. */
export type ObserveEvent = typeof ObserveEvent.Type

/** `observe_snapshot`, broker → client: the answer to `observe`. */
export const ObserveSnapshotFrame = Schema.Struct({
  type: Schema.tag("observe_snapshot"),
  requestId: Schema.String,
  snapshot: BrokerSnapshot
})
/** An `observe_snapshot` frame. */
export type ObserveSnapshotFrame = typeof ObserveSnapshotFrame.Type

/** `observe_events`, broker → client: one tick of a watch. */
export const ObserveEventsFrame = Schema.Struct({
  type: Schema.tag("observe_events"),
  requestId: Schema.String,
  events: Schema.Array(ObserveEvent)
})
/** An `observe_events` frame. */
export type ObserveEventsFrame = typeof ObserveEventsFrame.Type

/** Every broker → client frame of `observe-v1`; a plain union, as frames.ts's `ClientFrame` says why. */
export const ObserveBrokerFrame = Schema.Union([ObserveSnapshotFrame, ObserveEventsFrame])
/** A broker → client frame of `observe-v1`. */
export type ObserveBrokerFrame = typeof ObserveBrokerFrame.Type
