/**
 * The broker's state epoch as a client sees it (`state-epoch-v1`): which
 * routing state each connection's broker held, and what this client left in
 * it — so that, when a reconnect reaches a broker whose state is another
 * (a memory-mode broker restarted, or a durable one whose database was
 * deleted), the client can say exactly what was lost.
 *
 * What the old state held for this client: the asks it sent and the broker
 * acknowledged (their edges, which a reply needs), and the sends the broker
 * acknowledged as `queued` (for a session that was away) or `staged` (a
 * `replace` message held back). Each is noted with the epoch of the
 * connection that acknowledged it, the newest `LOST_SENDS_LIMIT` of each, and
 * forgotten once the epoch they belong to is over, or once they no longer
 * hold anything: an ask when its reply arrives or its asker gives it up, a
 * queued ask when its reply arrives. Nothing is sent again: a
 * queued message may have been delivered before the restart, and sending it
 * once more could deliver it twice — the event says what may be gone instead.
 *
 * Owned by `IntercomClient` (one instance per client), touched only by
 * synchronous code.
 */
import type { Delivery } from "./events.ts"
import type { SendRequest } from "./requests.ts"

/**
 * Asks, and queued or staged sends, a client remembers for a state loss, at
 * most, each (the newest). An ask's wait is the session's single slot, so a
 * few are enough; queued mail is listed to the user, who needs no more.
 *
 * @category constants
 * @since 0.1.0
 */
export const LOST_SENDS_LIMIT = 256

/**
 * A send the old broker acknowledged and held state for.
 *
 * @category models
 * @since 0.1.0
 */
export interface LostSend {
  readonly messageId: string
  /** The target as the send named it (`supervisor` for a child's message to its supervisor). */
  readonly to: string
  /** What the broker said: `queued` or `staged` for mail it held; `socket_delivered` for an ask written at once. */
  readonly delivery: Delivery["delivery"]
}

/**
 * The broker reached after a reconnect holds another state than the one
 * before (`state-epoch-v1`): everything the old one held is gone —
 * `IntercomClient.stateLost` yields this, before the reconnect's element of
 * `reconnects`.
 *
 * @category models
 * @since 0.1.0
 */
export interface BrokerStateLost {
  readonly _tag: "BrokerStateLost"
  /** The state epoch before, and the new one. */
  readonly previousEpoch: string
  readonly stateEpoch: string
  /** The client's connection count with the new connection (as `ClientStatus.connections`). */
  readonly connections: number
  /** Asks this client sent that the old broker acknowledged: their replies can no longer reach it. */
  readonly asks: ReadonlyArray<LostSend>
  /** Sends the old broker acknowledged as `queued` or `staged`: lost unless delivered before it stopped. */
  readonly queued: ReadonlyArray<LostSend>
}

/**
 * What a state loss means, for a person: the broker restarted without its
 * saved state, and the mail this client had left in it (listed, at most 10)
 * may not have been delivered.
 *
 * @category utilities
 * @since 0.1.0
 */
export const describeStateLost = (event: BrokerStateLost): string => {
  const parts = [
    "The broker restarted without its saved state (its routing state is new): open asks, queued mail and replies in flight it held are gone."
  ]
  if (event.asks.length > 0) {
    parts.push(`Asks that can no longer be answered: ${event.asks.map((lost) => `${lost.messageId} to ${lost.to}`).join(", ")}.`)
  }
  if (event.queued.length > 0) {
    const shown = event.queued.slice(-10).map((lost) => `${lost.messageId} to ${lost.to}`).join(", ")
    const more = event.queued.length > 10 ? ` and ${event.queued.length - 10} more` : ""
    parts.push(
      `${event.queued.length} message(s) it had accepted as queued for a session that was away may never be delivered (unless that session came back before the restart): ${shown}${more}. Nothing was sent again; send them again if they still matter.`
    )
  }
  return parts.join(" ")
}

/** Drops the entry for `messageId` from a list, if it holds one. */
const forget = (list: Array<{ readonly lost: LostSend }>, messageId: string): void => {
  const at = list.findIndex((entry) => entry.lost.messageId === messageId)
  if (at !== -1) list.splice(at, 1)
}

/** Keeps the newest `LOST_SENDS_LIMIT` of a list. */
const pushBounded = <A>(list: Array<A>, item: A): void => {
  list.push(item)
  if (list.length > LOST_SENDS_LIMIT) list.shift()
}

/**
 * A client's view of its broker's state epoch (see the module header).
 *
 * @category models
 * @since 0.1.0
 */
export class StateEpochs {
  /** The epoch of the last connection adopted; undefined before it, or when that broker did not say. */
  private current: string | undefined
  private readonly asks: Array<{ readonly epoch: string; readonly lost: LostSend }> = []
  private readonly queued: Array<{ readonly epoch: string; readonly lost: LostSend }> = []

  /** The state epoch of the connection adopted last (`ClientStatus.stateEpoch`). */
  get epoch(): string | undefined {
    return this.current
  }

  /** Notes a send the broker of `epoch` acknowledged with `delivery`, if it holds state for it. */
  acknowledged(epoch: string | undefined, request: SendRequest, delivery: Delivery): void {
    if (epoch === undefined) return
    const lost: LostSend = { messageId: request.message.id, to: request.to, delivery: delivery.delivery }
    if (request.message.expectsReply === true) pushBounded(this.asks, { epoch, lost })
    if (delivery.delivery !== "socket_delivered") pushBounded(this.queued, { epoch, lost })
  }

  /**
   * A reply to the ask `messageId` arrived (a message whose `replyTo` names
   * it): the ask was delivered and its edge is closed, so a later state loss
   * neither lists it as an ask nor as mail that may not have been delivered.
   */
  answered(messageId: string): void {
    forget(this.asks, messageId)
    forget(this.queued, messageId)
  }

  /**
   * The asker gave the ask `messageId` up (`cancel_ask`: its wait ended
   * without a reply): no reply is awaited, so a state loss does not list it
   * among the asks. Were it queued, it stays among the queued mail.
   */
  askEnded(messageId: string): void {
    forget(this.asks, messageId)
  }

  /**
   * A connection whose broker holds `epoch` is adopted: a state loss when the
   * last connection's broker held another (both said which), with what this
   * client had left in that state; what belongs to no live epoch is forgotten.
   */
  adopt(epoch: string | undefined, connections: number): BrokerStateLost | undefined {
    const previous = this.current
    this.current = epoch
    if (previous === undefined || epoch === undefined || previous === epoch) return undefined
    const of = (list: Array<{ readonly epoch: string; readonly lost: LostSend }>) => {
      const lost = list.filter((entry) => entry.epoch === previous).map((entry) => entry.lost)
      const kept = list.filter((entry) => entry.epoch === epoch)
      list.splice(0, list.length, ...kept)
      return lost
    }
    return { _tag: "BrokerStateLost", previousEpoch: previous, stateEpoch: epoch, connections, asks: of(this.asks), queued: of(this.queued) }
  }
}
