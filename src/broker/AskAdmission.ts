/**
 * Which sends the ask stages refuse (P60, P62, P63): a reply that follows
 * no open edge from its target to its sender (`replyRefusal`: no pending
 * ask, the wrong ask, or its asker left), an ask to no live session, one
 * towards a session that waits for the asker, one past the bounds on open
 * asks (`MAX_ASKS_PER_SESSION`, `MAX_ASKS`), and one announcing a timeout
 * out of range (`ask-timeout-v1`: `askRefusal`); and how long an ask it let
 * through stays open (`askTimeoutOf`). Read-only over the edges: opening and
 * closing them, once a send is delivered or queued, is Asks.ts's.
 */
import { isAskTimeoutMs, MAX_ASK_TIMEOUT_MS } from "../protocol/constants.ts"
import { DeliveryCode, Reason } from "../protocol/delivery.ts"
import { ASK_TIMEOUT_V1 } from "../protocol/features.ts"
import type { AskEdges } from "./AskEdges.ts"
import type { Registry } from "./Registry.ts"
import type { Refusal, SendAttempt } from "./SendStage.ts"

/** Open asks one session may have at once; past it a new ask is refused (`E_TOO_MANY_ASKS`). */
export const MAX_ASKS_PER_SESSION = 1024

/** Open asks the broker keeps at once, overall. */
export const MAX_ASKS = 262_144

/** The announced timeout of an ask, undefined when none was announced, or a refusal. */
const announcedTimeout = (attempt: SendAttempt): number | undefined | Refusal => {
  const value = attempt.frame.askTimeoutMs
  if (value === undefined || !attempt.sender.peer.features.has(ASK_TIMEOUT_V1)) return undefined
  if (isAskTimeoutMs(value)) return value
  return { code: DeliveryCode.InvalidMessage, reason: Reason.invalidAskTimeout(MAX_ASK_TIMEOUT_MS) }
}

/**
 * How long an ask stays open: the timeout its asker announced, else the
 * broker's (`askTimeoutMs`); undefined for a message that is not an ask. Only
 * called for a send the `asks` stage let through (the announcement is valid).
 */
export const askTimeoutOf = (attempt: SendAttempt, brokerDefaultMs: number): number | undefined => {
  if (attempt.message.expectsReply !== true) return undefined
  const announced = announcedTimeout(attempt)
  return typeof announced === "number" ? announced : brokerDefaultMs
}

/**
 * The refusal of the `replies` stage (P62) for `attempt`, or undefined: a
 * `replyTo` must follow an open edge from the target to the replier.
 */
export const replyRefusal = (edges: AskEdges, registry: Registry, attempt: SendAttempt): Refusal | undefined => {
  const replyTo = attempt.message.replyTo
  // The ask it answers is the target's own message: keyed by the target and its id (`replyKey`).
  if (replyTo === undefined || attempt.replyKey === undefined) return undefined
  // Edges past their deadline are closed already: every check runs after the send's sweep (Send.prune).
  const edge = edges.get(attempt.replyKey)
  if (edge === undefined) {
    if (!edges.isAsked(attempt.sender.key, replyTo)) return { code: DeliveryCode.ReplyTarget, reason: Reason.replyNoAsk }
    // Asked that id by someone else: the reply goes to the wrong session — in place of an asker that
    // left, when a live session answers to the name it was sent to (say so, and how to reach the asker).
    const asked = attempt.target === undefined ? undefined : edges.soleAsk(attempt.sender.key, replyTo)
    const askerLeft = asked !== undefined && !registry.byKey.has(asked.askerKey)
    return { code: DeliveryCode.ReplyTarget, reason: askerLeft ? Reason.replyAskerLeft : Reason.replyWrongAsk }
  }
  if (edge.askerKey !== attempt.targetKey || edge.targetKey !== attempt.sender.key) {
    return { code: DeliveryCode.ReplyTarget, reason: Reason.replyWrongAsk }
  }
  return undefined
}

/**
 * The refusal of the `asks` stage (P60, P63) for `attempt`, or undefined:
 * asks go only to a live session that is not waiting for the asker, within
 * the bounds, with a valid announced timeout.
 */
export const askRefusal = (edges: AskEdges, attempt: SendAttempt): Refusal | undefined => {
  if (attempt.message.expectsReply !== true) return undefined
  if (attempt.target === undefined) {
    return { code: DeliveryCode.TargetDisconnected, reason: Reason.targetDisconnected }
  }
  if (edges.isWaiting(attempt.target.key, attempt.sender.key, attempt.replyKey)) {
    return { code: DeliveryCode.MutualAsk, reason: Reason.mutualAsk }
  }
  // Edges are state the broker keeps for a long time: bounded per asker and overall.
  if (edges.openOf(attempt.sender.key) >= MAX_ASKS_PER_SESSION) {
    return { code: DeliveryCode.TooManyAsks, reason: Reason.tooManyAsks(MAX_ASKS_PER_SESSION) }
  }
  if (edges.size >= MAX_ASKS) return { code: DeliveryCode.TooManyAsks, reason: Reason.tooManyAsksOverall }
  const timeout = announcedTimeout(attempt)
  return typeof timeout === "object" ? timeout : undefined
}
