/**
 * Typed errors of the parent-side ordering machinery (idle queue, terminal
 * barrier, detach handshake). Each message says what went wrong and what
 * happens next, for the engine's logs and the user.
 */
import { Data } from "effect"

/**
 * A host refused (part of) a batch it was handed. `delivered` is how many
 * items from the front of the batch it did take; everything from that index
 * on goes back where it came from (C-ORD-29).
 *
 * @category errors
 * @since 0.1.0
 */
export class DispatchError extends Data.TaggedError("DispatchError")<{
  readonly delivered: number
  readonly reason: string
}> {
  override get message(): string {
    return `Delivery to the parent session failed after ${this.delivered} item(s): ${this.reason}; the rest stays queued for retry`
  }
}

/**
 * The terminal barrier could not admit a child's terminal notice: its batch
 * was rolled back and the same terminal can be retried (C-ORD-29).
 *
 * @category errors
 * @since 0.1.0
 */
export class TerminalAdmissionError extends Data.TaggedError("TerminalAdmissionError")<{
  readonly terminalKey: string
  readonly reason: string
}> {
  override get message(): string {
    // The key's parts (owner, run id, terminal id) are joined by NUL: shown as owner/run/terminal.
    return `Terminal notice ${this.terminalKey.split("\u0000").join("/")} was not admitted: ${this.reason}; its messages went back to the idle queue and the terminal can be retried`
  }
}

/**
 * No terminal barrier is registered for a current generation (C-ORD-33).
 *
 * @category errors
 * @since 0.1.0
 */
export class NoTerminalBarrier extends Data.TaggedError("NoTerminalBarrier")<{}> {
  override get message(): string {
    return "No terminal barrier is registered for a current session generation; start the parent's inbound ordering before admitting terminals"
  }
}

/**
 * A parent session's Scope (its session generation) has closed: it took no
 * message. `deliver` and `receive` fail with it instead of leaving the
 * message in an idle queue nobody flushes; the session runtime then retries
 * the hand-off and abandons it when its own generation ends, and the
 * session's next generation gets it (from a `ParentJournal`, or again from
 * the broker, which was never told it was taken).
 *
 * @category errors
 * @since 0.1.0
 */
export class ParentSessionClosed extends Data.TaggedError("ParentSessionClosed")<{
  /** The runtime generation of the parent session that closed. */
  readonly generation: string
}> {
  override get message(): string {
    return `The parent session's generation ${this.generation} has closed, so it did not take the message; the session's next generation gets it`
  }
}

/**
 * The idle queue's Scope (its parent's session generation) has closed: it
 * took no entry, since nothing would flush it. `enqueue` and `deliverIdle`
 * fail with it; a parent session turns it into `ParentSessionClosed`.
 *
 * @category errors
 * @since 0.1.0
 */
export class IdleQueueClosed extends Data.TaggedError("IdleQueueClosed")<{
  /** The sender and message id of the entry that was not taken. */
  readonly senderId: string
  readonly messageId: string
}> {
  override get message(): string {
    return `The idle queue's session generation has closed, so it did not take message ${this.messageId} from ${this.senderId}; hand it to the session's next generation`
  }
}
