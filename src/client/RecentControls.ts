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
 * (src/session/InboundControls.ts) sent its sender a second
 * `cancellation_requested` or `superseded` receipt.
 *
 * The same record tells whether a message was withdrawn (`withdrawal`):
 * read when the message is about to reach its host, which may be before
 * the consumer of `controls` handled the control (another stream, another
 * fiber), or in a later session generation of this client.
 *
 * A record is of one message, not of its (sender, id) pair for ever: a
 * sender may send a new message under an id it used before, once the
 * broker's replay record of the old one is gone (P46), and that message is
 * not withdrawn by the old one's cancel (review revax AX-B1). The broker
 * never writes a control before the message it is about (docs/protocol.md,
 * "Receipts and control"), so a message RecentMessages passes on as new
 * after a control of its pair is a new one (`received`: not a copy it
 * dropped), and the pair's record is forgotten: the new message is handed
 * over live, and a cancel of it is passed on. Not so a question
 * RecentMessages passes once more (`"again"`): its pair was reopened
 * because this client's reply to it was lost or cancelled, and what comes
 * is that same question, asked again — it comes before any control of it,
 * since a withdrawn question is never reopened (RecentMessages, review
 * revbf BF2) — and its control, read behind it, stands; a copy of a
 * withdrawn one, and its control written again, are dropped (review revbb
 * BB1). A copy of the old message that RecentMessages no
 * longer remembers is taken for a new one — a duplicate it passes anyway;
 * its control, which the broker writes behind it again, is then passed on
 * again.
 *
 * Bounded like RecentMessages: the last `capacity` triples, oldest
 * forgotten first. Controls are few (one per cancel or supersede a sender
 * makes, never per message), and one comes again only while it is not
 * confirmed, so this keeps no confirmation bound: a control forgotten past
 * `capacity` and then sent again (more than `capacity` controls read and
 * none confirmed) reaches `controls` a second time. And in time: a record
 * is kept `CONTROL_KEPT_MS` (30 days) from when the control was first
 * read, on the client's Clock: the longest mailbox retention a broker
 * takes (`--mailbox-retention`, a day by default; the client cannot tell
 * which), for which a control, or a cancelled copy of its message, is kept
 * for this client instance's return — longer than the day a withdrawal
 * outlives its route (Receipts.ts) and the hour of the replay record. The
 * broker counts that retention from when it kept the control or the copy
 * (KeptControls.ts: as the connection it was written to ended without
 * confirming it), which can be later than this read, so the bound is not
 * exact: a control given again more than 30 days after it was first read
 * is passed on a second time (review revbb BB3).
 *
 * Owned by one `IntercomClient` and touched only by its synchronous inbound
 * code.
 */
import type { MessageControl } from "../protocol/frames.ts"

const keyOf = (senderId: string, messageId: string, action: MessageControl["action"]): string =>
  `${senderId}\u0001${messageId}\u0001${action}`

/**
 * How long a control is remembered from when it was first read: 30 days, the longest mailbox retention a broker
 * takes (`MAX_MAILBOX_RETENTION_MS`, src/broker/options.ts), for which it may keep a control or a cancelled copy
 * of its message for this client instance's return — counted by the broker from when it kept it, which can be
 * later than the read (the header says what that costs).
 */
export const CONTROL_KEPT_MS = 30 * 86_400_000

/** One control as remembered: when it was first read (the client's Clock), and its broker stamp. */
interface ReadControl {
  readonly at: number
  /** `MessageControl.timestamp`: when the broker wrote it, on the clock it stamps `brokerReceivedAt` with. */
  readonly stamped: number
}

/** Remembers the (sender, message id, action) triples of the last `capacity` controls passed on, for `CONTROL_KEPT_MS`. */
export class RecentControls {
  /** When each triple was first read, and stamped, in the order read. */
  private readonly seen = new Map<string, ReadControl>()
  private readonly capacity: number

  constructor(capacity = 1024) {
    this.capacity = capacity
  }

  /**
   * Records the control `senderId` sent, read at `now` (the client's Clock); false when it was seen already
   * (written again: drop it) — the same (sender, message id, action) with a broker stamp (`timestamp`) no later
   * than the one remembered. One stamped later is another message's under the reused id (an old cancel given
   * again at registration, then the new message's own: review revbm BM2), passed on and remembered instead; the
   * broker gives a control again with the stamp it made it with.
   */
  firstTime(senderId: string, control: MessageControl, now: number): boolean {
    const seen = this.seen
    for (const [oldest, { at }] of seen) {
      if (now - at < CONTROL_KEPT_MS) break
      seen.delete(oldest)
    }
    const key = keyOf(senderId, control.messageId, control.action)
    const known = seen.get(key)
    if (known !== undefined && control.timestamp <= known.stamped) return false
    if (known !== undefined) seen.delete(key)
    seen.set(key, { at: now, stamped: control.timestamp })
    if (seen.size > this.capacity) {
      for (const oldest of seen.keys()) {
        seen.delete(oldest)
        break
      }
    }
    return true
  }

  /**
   * A new message `senderId` sent under `messageId` was passed on (RecentMessages' `"new"`, never a question it
   * passes once more: `"again"`): any control of that pair read before it was about an earlier message with that
   * id, and is forgotten (a control never comes before its message).
   */
  received(senderId: string, messageId: string): void {
    if (this.seen.size === 0) return
    this.seen.delete(keyOf(senderId, messageId, "cancel"))
    this.seen.delete(keyOf(senderId, messageId, "supersede"))
  }

  /**
   * How `senderId` withdrew its message `messageId`, if a control of it read less than `CONTROL_KEPT_MS` before
   * `now` is remembered (a cancel over a supersede). `receivedAt`: the message's `brokerReceivedAt`, when known —
   * a control the broker stamped before it received the message is an earlier message's under the same id (one
   * this client never read again: restored from a journal, say), and does not count (review revbi BI2).
   */
  withdrawal(
    senderId: string,
    messageId: string,
    now: number,
    receivedAt?: number
  ): MessageControl["action"] | undefined {
    if (this.kept(keyOf(senderId, messageId, "cancel"), now, receivedAt)) return "cancel"
    if (this.kept(keyOf(senderId, messageId, "supersede"), now, receivedAt)) return "supersede"
    return undefined
  }

  private kept(key: string, now: number, receivedAt: number | undefined): boolean {
    const read = this.seen.get(key)
    return read !== undefined && now - read.at < CONTROL_KEPT_MS && (receivedAt === undefined || read.stamped >= receivedAt)
  }
}
