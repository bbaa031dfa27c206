/**
 * The `cancel_message`s one client connection wrote (or is writing) and has
 * not seen answered, by message id, and the callers waiting on each.
 *
 * A second `cancel` of an id whose cancel waits joins it and shares its
 * answer. A cancel whose callers all left (timed out, gave up) after its
 * frame was written stays, detached, for its late answer: the broker may
 * have carried it out and write the question the cancelled reply answered
 * again ahead of that answer, so that question's pair stays reopened in the
 * repeat filter until the answer is read (RecentMessages.cancelEnded;
 * review revag AG1). One whose frame the outbox took back unwritten reached
 * no broker and ends with its first caller (`leave`, review revai AI1).
 *
 * Detached cancels are bounded: at most `DETACHED_CANCELS_PER_CONNECTION`
 * per connection, the oldest to detach dropped first (review revai AI4,
 * helper cancelb) — a broker that never answers would otherwise keep them
 * all until the connection closes. Dropping one is what that close does to
 * it: its question's (asker, id) pair is left reopened, not closed, so the
 * question passes once more should the broker ask it again (it may have
 * carried the cancel out), and a copy the broker did not mean as a new
 * question passes once too — a duplicate, never a lost question (AG1). Its
 * answer, should it still come, finds no cancel waiting and is dropped
 * (unless a cancel of the same id written since takes it: the broker's
 * answers to two cancels of one id agree), and a later cancel of its id
 * writes its own frame instead of joining it. Each cancel let go so, and
 * each one the close cuts off, is told to the constructor's `abandoned`:
 * its pair stays reopened but no longer held, so the repeat filter's bound
 * may trim it (RecentMessages.cancelAbandoned; review revaj AJ2). One the
 * close cuts off whose frame surely never left (never queued, or still
 * queued when the outbox dropped it: the connection drops the outbox's
 * queue, which marks it, before `failAll`) reached no broker, as one taken
 * back: it is told to `withdrawn` instead (RecentMessages.cancelWithdrawn;
 * helper cancelc).
 *
 * Owned by one `ClientConnection` and touched only by its synchronous code.
 */
import { Deferred, Exit } from "effect"
import { ConnectionLost } from "./errors.ts"

/** How many detached cancels one connection keeps before it drops the oldest (see the module header). */
export const DETACHED_CANCELS_PER_CONNECTION = 256

/**
 * What a `cancel` caller waits for: the broker's answer (cancelled or not), or `"withdrawn"` — the first
 * caller gave up while its frame was queued and the outbox took it back, so a caller that joined it writes
 * the cancel anew (helper cancelb).
 */
export type CancelAnswer = boolean | "withdrawn"

/**
 * One cancel waiting for the broker's answer: how many callers wait on it, `maybeSent` — its frame went to
 * the outbox and was not taken back, so it reached the broker or may still (false before it is queued, and
 * again once the outbox took it back unwritten).
 */
export interface PendingCancel {
  readonly answer: Deferred.Deferred<CancelAnswer, ConnectionLost>
  waiters: number
  maybeSent: boolean
}

/** How a caller's leaving ended: the cancel stays (waited on, or detached), or it ended unwritten. */
export type CancelLeft = "stays" | "endedUnwritten"

/** The cancels of one connection awaiting the broker's answer (see the module header). */
export class PendingCancels {
  private readonly pending = new Map<string, PendingCancel>()
  /** The ids of the detached cancels (written, no caller left), oldest first. */
  private readonly detached = new Set<string>()
  private readonly limit: number
  private readonly abandoned: (messageId: string) => void
  private readonly withdrawn: (messageId: string) => void

  /**
   * `abandoned` is told of each cancel let go with no answer read and no caller told it ended unwritten: a
   * detached one past the bound or dropped for a send, and every one still waiting at the close (`failAll`)
   * whose frame may have reached the broker. `withdrawn` is told of each one the close cuts off whose frame
   * surely did not (`maybeSent` false).
   */
  constructor(
    abandoned: (messageId: string) => void,
    withdrawn: (messageId: string) => void,
    limit = DETACHED_CANCELS_PER_CONNECTION
  ) {
    this.abandoned = abandoned
    this.withdrawn = withdrawn
    this.limit = limit
  }

  /**
   * A caller cancels `messageId`: it joins the cancel waiting for that id (a detached one too, which is then
   * waited on again), or begins one (`first`: it writes the frame).
   */
  enter(messageId: string): { readonly pending: PendingCancel; readonly first: boolean } {
    const waiting = this.pending.get(messageId)
    if (waiting !== undefined) {
      waiting.waiters += 1
      this.detached.delete(messageId)
      return { pending: waiting, first: false }
    }
    const pending: PendingCancel = {
      answer: Deferred.makeUnsafe<CancelAnswer, ConnectionLost>(),
      waiters: 1,
      maybeSent: false
    }
    this.pending.set(messageId, pending)
    return { pending, first: true }
  }

  /** The broker answered the cancel of `messageId`: it is taken out, with whoever waits on it. */
  take(messageId: string): PendingCancel | undefined {
    const pending = this.pending.get(messageId)
    if (pending === undefined) return undefined
    this.pending.delete(messageId)
    this.detached.delete(messageId)
    return pending
  }

  /**
   * A caller of the cancel `pending` of `messageId` leaves (answered, timed out, gave up). The last to leave a
   * cancel that may have reached the broker leaves it detached (the oldest detached one dropped past the
   * bound). The first leaving one whose frame surely did not (never queued, or taken back) ends it:
   * `endedUnwritten`, with `pending.waiters` callers that joined it still waiting (the caller tells them).
   */
  leave(messageId: string, pending: PendingCancel, first: boolean): CancelLeft {
    pending.waiters -= 1
    if (this.pending.get(messageId) !== pending) return "stays"
    if (pending.maybeSent) {
      if (pending.waiters === 0) this.detach(messageId)
      return "stays"
    }
    if (!first && pending.waiters > 0) return "stays"
    this.pending.delete(messageId)
    return "endedUnwritten"
  }

  /** Drops a detached cancel of `messageId` (a send of that id begins: its bare answer must be the send's). */
  dropDetached(messageId: string): void {
    if (!this.detached.delete(messageId)) return
    this.pending.delete(messageId)
    this.abandoned(messageId)
  }

  /**
   * The connection closed: every cancel waiting fails with `ConnectionLost`, and none is kept; each is told
   * abandoned, or withdrawn if its frame surely never left. Call it once the outbox dropped its queue
   * (`Outbox.drop`), so a frame that was still queued is marked unsent first.
   */
  failAll(): void {
    const waiting = [...this.pending]
    this.pending.clear()
    this.detached.clear()
    for (const [messageId, pending] of waiting) {
      if (pending.maybeSent) this.abandoned(messageId)
      else this.withdrawn(messageId)
      Deferred.doneUnsafe(pending.answer, Exit.fail(new ConnectionLost({ operation: "cancel" })))
    }
  }

  /** `messageId`'s cancel has no caller left: it waits detached, and the oldest goes past the bound. */
  private detach(messageId: string): void {
    const detached = this.detached
    detached.add(messageId)
    if (detached.size <= this.limit) return
    for (const oldest of detached) {
      detached.delete(oldest)
      this.pending.delete(oldest)
      this.abandoned(oldest)
      return
    }
  }
}
