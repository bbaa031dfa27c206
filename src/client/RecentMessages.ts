/**
 * The messages a client received lately, by sender and message id, so that a
 * message delivered twice reaches the caller once.
 *
 * A durable broker (docs/store.md) keeps every acknowledged message until the
 * client confirms it (`received-v1`), and forgets it in its next commit; if
 * it is killed before that, or the connection drops first, it delivers the
 * message again. What the client confirmed is gone within one commit, so a
 * bounded memory of recent ids (the last `capacity`, oldest forgotten first)
 * is enough for it. What the client has not confirmed is not: under
 * `confirmWhenHandled` (or held confirmations) nothing from the oldest
 * message the consumer has not handled onward is confirmed, however many
 * messages that is, and all of it comes again after a reconnect. So a pair
 * is forgotten only once it is past `capacity` and was received before the
 * message the client's confirmations stop at (`ConfirmBound`, passed to
 * `firstTime`): that message, and every one received after it, are kept;
 * while confirmations are withheld (`"none"`), every pair is.
 * One gap is left (docs/client.md): a confirmation that covers more than
 * `capacity` messages at once lets the oldest of them go at the next
 * message read, and a broker killed before it took effect sends them again.
 *
 * A question this client answered can come again on purpose: when its reply
 * is lost before the asker read it (cancelled by this client, or failed:
 * an `expired` receipt), the broker asks it again while the ask lasts
 * (docs/protocol.md, review revx X1). So the asks this client replied to are
 * remembered by reply id with their asker (`replied`, the last `capacity`),
 * recorded as the reply is sent, before any answer or receipt about it can
 * be read. A reply's loss forgets exactly its question's (asker, id) pair,
 * which then passes once more: as the client reads the reply's `expired`
 * receipt (`replyLost`; the broker writes that receipt before it asks the
 * question again: MailDelivery.lost); or around its `cancel_message`. The
 * broker writes the question again ahead of that cancel's answer, so the
 * pair is let go as the cancel is written (`cancelWritten`) and, when the
 * broker answers that it cancelled nothing (the reply stands: its question
 * stays answered), remembered again (`cancelAnswered`) — a copy of the
 * question that comes while the cancel waits for its answer still passes.
 * Review revz Z2.
 * Owned by one `IntercomClient` and touched only by its synchronous code.
 */
import type { ConfirmBound } from "./ConfirmationPolicy.ts"
import type { InboundMessage } from "./events.ts"

const pairOf = (senderId: string, messageId: string): string => `${senderId}\u0001${messageId}`

/**
 * Remembers the (sender, message id) pairs received since the message the
 * client's confirmations stop at, and at least the last `capacity` ones.
 */
export class RecentMessages {
  /** The pairs, in the order they were first received. */
  private readonly seen = new Set<string>()
  private readonly capacity: number
  /** The message the pair in `boundPair` is of: computed once per bound, not per message. */
  private boundMessage: InboundMessage | undefined
  private boundPair = ""
  /** The pair of the ask each recent reply this client sent answered, by reply id (the last `capacity`, oldest first). */
  private readonly replies = new Map<string, string>()

  constructor(capacity = 1024) {
    this.capacity = capacity
  }

  /**
   * Records the message; false when it was seen already (a redelivery: drop
   * it). `bound` says how far the client may confirm what it read: called
   * only when a pair may be forgotten, and none from its message onward is.
   */
  firstTime(senderId: string, messageId: string, bound: () => ConfirmBound): boolean {
    const key = pairOf(senderId, messageId)
    const seen = this.seen
    if (seen.has(key)) return false
    seen.add(key)
    if (seen.size > this.capacity) this.forget(bound())
    return true
  }

  /**
   * This client sends the reply `replyId` to `askerId`'s ask `askId`:
   * should the reply be lost, the ask may come again. Called before the
   * reply is written, so a receipt read ahead of its acknowledgement finds it.
   */
  replied(replyId: string, askerId: string, askId: string): void {
    const replies = this.replies
    replies.delete(replyId)
    replies.set(replyId, pairOf(askerId, askId))
    if (replies.size > this.capacity) for (const oldest of replies.keys()) {
      replies.delete(oldest)
      break
    }
  }

  /**
   * This client's reply `replyId` was lost before its asker read it (an
   * `expired` receipt): the pair of the question it answered is forgotten,
   * so that question, asked again, passes. Nothing for an id not known as a
   * reply.
   */
  replyLost(replyId: string): void {
    const pair = this.replies.get(replyId)
    if (pair === undefined) return
    this.replies.delete(replyId)
    this.seen.delete(pair)
  }

  /**
   * This client writes a `cancel_message` of its reply `replyId`: the pair
   * of the question it answered is let go now, since the broker, should it
   * withdraw the reply, writes the question again ahead of the cancel's
   * answer. Nothing for an id not known as a reply.
   */
  cancelWritten(replyId: string): void {
    const pair = this.replies.get(replyId)
    if (pair !== undefined) this.seen.delete(pair)
  }

  /**
   * The broker answered the cancel of `replyId`: `cancelled`, the reply is
   * gone (its question passes once more, or passed already); otherwise the
   * reply stands and its question stays answered, so its pair is remembered
   * again and a later copy of it is dropped as a repeat.
   */
  cancelAnswered(replyId: string, cancelled: boolean): void {
    const pair = this.replies.get(replyId)
    if (pair === undefined) return
    if (cancelled) this.replies.delete(replyId)
    else this.seen.add(pair)
  }

  /** Forgets the oldest pairs past `capacity`, up to the pair of `bound`'s message; none while confirmations are withheld. */
  private forget(bound: ConfirmBound): void {
    // Withheld: nothing this client read is confirmed, and a reconnect brings all of it again.
    if (bound === "none") return
    let stop: string | undefined
    if (bound !== "all") {
      if (bound !== this.boundMessage) {
        this.boundMessage = bound
        this.boundPair = pairOf(bound.from.id, bound.message.id)
      }
      stop = this.boundPair
    }
    const seen = this.seen
    for (const oldest of seen) {
      if (seen.size <= this.capacity || oldest === stop) return
      seen.delete(oldest)
    }
  }
}
