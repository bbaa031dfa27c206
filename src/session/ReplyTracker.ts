/**
 * Size: one concept — about 650 lines, half of them the JSDoc of its
 * interface and of the expiry arithmetic (`askTiming`), which the tracker and
 * `pending`'s rendering share so that both count on one clock.
 *
 * The receiving side of ask/reply (C-RPL): inbound asks still owed an answer
 * (by asker and id: two askers may use one id), the recent asks that closed
 * unanswered (expired, withdrawn by their asker, or refused by the broker),
 * the recent ones that left `pending` past this session's own timeout
 * without closing (their asker's wait unknown), and the inbound message that
 * triggered the current turn.
 *
 * A plain synchronous state machine with the time passed in, so it is
 * property-testable. One owner: the `IntercomSession` that created it calls it
 * only from synchronous code (between two yields of its fibers).
 */
import type { Tracer } from "effect"
import type { Message, SessionInfo } from "../protocol/frames.ts"
import type { DeliveryMode } from "../protocol/deliveryModes.ts"
import { AskNoLongerOpen, NoReplyContext, TargetUnresolved } from "./errors.ts"
import { resolutionFailure, resolveTarget } from "./targets.ts"

/**
 * An inbound message as the session remembers it: sender, message, and when it arrived.
 *
 * @category models
 * @since 0.1.0
 */
export interface InboundContext {
  readonly from: SessionInfo
  readonly message: Message
  /** When this session received it (its Clock, epoch ms); an ask's wait counts from it, less its mailbox wait as the broker stamped it (`askExpiresAt`). */
  readonly receivedAt: number
  /**
   * For an ask: how long its asker waits (the broker's `askTimeoutMs`,
   * `ask-timeout-v1`), less the mailbox wait the broker stamped
   * (`askExpiresAt`); without it, the session's own ask timeout applies.
   */
  readonly askTimeoutMs?: number | undefined
  /** `supervisor`: a delegated child's message, as the broker marked it (`contact_supervisor`, C-SUP-13). */
  readonly channel?: "supervisor" | undefined
  /** How its sender wants it to reach this session (`delivery-v1`); absent means `steer`. */
  readonly delivery?: DeliveryMode | undefined
  /**
   * Its receive span when it came traced (`trace-v1`, InboundTracing.ts):
   * the parent of its hand-off spans and of a reply to it. Never journaled.
   */
  readonly trace?: Tracer.AnySpan | undefined
  /**
   * The client's read number of it (`InboundMessage.read`): a control read before it (a lower `read`) is an
   * earlier message's under the same id (review revbb BB2). Never journaled: a restored message has none.
   */
  readonly read?: number | undefined
}

/**
 * Whether `context` is known to be a newer message than the one a control of its (sender, id) is about — a
 * sender may send a new message under an id it used before (P46), and a control never comes before its message:
 * the client read it after the control (its `read` above the control's `readBy`, `ControlEvent` `read`), or the
 * broker received it after it stamped the control (its `message.brokerReceivedAt` above the control's
 * `controlAt`, `MessageControl.timestamp`; the broker stamps both on its one clock). With both read numbers known
 * they decide alone: they are exact, while the broker's wall clock may step back and stamp a control before its own
 * message (review revbm BM1). The stamps decide only for a message with no read number (restored from the journal),
 * which relies on that clock not stepping back. With neither (a base broker's message may have no
 * `brokerReceivedAt`) it is not known to be newer, and the control applies to it, as it always did (reviews revbb
 * BB2, revbi BI2).
 *
 * @category models
 * @since 0.1.0
 */
export const newerThanControl = (
  context: { readonly read?: number | undefined; readonly message: Message },
  readBy: number | undefined,
  controlAt: number | undefined
): boolean => {
  const { read } = context
  if (read !== undefined && readBy !== undefined) return read > readBy
  const receivedAt = context.message.brokerReceivedAt
  return receivedAt !== undefined && controlAt !== undefined && controlAt < receivedAt
}

/**
 * A pending ask as `pending` lists it: its context, when it was asked and
 * when it stops being pending, both on this session's clock (`askTiming`).
 *
 * @category models
 * @since 0.1.0
 */
export interface PendingAsk extends InboundContext {
  /** When its asker asked it, on this session's clock: the receive less the stamped mailbox wait (`askTiming`). */
  readonly askedAt: number
  /** The first millisecond at which it is no longer pending (`askExpiresAt`). */
  readonly expiresAt: number
}

/**
 * The inbound message a turn starts with, as a host names it: by its sender
 * and its id, since two senders may use one message id.
 *
 * @category models
 * @since 0.1.0
 */
export interface TurnMessage {
  /** Its sender's session id (`Inbound.from.id`). */
  readonly from: string
  /** Its message id (`Inbound.message.id`). */
  readonly messageId: string
}

/**
 * What `reply` was told to answer: a sender (`to`), an exact ask (`replyTo`), both or neither.
 *
 * @category models
 * @since 0.1.0
 */
export interface ReplyTarget {
  readonly to?: string | undefined
  readonly replyTo?: string | undefined
}

/**
 * The receiving side of ask/reply of one generation (see the module header).
 *
 * @category models
 * @since 0.1.0
 */
export interface ReplyTracker {
  /** Records an inbound message; only `expectsReply === true` becomes a pending ask (C-RPL-1). */
  readonly record: (context: InboundContext) => void
  /** Queues a delivered message as the context of a turn it will trigger; the newest 1,000 (at times up to 1,249) are kept. */
  readonly queueTurn: (context: InboundContext) => void
  /**
   * A turn starts: its context is the given message (by sender and id, when
   * known), else the oldest queued triggering message, else none.
   */
  readonly beginTurn: (message: TurnMessage | undefined, now: number) => InboundContext | undefined
  /**
   * The message `messageId` of `from` (a session id), queued as a turn's
   * context, will not start one: its sender withdrew it before the host took
   * it (it is handed over passive). It leaves the queue.
   */
  readonly unqueueTurn: (from: string, messageId: string) => void
  /** The turn settled: no triggered-turn context any more. */
  readonly endTurn: () => void
  readonly currentTurn: () => InboundContext | undefined
  /**
   * C-RPL-2…4 and open question 7; throws nothing, returns the error. An ask
   * it would answer (named by `replyTo`, the current turn's, or the one `to`
   * names) that closed unanswered — expired here (only when its asker's wait
   * is known, `askTimeoutMs`), withdrawn by its asker (`askWithdrawn`), or
   * refused by the broker (`askClosed`) — is `AskNoLongerOpen`: nothing is to
   * be sent. Asks are told apart by asker and id: a `replyTo` that several
   * askers used names the current turn's asker's when that is one of them,
   * else `to` must say whose. A `replyTo` also finds a recent ask that left
   * `pending` past this session's own timeout without its asker's wait being
   * known (the broker decides); `to` alone does not. Of the asks `to` names,
   * closed ones count only when none is open: with none open, the newest
   * closed one of `to`'s (the turn's or not) is refused with what happened
   * to it, and so is one named by `replyTo` and `to` though another asker's
   * open ask uses its id.
   */
  readonly resolve: (
    target: ReplyTarget,
    now: number
  ) => InboundContext | NoReplyContext | TargetUnresolved | AskNoLongerOpen
  /**
   * P66 auto-threading: the one live pending ask a plain `send` to `to`
   * answers — `to` names its asker by exact id or by name ignoring case
   * (never by id prefix) and resolved to that asker (`targetId`), and that
   * asker has exactly one pending ask here. Undefined otherwise: the send
   * stays plain (no guessing between two asks).
   */
  readonly autoThread: (to: string, targetId: string, now: number) => InboundContext | undefined
  /**
   * The ask `messageId` of `from` (its asker's session id) was answered: no longer pending,
   * no longer a turn context, no longer closed (C-RPL-5). `stagedAs`: the
   * answer's id when the broker staged it (a `replace` reply, `delivery-v1`), so that it can be
   * pending again if a later message of the thread replaces the answer before delivery (`replyDropped`).
   */
  readonly markReplied: (from: string, messageId: string, stagedAs?: string) => void
  /**
   * The broker refused a reply to the ask `context`: it holds no open ask of
   * that id (expired there, or withdrawn). Not answered: no longer pending,
   * and remembered as closed so that a later reply naming it, or the current
   * turn's, is `AskNoLongerOpen` without being sent (the turn keeps it).
   */
  readonly askClosed: (context: InboundContext) => void
  /**
   * Its asker `from` (a session id) withdrew or replaced the ask `messageId`
   * (P73 `cancel` / `supersede`). As `askClosed`, but the refusal says it was
   * withdrawn: no longer pending, the turn keeps it, and a reply to it is
   * `AskNoLongerOpen` — never taken as the answer to another ask. An ask
   * answered by a staged answer not yet delivered is closed so too (the
   * answer being replaced later no longer reopens it). A message of `from`
   * that is no ask, or neither pending here nor so answered, is left as it is.
   * `readBy`, `controlAt`: the control's read number and broker stamp, when
   * known — an ask under the id known to be newer than the control
   * (`newerThanControl`) is not its: it stays open, and while it is open
   * under the id nothing is closed there (the closed record is by (sender,
   * id) and would refuse a reply to it; reviews revbb BB2, revbi BI1).
   */
  readonly askWithdrawn: (from: string, messageId: string, readBy?: number, controlAt?: number) => void
  /**
   * Whether the latest message `from` sent under `messageId` that this session recorded (among the last 1,000
   * it recorded) is known to be newer than a control of that id read at `readBy` and stamped at `controlAt`
   * (`newerThanControl`): the control is then an earlier message's (reviews revbb BB2, revbi BI2).
   */
  readonly recordedSince: (from: string, messageId: string, readBy?: number, controlAt?: number) => boolean
  /**
   * The broker replaced the staged answer `replyId` before delivering it (a `superseded` receipt):
   * the ask it answered is pending again, unless answered since. True when it is.
   */
  readonly replyDropped: (replyId: string) => boolean
  /** A receipt other than `superseded` came for `replyId`: its staging is over, it is forgotten. */
  readonly replySettled: (replyId: string) => void
  /** Retires every obligation towards a peer that left (C-RPL-10). */
  readonly forgetSender: (sessionId: string) => void
  /** Unresolved asks, oldest first, expired ones dropped (C-RPL-6, C-RPL-7), each with when it was asked and when it expires. */
  readonly pending: (now: number) => ReadonlyArray<PendingAsk>
  /** When the next of the unresolved asks is no longer pending (epoch ms), if any is. */
  readonly nextExpiry: (now: number) => number | undefined
}

/**
 * The first millisecond (epoch ms) at which a received ask is no longer
 * pending, `timeoutMs` being its asker's wait (`askTimeoutMs`, else the
 * session's own). The broker closes the ask's edge at `brokerReceivedAt +
 * timeoutMs` on its own clock, which need not agree with this session's: so
 * the broker's clock only measures how long the ask waited in its mailbox
 * (`brokerDeliveredAt - brokerReceivedAt`, as `queuedFor` in oldMail.ts), and
 * the ask expires that wait before `receivedAt + timeoutMs` on this
 * session's clock — at once on receipt when it waited the whole timeout,
 * and at `receivedAt + timeoutMs` when it did not wait (or the broker's
 * clock stepped back between the two stamps). Time it spent in the broker's
 * output or in transit after `brokerDeliveredAt` is not stamped, so an ask
 * read behind slow writes stays pending up to that long past the broker's
 * deadline. With only one of the two stamps (which alone would compare the
 * broker's clock with this session's) or none, `timeoutMs` counts from this
 * session's receive (pending through the millisecond `receivedAt +
 * timeoutMs`, C-RPL-6).
 *
 * @category expiry
 * @since 0.1.0
 */
export const askExpiresAt = (context: InboundContext, timeoutMs: number): number => askTiming(context, timeoutMs).expiresAt

/**
 * When a received ask was asked and when it expires, both on this session's
 * clock: `askedAt` is its receive less the mailbox wait the broker stamped
 * (`brokerDeliveredAt - brokerReceivedAt`, none when negative), or its
 * receive with one stamp or none; `expiresAt` is `askExpiresAt`.
 *
 * @category expiry
 * @since 0.1.0
 */
export const askTiming = (
  context: InboundContext,
  timeoutMs: number
): { readonly askedAt: number; readonly expiresAt: number } => {
  const { brokerDeliveredAt, brokerReceivedAt } = context.message
  // One stamp alone is the broker's clock against this session's: it measures nothing, so count from the receive,
  // pending for the whole millisecond `receivedAt + timeoutMs` (C-RPL-6: older than the timeout is over).
  if (brokerReceivedAt === undefined || brokerDeliveredAt === undefined) {
    return { askedAt: context.receivedAt, expiresAt: context.receivedAt + timeoutMs + 1 }
  }
  // Both stamps are the broker's clock: their difference is the mailbox wait, whatever the clocks' offset.
  const waited = Math.max(0, brokerDeliveredAt - brokerReceivedAt)
  return { askedAt: context.receivedAt - waited, expiresAt: context.receivedAt + Math.max(0, timeoutMs - waited) }
}

/** An ask that closed unanswered, as `reply` is refused for it: no message body is kept. */
interface ClosedAsk {
  readonly from: SessionInfo
  readonly askId: string
  /** Expired here (at `at`), withdrawn by its asker (P73), or refused by the broker. */
  readonly why: "expired" | "withdrawn" | "refused"
  readonly at?: number | undefined
}

/** The key of an inbound message (a pending, closed or lapsed ask, a turn's): its sender's session id and its id (two senders may use one id). */
const closedKey = (from: string, askId: string): string => `${from}\u0000${askId}`

/** A sender matches `to` by exact id, id prefix, or name ignoring case (P66). */
const senderMatches = (from: SessionInfo, to: string): boolean => {
  const target = to.trim()
  const lower = target.toLowerCase()
  return target.length > 0 &&
    (from.id === target || from.id.startsWith(target) || from.name?.trim().toLowerCase() === lower)
}

/**
 * An empty tracker; received asks older than their asker's announced timeout,
 * else `askTimeoutMs`, less their stamped mailbox wait (`askExpiresAt`), are
 * no longer pending (C-RPL-6).
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeReplyTracker = (askTimeoutMs: number): ReplyTracker => {
  /** Pending asks by asker and id (`closedKey`): two askers may use one id. */
  const asks = new Map<string, InboundContext>()
  /**
   * Contexts of turns to come, oldest first, for `beginTurn` without an id. Bounded like `recent`
   * (cut back to the newest RECENT_LIMIT once it reaches 1.25 times that): a host that never begins turns (`intercom watch`, a workflow stage)
   * or names each turn's message leaves them here, and each holds its whole message.
   */
  const queued: Array<InboundContext> = []
  let current: InboundContext | undefined
  /**
   * Recent contexts by sender and message id (`closedKey`: two senders may use one id), so a host can name the
   * message that triggered its turn.
   */
  const recent = new Map<string, InboundContext>()
  const RECENT_LIMIT = 1000
  /**
   * Answers the broker staged, by answer id, with the ask each answers, oldest first, until a receipt
   * says how its staging ended; the newest RECENT_LIMIT (a receipt that never comes leaves one here).
   */
  const staged = new Map<string, InboundContext>()
  /**
   * Asks that closed unanswered, by asker and id (`closedKey`: two askers may use one id), oldest first (the
   * newest RECENT_LIMIT), each with only what a refusal says (never its message): expired here (`at`, when),
   * withdrawn by its asker (`askWithdrawn`), or refused by the broker (`askClosed`). A reply naming one is
   * refused here with what happened.
   */
  const closed = new Map<string, ClosedAsk>()
  /**
   * Asks that left `pending` past this session's own timeout without their asker's wait being known (no
   * `askTimeoutMs`): the asker may still wait, so a reply naming one by `replyTo` is sent and the broker decides.
   * By asker and id, oldest first, the newest LAPSED_LIMIT (each holds its whole message).
   */
  const lapsed = new Map<string, InboundContext>()
  const LAPSED_LIMIT = 100
  const keyOf = (context: InboundContext): string => closedKey(context.from.id, context.message.id)

  const timing = (context: InboundContext) => askTiming(context, context.askTimeoutMs ?? askTimeoutMs)
  const expiry = (context: InboundContext): number => timing(context).expiresAt

  const close = (from: SessionInfo, askId: string, why: ClosedAsk["why"], at: number | undefined): void => {
    const key = closedKey(from.id, askId)
    closed.delete(key)
    closed.set(key, { from, askId, why, at })
    if (closed.size > RECENT_LIMIT) {
      const oldest = closed.keys().next()
      if (oldest.done !== true) closed.delete(oldest.value)
    }
  }

  const prune = (now: number): void => {
    for (const [key, context] of asks) {
      const at = expiry(context)
      if (now < at) continue
      asks.delete(key)
      // Closed only when its asker's wait is known (`ask-timeout-v1`): past this session's own timeout the
      // asker may still wait, so the ask only leaves `pending` (kept in `lapsed`), and a reply naming it goes to
      // the broker, which decides.
      if (context.askTimeoutMs !== undefined) {
        close(context.from, context.message.id, "expired", at)
        continue
      }
      lapsed.delete(key)
      lapsed.set(key, context)
      if (lapsed.size > LAPSED_LIMIT) {
        const oldest = lapsed.keys().next()
        if (oldest.done !== true) lapsed.delete(oldest.value)
      }
    }
  }

  /** What `reply` says instead of sending, for a closed ask. */
  const refusal = (entry: ClosedAsk, now: number): AskNoLongerOpen =>
    new AskNoLongerOpen({
      to: entry.from.name?.trim() || entry.from.id,
      askId: entry.askId,
      expiredMs: entry.why === "expired" && entry.at !== undefined ? now - entry.at : undefined,
      withdrawn: entry.why === "withdrawn" ? true : undefined
    })

  /** The ask `context` is, if it closed unanswered: what `reply` says instead of sending. */
  const noLongerOpen = (context: InboundContext, now: number): AskNoLongerOpen | undefined => {
    const entry = context.message.expectsReply === true
      ? closed.get(closedKey(context.from.id, context.message.id))
      : undefined
    return entry === undefined ? undefined : refusal(entry, now)
  }

  /** The newest closed ask of id `askId`, from a sender `to` matches when given. */
  const closedNamed = (askId: string, to: string | undefined): ClosedAsk | undefined => {
    let found: ClosedAsk | undefined
    for (const entry of closed.values()) {
      if (entry.askId === askId && (to === undefined || senderMatches(entry.from, to))) found = entry
    }
    return found
  }

  const remember = (context: InboundContext): void => {
    const key = keyOf(context)
    recent.delete(key)
    recent.set(key, context)
    while (recent.size > RECENT_LIMIT) {
      const oldest = recent.keys().next()
      if (oldest.done === true) break
      recent.delete(oldest.value)
    }
  }

  const dropQueued = (predicate: (context: InboundContext) => boolean): void => {
    for (let index = queued.length - 1; index >= 0; index--) {
      const context = queued[index]
      if (context !== undefined && predicate(context)) queued.splice(index, 1)
    }
  }

  /** Several asks named `replyTo`, of different askers: `to` must say whose. */
  const ambiguous = (replyTo: string, asks: ReadonlyArray<InboundContext>): NoReplyContext => {
    const who = asks.map((context) => context.from.name?.trim() || context.from.id).join(", ")
    return new NoReplyContext({ reason: `Several asks are named "${replyTo}" (from ${who}) — specify \`to\`` })
  }

  /** The ask named `replyTo` (of a sender `to` matches, when given): pending or the turn's, else lapsed. */
  const named = (replyTo: string, to: string | undefined): InboundContext | NoReplyContext | undefined => {
    const matches = (context: InboundContext) =>
      context.message.id === replyTo && (to === undefined || senderMatches(context.from, to))
    const live = [...asks.values()].filter(matches)
    if (current !== undefined && matches(current) && !asks.has(keyOf(current))) live.push(current)
    if (live.length > 1) {
      // Several askers used this id: the turn's asker's is meant, else `to` must say whose.
      const turn = current === undefined ? undefined : keyOf(current)
      return live.find((context) => keyOf(context) === turn) ?? ambiguous(replyTo, live)
    }
    if (live[0] !== undefined) return live[0]
    const gone = [...lapsed.values()].filter(matches)
    if (gone.length > 1) return ambiguous(replyTo, gone)
    return gone[0]
  }

  /** Whether any ask this session holds (pending, lapsed, closed, the turn's), from whomever, is named `replyTo`. */
  const anyNamed = (replyTo: string): boolean =>
    [...asks.values(), ...lapsed.values()].some((context) => context.message.id === replyTo) ||
    current?.message.id === replyTo ||
    closedNamed(replyTo, undefined) !== undefined

  /**
   * No open ask is from `to`: the refusal of the newest closed ask of the one sender `to` resolves to among
   * the closed asks' askers (withdrawn, say, though not the turn's), if it resolves to one — and only when
   * that sender's newest ask this session still remembers (`recent`, by receive time) is that closed one: a
   * newer one that lapsed (its asker may still wait) or was answered is not refused as an older one closed.
   */
  const closedFrom = (to: string, now: number): AskNoLongerOpen | undefined => {
    const senders = [...new Map([...closed.values()].map((entry) => [entry.from.id, entry.from] as const)).values()]
    const resolution = resolveTarget(senders, to)
    if (resolution._tag !== "Found") return undefined
    const asker = resolution.session.id
    let newest: ClosedAsk | undefined
    for (const entry of closed.values()) if (entry.from.id === asker) newest = entry
    if (newest === undefined) return undefined
    let latest: InboundContext | undefined
    for (const context of recent.values()) {
      if (context.from.id !== asker || context.message.expectsReply !== true) continue
      if (latest === undefined || context.receivedAt >= latest.receivedAt) latest = context
    }
    // None remembered: the closed one is all that is known of that asker's asks.
    if (latest !== undefined && latest.message.id !== newest.askId) return undefined
    return refusal(newest, now)
  }

  const resolve: ReplyTracker["resolve"] = (target, now) => {
    prune(now)
    const { replyTo, to } = target
    if (replyTo !== undefined) {
      const context = named(replyTo, to)
      if (context instanceof NoReplyContext) return context
      if (context !== undefined) return noLongerOpen(context, now) ?? context
      // None open of that id from `to`: a closed one of `to`'s is refused with what happened to it, though
      // another asker's open ask uses the id.
      const entry = closedNamed(replyTo, to)
      if (entry !== undefined) return refusal(entry, now)
      if (to !== undefined && anyNamed(replyTo)) {
        return new NoReplyContext({ reason: `Reply context "${replyTo}" is not from "${to}"` })
      }
      return new NoReplyContext({ reason: `No reply context for "${replyTo}"` })
    }
    if (to === undefined) {
      // The turn's own ask closed: say so, rather than answer it anyway or answer another ask in its place.
      if (current !== undefined) return noLongerOpen(current, now) ?? current
      const pending = [...asks.values()]
      if (pending.length === 1 && pending[0] !== undefined) return pending[0]
      return new NoReplyContext({
        reason: pending.length === 0 ? "No active intercom context to reply to" : "Multiple pending asks — specify `to`"
      })
    }
    // Open question 7: `to` is resolved among the pending asks and the current turn's context.
    const candidates = [...asks.values()]
    if (current !== undefined && !asks.has(keyOf(current))) candidates.push(current)
    const senders = [...new Map(candidates.map((context) => [context.from.id, context.from] as const)).values()]
    const resolution = resolveTarget(senders, to)
    switch (resolution._tag) {
      case "NotFound":
        return closedFrom(to, now) ?? new NoReplyContext({ reason: `No pending ask from "${to}"` })
      case "Found": {
        const matches = candidates.filter((context) => context.from.id === resolution.session.id)
        // A closed one (the turn's, withdrawn) counts only when none is open: its refusal.
        const open = matches.filter((context) => noLongerOpen(context, now) === undefined)
        if (open.length === 1 && open[0] !== undefined) return open[0]
        if (open.length === 0 && matches[0] !== undefined) return noLongerOpen(matches[0], now) ?? matches[0]
        return new NoReplyContext({ reason: `Multiple pending asks from "${to}"` })
      }
      default:
        return new TargetUnresolved({ target: to, reason: resolutionFailure(to, resolution, senders) })
    }
  }

  const autoThread: ReplyTracker["autoThread"] = (to, targetId, now) => {
    prune(now)
    const wanted = to.trim()
    const lower = wanted.toLowerCase()
    if (wanted.length === 0) return undefined
    let found: InboundContext | undefined
    for (const context of asks.values()) {
      if (context.from.id !== targetId) continue
      const named = context.from.id === wanted || context.from.name?.trim().toLowerCase() === lower
      if (!named) continue
      if (found !== undefined) return undefined
      found = context
    }
    return found
  }

  return {
    autoThread,
    record: (context) => {
      remember(context)
      if (context.message.expectsReply === true) {
        const key = keyOf(context)
        closed.delete(key)
        lapsed.delete(key)
        asks.set(key, context)
      }
    },
    queueTurn: (context) => {
      queued.push(context)
      // Cut back to the newest RECENT_LIMIT a quarter of it at a time: one move of the array per 250 turns.
      if (queued.length >= RECENT_LIMIT + RECENT_LIMIT / 4) queued.splice(0, queued.length - RECENT_LIMIT)
    },
    beginTurn: (message, now) => {
      prune(now)
      if (message === undefined) {
        current = queued.shift()
      } else {
        const key = closedKey(message.from, message.messageId)
        current = recent.get(key)
        dropQueued((context) => keyOf(context) === key)
      }
      return current
    },
    unqueueTurn: (from, messageId) => {
      const key = closedKey(from, messageId)
      dropQueued((context) => keyOf(context) === key)
    },
    endTurn: () => {
      current = undefined
    },
    currentTurn: () => current,
    resolve,
    markReplied: (from, messageId, stagedAs) => {
      const key = closedKey(from, messageId)
      const ask = asks.get(key) ?? lapsed.get(key)
      const isIt = (context: InboundContext) => context.from.id === from && context.message.id === messageId
      // A newer answer: an earlier staged one being replaced no longer reopens the ask.
      for (const [replyId, answered] of staged) if (isIt(answered)) staged.delete(replyId)
      if (stagedAs !== undefined && ask !== undefined) {
        staged.set(stagedAs, ask)
        if (staged.size > RECENT_LIMIT) {
          const oldest = staged.keys().next()
          if (oldest.done !== true) staged.delete(oldest.value)
        }
      }
      asks.delete(key)
      lapsed.delete(key)
      closed.delete(key)
      dropQueued(isIt)
      if (current !== undefined && isIt(current)) current = undefined
    },
    askClosed: (context) => {
      const { id } = context.message
      asks.delete(keyOf(context))
      lapsed.delete(keyOf(context))
      // Already closed here (expired): the refusal keeps saying so.
      const known = closed.get(closedKey(context.from.id, id))
      close(context.from, id, known?.why ?? "refused", known?.at)
    },
    askWithdrawn: (from, messageId, readBy, controlAt) => {
      const key = closedKey(from, messageId)
      /** Of the message the control is about, as far as can be told: not one known to be newer. */
      const its = (context: InboundContext | undefined): InboundContext | undefined =>
        context === undefined || newerThanControl(context, readBy, controlAt) ? undefined : context
      const pendingAsk = asks.get(key)
      const lapsedAsk = lapsed.get(key)
      // A newer ask under the id is open: the control is an earlier message's, and closing the pair would refuse it.
      if (pendingAsk !== its(pendingAsk) || lapsedAsk !== its(lapsedAsk)) return
      const own = pendingAsk ?? lapsedAsk ??
        its(current?.from.id === from && current.message.id === messageId ? current : undefined)
      // A staged answer to it being replaced later no longer reopens it; an ask answered so (in neither
      // `asks` nor the turn) is closed as withdrawn too.
      let answered: InboundContext | undefined
      for (const [replyId, entry] of staged) {
        if (entry.from.id === from && entry.message.id === messageId && its(entry) !== undefined) {
          answered = entry
          staged.delete(replyId)
        }
      }
      const target = own ?? answered
      if (target === undefined || target.message.expectsReply !== true) return
      asks.delete(key)
      lapsed.delete(key)
      if (!closed.has(key)) close(target.from, messageId, "withdrawn", undefined)
    },
    recordedSince: (from, messageId, readBy, controlAt) => {
      const latest = recent.get(closedKey(from, messageId))
      return latest !== undefined && newerThanControl(latest, readBy, controlAt)
    },
    replyDropped: (replyId) => {
      const ask = staged.get(replyId)
      if (ask === undefined) return false
      staged.delete(replyId)
      asks.set(keyOf(ask), ask)
      return true
    },
    replySettled: (replyId) => void staged.delete(replyId),
    forgetSender: (sessionId) => {
      for (const [key, context] of asks) if (context.from.id === sessionId) asks.delete(key)
      for (const [key, context] of lapsed) if (context.from.id === sessionId) lapsed.delete(key)
      for (const [replyId, ask] of staged) if (ask.from.id === sessionId) staged.delete(replyId)
    },
    pending: (now) => {
      prune(now)
      return [...asks.values()].sort((a, b) => a.receivedAt - b.receivedAt).map((context) => ({
        ...context,
        ...timing(context)
      }))
    },
    nextExpiry: (now) => {
      prune(now)
      let next: number | undefined
      for (const context of asks.values()) {
        const at = expiry(context)
        if (next === undefined || at < next) next = at
      }
      return next
    }
  }
}
