/**
 * The intercom messages a generation handed to pi with a turn to run (an idle
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
 * It owns two maps keyed by (sender id, message id), touched only by
 * synchronous code: the messages handed over and not yet entered, and the
 * withdrawals not yet matched to an entering message (one may come just
 * before pi was handed the message it names). Each keeps its newest
 * `QUEUED_KEPT`: a message pi dropped from its queue (Esc) never enters, and
 * is handed over again when the run settles (a new entry for its key).
 */
import type { MessageControl } from "../protocol/frames.ts"
import type { Inbound } from "../session/Host.ts"
import { renderInbound } from "../session/render.ts"
import { deliveredMessage, MESSAGE_TYPE } from "./entries.ts"
import type { MessageDetails } from "./journal.ts"

/**
 * How many handed-over messages, and how many withdrawals, each map keeps.
 *
 * @category constants
 * @since 0.1.0
 */
export const QUEUED_KEPT = 1000

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
 * One generation's messages in pi's queue and their withdrawals.
 *
 * @category models
 * @since 0.1.0
 */
export interface QueuedInbound {
  /** pi was handed `inbound` with a turn to run: watched until it enters the model's context. */
  readonly handed: (inbound: Inbound) => void
  /** Its sender withdrew the message `messageId` of `fromId` (P73), by `action`, before the agent's history held it. */
  readonly withdrawn: (fromId: string, messageId: string, action: MessageControl["action"]) => void
  /**
   * pi's `message_end` of a custom message: for an `intercom_message` handed
   * over here and withdrawn since, what it enters as; otherwise undefined
   * (and the message is no longer watched). A map lookup: any other message
   * is answered at once.
   */
  readonly entering: (message: { readonly customType: string; readonly details?: unknown }) => WithdrawnRendering | undefined
}

const keyOf = (fromId: string, messageId: string): string => `${fromId}\u0000${messageId}`

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
 * An empty `QueuedInbound`, for one generation.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeQueuedInbound = (): QueuedInbound => {
  const queued = new Map<string, Inbound>()
  const withdrawals = new Map<string, MessageControl["action"]>()
  return {
    handed: (inbound) => keep(queued, keyOf(inbound.from.id, inbound.message.id), inbound),
    withdrawn: (fromId, messageId, action) => keep(withdrawals, keyOf(fromId, messageId), action),
    entering: (message) => {
      if (message.customType !== MESSAGE_TYPE) return undefined
      const delivered = deliveredMessage(message.details)
      if (delivered === undefined) return undefined
      const key = keyOf(delivered.from, delivered.messageId)
      const inbound = queued.get(key)
      if (inbound === undefined) return undefined
      queued.delete(key)
      const action = withdrawals.get(key)
      withdrawals.delete(key)
      if (action === undefined || inbound.intent === "passive") return undefined
      return {
        content: renderInbound(inbound.from, inbound.message, false, action),
        details: {
          messageId: inbound.message.id,
          from: inbound.from,
          expectsReply: inbound.expectsReply,
          intent: "passive",
          withdrawn: action
        }
      }
    }
  }
}
