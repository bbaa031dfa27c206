/**
 * Ask edges expiring on time. An edge whose asker was granted
 * `ask-expiry-v1` (`AskEdge.notify`) is pruned on time, not at the next
 * send: the broker's expiry fiber sleeps until `nextExpiry` (woken through
 * `wake` when such an edge opens with an earlier deadline: `open`) and
 * closes the edges due then (`Router.expireAsks`: Asks.prune alone,
 * whatever else pruned in that millisecond, so an edge that opened already
 * past its deadline cannot stay due); the asker is told (`ask_expired`,
 * through `tellAsker`: on its FIFO outbox, behind any reply accepted
 * before, when it is connected and granted the extension; an asker that
 * is away is not owed it). A `list` from such a client prunes first too
 * (Discovery.ts), so the asker's round trip at its own deadline reads the
 * verdict before the answer (Ask.ts) — and a reply accepted but parked
 * behind its sender's mail to a full outbox, which the answer to that
 * round trip (marked `settle`) is held for (Output.enqueueSettleAnswer,
 * ParkedReplies.ts). Withdrawn or answered edges are deleted, not expired:
 * no notice. Edges nobody is told of expire at the next send's sweep.
 *
 * Owns the one timer the Asks concern has: when the fiber is due to wake
 * (`scheduled`), and what an edge that expired owes (`expired`: its
 * asker's notice, its mailbox copy dropped). The edges are AskEdges.ts's.
 */
import { type AskEdge, type AskEdges, dueOf } from "./AskEdges.ts"
import * as Encode from "./encode.ts"

/** The ask edges' expiry on the broker's clock: waking the expiry fiber, and telling of each edge that expired. */
export class AskExpiry {
  private readonly edges: AskEdges
  private readonly tellAsker: (askerKey: string, frame: string) => void
  private readonly askClosed: (messageKey: string, now: number) => void
  private readonly wake: () => void
  /** The deadline the expiry fiber sleeps until (`nextExpiry`), undefined while it waits for `wake`. */
  private scheduled: number | undefined = undefined
  /** Told of each expired edge: its asker told when it asked for it, its mailbox copy dropped. */
  private readonly expired = (edge: AskEdge, now: number): void => {
    // Only to a live connection granted the extension (MailDelivery.tellLive): not owed to an asker that is away.
    if (edge.notify === true) this.tellAsker(edge.askerKey, Encode.askExpiredFrame(edge.messageId, now))
    this.askClosed(edge.messageKey, now)
  }

  /**
   * @param edges the open ask edges, which it opens and prunes.
   * @param tellAsker writes an `ask_expired` to a live asker granted `ask-expiry-v1`, else drops it (MailDelivery.tellLive).
   * @param askClosed told of an ask whose edge expired (MailDelivery.askClosed).
   * @param wake wakes the broker's expiry fiber: an edge to tell of opened before it was due to wake.
   */
  constructor(
    edges: AskEdges,
    tellAsker: (askerKey: string, frame: string) => void,
    askClosed: (messageKey: string, now: number) => void,
    wake: () => void
  ) {
    this.edges = edges
    this.tellAsker = tellAsker
    this.askClosed = askClosed
    this.wake = wake
  }

  /** Opens `edge`, waking the expiry fiber when its asker is to be told and it is due before the fiber wakes. */
  open(edge: AskEdge): void {
    this.edges.open(edge)
    if (edge.notify === true && (this.scheduled === undefined || dueOf(edge) < this.scheduled)) {
      this.scheduled = dueOf(edge)
      this.wake()
    }
  }

  /**
   * When the expiry fiber should next prune (broker clock, ms): the earliest
   * deadline while an edge whose asker is told is open, else undefined (it
   * waits for `wake`). Edges nobody is told of expire at the next send, as
   * they always did.
   */
  nextExpiry(): number | undefined {
    this.scheduled = this.edges.notifyingCount > 0 ? this.edges.nextDeadline() : undefined
    return this.scheduled
  }

  /** Closes the edges past their deadline at `now`, each told of (`expired`). */
  prune(now: number): void {
    this.edges.prune(now, this.expired)
  }
}
