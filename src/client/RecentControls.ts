/**
 * The cancels and supersedes (`message_control`, P73) a client passed on
 * lately, by sender, message id and action, so that one written twice
 * reaches `IntercomClient.controls` once.
 *
 * Why: a `received-v1` broker holds a control it wrote until the client
 * confirms reading it (Custody.ts), and gives it again to the client's next
 * connection (its own rejoin, or a reconnect after a drop) when it was never
 * confirmed — the broker cannot tell a control the client read from one
 * still in the socket, so it must send it again. The message it is about
 * comes again too and is dropped (RecentMessages.ts); without this the
 * control was passed on a second time, and a consumer answering it
 * (src/session/Inbound.ts) sent its sender a second
 * `cancellation_requested` or `superseded` receipt.
 *
 * The same record tells whether a message was withdrawn (`withdrawal`):
 * read when the message is about to reach its host, which may be before
 * the consumer of `controls` handled the control (another stream, another
 * fiber), or in a later session generation of this client.
 *
 * Bounded like RecentMessages: the last `capacity` triples, oldest
 * forgotten first. Controls are few (one per cancel or supersede a sender
 * makes, never per message), and one comes again only while it is not
 * confirmed, so this keeps no confirmation bound: a control forgotten past
 * `capacity` and then sent again (more than `capacity` controls read and
 * none confirmed) reaches `controls` a second time.
 *
 * Owned by one `IntercomClient` and touched only by its synchronous inbound
 * code.
 */
import type { MessageControl } from "../protocol/frames.ts"

const keyOf = (senderId: string, messageId: string, action: MessageControl["action"]): string =>
  `${senderId}\u0001${messageId}\u0001${action}`

/** Remembers the (sender, message id, action) triples of the last `capacity` controls passed on. */
export class RecentControls {
  /** The triples, in the order they were first received. */
  private readonly seen = new Set<string>()
  private readonly capacity: number

  constructor(capacity = 1024) {
    this.capacity = capacity
  }

  /** Records the control `senderId` sent; false when it was seen already (written again: drop it). */
  firstTime(senderId: string, control: MessageControl): boolean {
    const key = keyOf(senderId, control.messageId, control.action)
    const seen = this.seen
    if (seen.has(key)) return false
    seen.add(key)
    if (seen.size > this.capacity) {
      for (const oldest of seen) {
        seen.delete(oldest)
        break
      }
    }
    return true
  }

  /** How `senderId` withdrew its message `messageId`, if a control of it is remembered (a cancel over a supersede). */
  withdrawal(senderId: string, messageId: string): MessageControl["action"] | undefined {
    if (this.seen.has(keyOf(senderId, messageId, "cancel"))) return "cancel"
    if (this.seen.has(keyOf(senderId, messageId, "supersede"))) return "supersede"
    return undefined
  }
}
