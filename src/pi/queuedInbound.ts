/**
 * The intercom messages a pi session runtime's generations handed to pi with
 * a turn to run (an idle
 * session's trigger, a steer, a follow-up: `sendMessage` with `triggerTurn`)
 * that pi has not put into the model's context yet, and the withdrawals (P73:
 * its sender's `cancel` or `supersede`) that came for them meanwhile.
 *
 * pi keeps steered and follow-up messages in its own queues until its agent
 * loop drains them, and offers no way to take one back. But every message it
 * drains passes pi's `message_end` before it joins the context pi builds the
 * model's request from, and a `message_end` handler may replace the message
 * (pi replaces it in place, in the agent's state and in what it persists). So
 * the extension's `message_end` asks `entering` about each `intercom_message`:
 * one withdrawn while it waited in pi's queue enters as the hand-off renders a
 * message withdrawn before the host took it (`renderInbound` with the action:
 * `Withdrawn: <name> cancelled this message …`), passive, so it begins no
 * intercom turn; any other message is left as it is, and forgotten. A
 * withdrawal that comes after `message_end` changes nothing: the model has it.
 *
 * It owns, keyed by (sender id, message id) and touched only by synchronous
 * code, the messages handed over with a turn and not yet entered (each with
 * the withdrawal that came for it meanwhile; several under one key when a
 * sender reuses an id, each told apart at `message_end` by the details
 * object pi was handed it with, and an earlier one's control marking only
 * it: `withdrawnEarlier`), and the withdrawals of messages
 * still in the session's hand-off (`waiting`: the host has not returned from
 * `deliver` for them yet, so one may come just before pi is handed the message
 * it names). The next hand-off of that key settles such a withdrawal: applied
 * to a message handed over with a turn, dropped for one handed over without
 * (already rendered withdrawn). One the hand-off reports for a message pi was
 * handed already (the hand-off had not let it go yet) is not waiting. Any
 * other withdrawal — of a message already in the model's context, or never handed
 * over with a turn here — is dropped at once, and the host saves nothing for
 * it (`withdrawn` says so): a later message reusing its (sender, id) is a new
 * one, never shown withdrawn. Each
 * map keeps its newest `QUEUED_KEPT`: a message pi dropped from its queue (Esc)
 * never enters, and is handed over again when the run settles (a new entry for
 * its key).
 *
 * It also watches the passive messages pi holds while its agent streams
 * (`HeldMessage`): one withdrawn meanwhile is rewritten in place, before pi
 * saves it; one pi saved is forgotten when the run settles (`settled`).
 */
import type { MessageControl } from "../protocol/frames.ts"
import type { Inbound } from "../session/Host.ts"
import { renderInbound } from "../session/render.ts"
import { newerThanControl } from "../session/ReplyTracker.ts"
import { deliveredMessage, MESSAGE_TYPE } from "./entries.ts"
import type { EntryView, MessageDetails } from "./journal.ts"

/**
 * How many handed-over messages, and how many withdrawals waiting for their
 * message's hand-off, each map keeps.
 *
 * @category constants
 * @since 0.1.0
 */
export const QUEUED_KEPT = 1000

/**
 * A passive message pi holds while its agent runs (`sendCustomMessage`
 * pushes it to `_pendingCustomMessages` while `isStreaming`) and saves when
 * the turn ends, with no `message_end` an extension sees. pi keeps the very
 * `content` array and `details` object it was handed (agent-session.js
 * `sendCustomMessage` builds its message from `message.content` and
 * `message.details`; `_appendCustomMessage` saves them as they are then): a
 * withdrawal rewrites both in place, so pi saves, and the model gets, the
 * message marked withdrawn.
 *
 * @category models
 * @since 0.1.0
 */
export interface HeldMessage {
  /** The `content` pi was handed: rewritten to the withdrawn rendering. */
  readonly content: Array<{ type: "text"; text: string }>
  /** The `details` pi was handed: given the withdrawn rendering's fields. */
  readonly details: MessageDetails
}

/**
 * What a withdrawn message enters the model's context as: its content and
 * details, in place of those it was handed to pi with.
 *
 * @category models
 * @since 0.1.0
 */
export interface WithdrawnRendering {
  readonly content: string
  readonly details: MessageDetails
}

/**
 * One pi session runtime's messages in pi's queue and their withdrawals:
 * owned by the extension's factory call, shared by its generations, so a
 * message one generation handed over is still found when it enters after the
 * next one started.
 *
 * @category models
 * @since 0.1.0
 */
export interface QueuedInbound {
  /**
   * pi is handed `inbound` with a turn to run: watched until it enters the
   * model's context, withdrawn if a withdrawal noted while it was in the
   * hand-off is waiting for it. Called before `sendMessage` (pi may run it at once). `details`: the very object
   * pi is handed as the message's details, which pi's `message_end` carries: it tells this message from another
   * under the same (sender, id) (a sender reusing an id) in pi's queues, which pi drains in its own order.
   */
  readonly handed: (inbound: Inbound, details?: unknown) => void
  /**
   * pi was handed `inbound` without a turn (passive, or already marked
   * withdrawn): a withdrawal waiting for its hand-off is done, and dropped.
   * `held`: pi holds it (it was streaming: the message is not in its session
   * yet) until its turn ends — watched until a withdrawal marks it in place
   * (`withdrawn`) or pi saved it (`settled`).
   */
  readonly handedWithoutTurn: (inbound: Inbound, held?: HeldMessage) => void
  /** Whether a message pi holds is watched under (`fromId`, `messageId`): a withdrawal of it needs `saved`. */
  readonly holds: (fromId: string, messageId: string) => boolean
  /**
   * pi's run settled: the held messages it saved (`saved()`: the `details`
   * objects of its session's `intercom_message` entries, read only when one
   * is watched) are no longer watched.
   */
  readonly settled: (saved: () => ReadonlySet<unknown>) => void
  /**
   * `sendMessage` threw for `inbound` after `handed` or `handedWithoutTurn`: pi does not have it, so it is no
   * longer watched, nor counted as handed to pi (a withdrawal the hand-off reports `waiting` for it is kept).
   */
  readonly notHanded: (inbound: Inbound) => void
  /**
   * The host's journal was told its sender withdrew the message `messageId`
   * of `fromId` (P73) by `action`: the session tells it for every withdrawal
   * it reads (but one of an earlier message than one under the same id it
   * read or recorded since: `JournalKeeper.withdrawnEarlier`) — of a message still in the hand-off (`waiting`), one the host
   * took, which may have entered the model's context already, or one never
   * handed over here at all. Kept for a message watched here (handed over with a
   * turn, not entered yet) and, when `waiting`, until that message's next
   * hand-off; otherwise dropped. `prepared`: what the hand-off last prepared
   * it as, when `waiting` — if pi was handed that already (`deliver` returned,
   * the hand-off has not let it go yet), it is not waiting. True when kept:
   * the message may still enter the model's context, so the withdrawal is
   * worth saving; false for one already there, or never handed over with a
   * turn here. A message pi holds (`handedWithoutTurn`'s `held`) is marked
   * in place at once, if pi has not saved it yet: `saved`, the `details`
   * objects of its session's `intercom_message` entries (`holds` says when
   * it is needed; undefined: unknown, so the message is taken as saved and
   * left as it is).
   */
  readonly withdrawn: (
    fromId: string,
    messageId: string,
    action: MessageControl["action"],
    waiting: boolean,
    prepared: Inbound | undefined,
    saved?: ReadonlySet<unknown>
  ) => boolean
  /**
   * The session read a control (at `readBy`, stamped at `controlAt`) of an earlier message than one under its
   * (sender, id) it read since (`InboundJournal.withdrawnEarlier`): the newest message watched under the key that
   * is not known to be newer (`newerThanControl`) is the one it is about, and enters marked withdrawn (one pi
   * holds: in place, as `withdrawn`, with `saved`). Nothing is saved (a saved withdrawal names the key, so the
   * newer message too).
   */
  readonly withdrawnEarlier: (
    fromId: string,
    messageId: string,
    action: MessageControl["action"],
    readBy: number | undefined,
    controlAt: number | undefined,
    saved?: ReadonlySet<unknown>
  ) => void
  /**
   * pi's `message_end` of a custom message: for an `intercom_message` handed
   * over here and withdrawn since, what it enters as; otherwise undefined
   * (and the message is no longer watched). A map lookup: any other message
   * is answered at once.
   */
  readonly entering: (message: { readonly customType: string; readonly details?: unknown }) => WithdrawnRendering | undefined
}

/** A message handed over with a turn, not entered yet, and how its sender withdrew it meanwhile. */
interface Watched {
  readonly inbound: Inbound
  /** The details object pi was handed it with (`handed`), if known. */
  readonly details: unknown
  /** Handed over without a turn while pi streamed: pi holds it until its turn ends (`handedWithoutTurn`). */
  readonly held: HeldMessage | undefined
  withdrawn: MessageControl["action"] | undefined
}

/** What `inbound`, withdrawn by `withdrawn`, enters the model's context as: passive, marked so. */
const rendering = (inbound: Inbound, withdrawn: MessageControl["action"]): WithdrawnRendering => ({
  content: renderInbound(inbound.from, inbound.message, false, withdrawn),
  details: {
    messageId: inbound.message.id,
    from: inbound.from,
    expectsReply: inbound.expectsReply,
    intent: "passive",
    withdrawn
  }
})

/**
 * The `details` objects of pi's saved `intercom_message` entries (`entries`: its session's): a message pi held
 * is saved once its details object is among them (`HeldMessage`).
 *
 * @category constructors
 * @since 0.1.0
 */
export const savedDetails = (entries: ReadonlyArray<EntryView>): ReadonlySet<unknown> => {
  const saved = new Set<unknown>()
  for (const entry of entries) {
    if (entry.type === "custom_message" && entry.customType === MESSAGE_TYPE) saved.add(entry.details)
  }
  return saved
}

/** One message (a copy handed over again), not two under one reused (sender, id). */
const sameMessage = (a: Inbound, b: Inbound): boolean =>
  a.read !== undefined && b.read !== undefined ? a.read === b.read : a.message === b.message

const keyOf = (fromId: string, messageId: string): string => `${fromId}\u0000${messageId}`

/** Rewrites the message pi holds as `held` to what `inbound`, withdrawn by `action`, enters as: pi saves that. */
const markInPlace = (held: HeldMessage, inbound: Inbound, action: MessageControl["action"]): void => {
  const marked = rendering(inbound, action)
  held.content.splice(0, held.content.length, { type: "text", text: marked.content })
  Object.assign(held.details, marked.details)
}

/** Sets `key` as the newest of `map`, dropping the oldest past `QUEUED_KEPT`. */
const keep = <A>(map: Map<string, A>, key: string, value: A): void => {
  map.delete(key)
  map.set(key, value)
  if (map.size > QUEUED_KEPT) {
    const oldest = map.keys().next()
    if (oldest.done !== true) map.delete(oldest.value)
  }
}

/**
 * An empty `QueuedInbound`, for one pi session runtime.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeQueuedInbound = (): QueuedInbound => {
  /** Messages watched, by key; several under one key (a sender reusing an id) in the order handed over. */
  const queued = new Map<string, Array<Watched>>()
  /** Withdrawals of messages in the session's hand-off, until that message's hand-off to pi. */
  const handingOff = new Map<string, MessageControl["action"]>()
  /**
   * The hand-off's messages pi was handed (with a turn or without): a withdrawal the hand-off reports `waiting`
   * for one of them came after pi had it (review revbd BD1). Weak: forgotten with the hand-off's entry.
   */
  const handedToPi = new WeakSet<Inbound>()
  const keyOfInbound = (inbound: Inbound): string => keyOf(inbound.from.id, inbound.message.id)
  /**
   * `target`, watched under `key`, is withdrawn by `action`. One pi holds is marked in place unless pi saved it
   * (`saved`; unknown: taken as saved), and no longer watched: false when pi saved it (the model has it).
   */
  const withdraw = (
    key: string,
    target: Watched,
    action: MessageControl["action"],
    saved: ReadonlySet<unknown> | undefined
  ): boolean => {
    target.withdrawn = action
    const held = target.held
    if (held === undefined) return true
    unwatch(key, (entry) => entry === target)
    if (saved === undefined || saved.has(held.details)) return false
    markInPlace(held, target.inbound, action)
    return true
  }
  /** Removes the watched entries of `key` that `drop` picks; returns the last one removed. */
  const unwatch = (key: string, drop: (watched: Watched) => boolean): Watched | undefined => {
    const watched = queued.get(key)
    if (watched === undefined) return undefined
    const dropped = watched.filter(drop)
    if (dropped.length === 0) return undefined
    const kept = watched.filter((entry) => !drop(entry))
    if (kept.length === 0) queued.delete(key)
    else queued.set(key, kept)
    return dropped.at(-1)
  }
  return {
    handed: (inbound, details) => {
      handedToPi.add(inbound)
      const key = keyOfInbound(inbound)
      // A copy pi dropped from its queue (Esc), handed over again, keeps the withdrawal that came for it there;
      // another message under the key (a newer one reusing the id) is watched beside it, with its own.
      const copy = unwatch(key, (entry) => sameMessage(entry.inbound, inbound))
      const withdrawn = handingOff.get(key) ?? copy?.withdrawn
      handingOff.delete(key)
      keep(queued, key, [...(queued.get(key) ?? []), { inbound, details, held: undefined, withdrawn }])
    },
    handedWithoutTurn: (inbound, held) => {
      handedToPi.add(inbound)
      const key = keyOfInbound(inbound)
      handingOff.delete(key)
      // A copy handed over with a turn earlier (dropped from pi's queue by Esc) is replaced by this one, which enters as it is.
      unwatch(key, (entry) => sameMessage(entry.inbound, inbound))
      if (held !== undefined) {
        keep(queued, key, [...(queued.get(key) ?? []), { inbound, details: held.details, held, withdrawn: undefined }])
      }
    },
    holds: (fromId, messageId) => queued.get(keyOf(fromId, messageId))?.some((entry) => entry.held !== undefined) === true,
    settled: (saved) => {
      let savedDetails: ReadonlySet<unknown> | undefined
      for (const [key, watched] of [...queued]) {
        if (!watched.some((entry) => entry.held !== undefined)) continue
        savedDetails ??= saved()
        const inSession = savedDetails
        unwatch(key, (entry) => entry.held !== undefined && inSession.has(entry.held.details))
      }
    },
    notHanded: (inbound) => {
      handedToPi.delete(inbound)
      unwatch(keyOfInbound(inbound), (entry) => entry.inbound === inbound)
    },
    withdrawn: (fromId, messageId, action, waiting, prepared, saved) => {
      const key = keyOf(fromId, messageId)
      // In the hand-off, not handed to pi yet: pi may be handed it next (a copy pi dropped from its queue, too).
      const ahead = waiting && (prepared === undefined || !handedToPi.has(prepared))
      if (ahead) keep(handingOff, key, action)
      // The control is the newest message's under the key (an earlier one's goes to `withdrawnEarlier`): the
      // newest watched one, unless that message is still in the hand-off, where an older one watched is not it.
      const watched = queued.get(key)
      const target = !waiting
        ? watched?.at(-1)
        : prepared === undefined
        ? undefined
        : watched?.findLast((entry) => sameMessage(entry.inbound, prepared))
      const kept = target !== undefined && withdraw(key, target, action, saved)
      return kept || ahead
    },
    withdrawnEarlier: (fromId, messageId, action, readBy, controlAt, saved) => {
      const key = keyOf(fromId, messageId)
      const target = queued.get(key)?.findLast((entry) => !newerThanControl(entry.inbound, readBy, controlAt))
      if (target !== undefined) withdraw(key, target, action, saved)
    },
    entering: (message) => {
      if (message.customType !== MESSAGE_TYPE) return undefined
      const delivered = deliveredMessage(message.details)
      if (delivered === undefined) return undefined
      const key = keyOf(delivered.from, delivered.messageId)
      // The one pi was handed with these very details; else (details not known) the oldest under the key.
      const watched = queued.get(key)?.filter((entry) => entry.held === undefined)
      const entered = watched?.find((entry) => entry.details === message.details) ?? watched?.[0]
      if (entered === undefined) return undefined
      unwatch(key, (entry) => entry === entered)
      const { inbound, withdrawn } = entered
      if (withdrawn === undefined || inbound.intent === "passive") return undefined
      return rendering(inbound, withdrawn)
    }
  }
}
