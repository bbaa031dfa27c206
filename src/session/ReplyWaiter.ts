/**
 * The single reply-waiter slot (C-ASK-1…4, C-ASK-9, C-ORD-32).
 *
 * - `reserve` is a synchronous check-and-set: of several racing blocking
 *   calls exactly one gets the slot; the others are refused and never touch it.
 * - Every settle path names its own waiter: `release`, a routed reply, a
 *   departed peer, a question the broker dropped — so a losing or failing call can never disturb the winner.
 *   Only `teardown` (the session generation closing) ends whichever waiter is
 *   current, and the slot remembers it: `ended` tells a call that binds its
 *   waiter afterwards that its generation is over, so it sends nothing, and
 *   `whenEnded` ends a wait that is not on a waiter's outcome (a send still
 *   waiting in the client) when the generation closes.
 * - The outcome is a `Deferred`: a reply routed before the asker started to
 *   wait is kept, never lost.
 * - A waiter bound to its question (`bind`) is announced at once, in the
 *   same synchronous step, to the one hook the inbound handling installs
 *   (`onBound`): it takes a reply read before the waiter was bound from the
 *   client's unhandled messages and routes it here (C-ORD-32).
 *
 * The slot is a plain field owned by one `IntercomSession`, touched only by
 * synchronous code.
 */
import { Deferred, type Effect, Exit } from "effect"
import type { InboundMessage } from "../client/events.ts"
import type { AskAnsweredElsewhere, AskExpired, AskSuperseded, BrokerStateLost, ReplyPeerDisconnected, SessionEnded } from "./errors.ts"

/**
 * How a wait ends without a reply: the peer left, the broker dropped the
 * question or a later message replaced it, a broker restart lost it, or the
 * generation closed.
 *
 * @category models
 * @since 0.1.0
 */
export type WaitEnd = ReplyPeerDisconnected | BrokerStateLost | AskExpired | AskSuperseded | AskAnsweredElsewhere | SessionEnded

/**
 * The holder of the slot: the question it waits on, and the Deferred its outcome goes into.
 *
 * @category models
 * @since 0.1.0
 */
export interface Waiter {
  /** Set once the question is about to be sent (C-ASK-4: the question id). */
  readonly questionId: string | undefined
  /** The resolved target: its exact id and (for a case-insensitive match) its name. */
  readonly targetId: string | undefined
  readonly targetName: string | undefined
  /**
   * The client's `presenceMark` when the question was about to be sent: a
   * `session_left` of the target read after it means the incarnation that
   * got the question left (C-ASK-9). Unset for a durable question, which the
   * broker keeps for a rejoined target.
   */
  readonly sentMark: number | undefined
  readonly outcome: Deferred.Deferred<InboundMessage, WaitEnd>
}

/**
 * What identifies the reply to a question: its id, and the asked session's id and name (C-ASK-4).
 *
 * @category models
 * @since 0.1.0
 */
export interface Correlation {
  readonly questionId: string
  readonly targetId: string
  readonly targetName: string | undefined
  /** See `Waiter.sentMark`. */
  readonly sentMark?: number | undefined
}

/**
 * The single reply-waiter slot of one generation (see the module header).
 *
 * @category models
 * @since 0.1.0
 */
export interface ReplyWaiterSlot {
  /** The new waiter, or `undefined` when another call holds the slot. */
  readonly reserve: () => Waiter | undefined
  /**
   * Binds the waiter to its question, or rebinds it (a question resent to a
   * rejoined target); a no-op for a waiter that no longer holds the slot.
   */
  readonly bind: (waiter: Waiter, correlation: Correlation) => Waiter
  /**
   * Installs `bound`, which `bind` calls (synchronously, after the slot
   * holds the bound waiter) whenever it binds the waiter holding the slot.
   * One hook at a time: a later one replaces it. Returns the removal, which
   * leaves a later hook in place.
   */
  readonly onBound: (bound: () => void) => () => void
  /** Frees the slot if (and only if) `waiter` still holds it. */
  readonly release: (waiter: Waiter) => void
  /**
   * Resolves the current waiter when `message` is its reply: `replyTo` equals
   * the question id and the sender is the target by exact id or by name
   * ignoring case (C-ASK-4), and its wait has not ended. True when it was
   * consumed. `taking`, when given, runs once the reply is known to be the
   * waiter's and before the waiter is resumed: the wait's continuation runs
   * synchronously inside this call (Effect resumes a fiber awaiting a
   * Deferred at once), so what the caller owes the reply is done before it.
   */
  readonly route: (inbound: InboundMessage, taking?: () => void) => boolean
  /** Ends `waiter`'s wait if it still holds the slot (its target left, C-ASK-9). */
  readonly peerLeft: (waiter: Waiter, error: WaitEnd) => void
  /** Ends the current wait if it waits on the question `questionId` (the broker dropped or replaced it, C-DLV-9). */
  readonly expired: (questionId: string, error: WaitEnd) => void
  /** Ends whichever wait is current (generation close, C-ASK-2); `ended` answers `error` from then on. */
  readonly teardown: (error: WaitEnd) => void
  /**
   * The error `teardown` ended this generation's waits with, once it ran. A
   * call checks it just before it sends, in the same synchronous step as its
   * `bind`: a waiter `teardown` failed before it was bound must not send its
   * question (C-ORD-35).
   */
  readonly ended: () => WaitEnd | undefined
  /**
   * Fails with `teardown`'s error once it ran (at once when it has): a wait
   * that is not on the slot's outcome — a send still waiting in the client,
   * say — races it, so that the generation's close ends that wait too
   * whatever became of its waiter meanwhile (C-ORD-35).
   */
  readonly whenEnded: Effect.Effect<never, WaitEnd>
  readonly current: () => Waiter | undefined
}

const sameName = (a: string | undefined, b: string | undefined): boolean =>
  a !== undefined && b !== undefined && a.trim().length > 0 && a.trim().toLowerCase() === b.trim().toLowerCase()

/**
 * An empty slot.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeReplyWaiterSlot = (): ReplyWaiterSlot => {
  let current: Waiter | undefined
  let endedBy: WaitEnd | undefined
  let announce: (() => void) | undefined
  const closed = Deferred.makeUnsafe<never, WaitEnd>()

  return {
    reserve: () => {
      if (current !== undefined) return undefined
      const waiter: Waiter = {
        questionId: undefined,
        targetId: undefined,
        targetName: undefined,
        sentMark: undefined,
        outcome: Deferred.makeUnsafe<InboundMessage, WaitEnd>()
      }
      current = waiter
      return waiter
    },
    bind: (waiter, correlation) => {
      const bound: Waiter = { ...waiter, ...correlation }
      if (current?.outcome !== waiter.outcome) return bound
      current = bound
      announce?.()
      return bound
    },
    onBound: (hook) => {
      announce = hook
      return () => {
        if (announce === hook) announce = undefined
      }
    },
    release: (waiter) => {
      if (current?.outcome === waiter.outcome) current = undefined
    },
    route: (inbound, taking) => {
      const waiter = current
      if (waiter === undefined || waiter.questionId === undefined) return false
      if (inbound.message.replyTo !== waiter.questionId) return false
      if (inbound.from.id !== waiter.targetId && !sameName(inbound.from.name, waiter.targetName)) return false
      if (Deferred.isDoneUnsafe(waiter.outcome)) return false
      taking?.()
      return Deferred.doneUnsafe(waiter.outcome, Exit.succeed(inbound))
    },
    peerLeft: (waiter, error) => {
      if (current?.outcome === waiter.outcome) Deferred.doneUnsafe(waiter.outcome, Exit.fail(error))
    },
    expired: (questionId, error) => {
      const waiter = current
      if (waiter !== undefined && waiter.questionId === questionId) Deferred.doneUnsafe(waiter.outcome, Exit.fail(error))
    },
    teardown: (error) => {
      endedBy ??= error
      Deferred.doneUnsafe(closed, Exit.fail(endedBy))
      if (current !== undefined) Deferred.doneUnsafe(current.outcome, Exit.fail(error))
    },
    ended: () => endedBy,
    whenEnded: Deferred.await(closed),
    current: () => current
  }
}
