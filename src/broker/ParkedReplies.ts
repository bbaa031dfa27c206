/**
 * `ask-expiry-v1`'s settling answers held behind parked replies: the
 * `sessions` answer to an asker's settling `list` (marked `settle: true`,
 * the round trip at its own deadline: Discovery.ts, Ask.ts) while a reply to
 * that asker the broker accepted (its edge closed) is still parked in another
 * connection's list — behind its sender's earlier mail to a session whose
 * outbox is full, since one batch's output keeps its order. Answered first,
 * it would end the asker's wait in ReplyTimeout although the reply is on its
 * way (review revag, D2).
 *
 * Only the answer is held, in a small slot per asker; the asker's reader
 * reads on (its sends, its liveness probe, its other `list`s: answered at
 * once). The answer is queued into the asker's outbox right after the last
 * reply to it leaves the other connections' parked lists, whichever way it
 * leaves: offered by its drainer (`Output.parkedOffered` calls `offered`),
 * forced at its sender's close (`OutputEnd.forceParked` calls `recheck`).
 * A reply already in the asker's own parked list (forced behind its
 * mailbox flush there, which its drainer is offering) needs no slot: the
 * answer is parked after it in that list.
 * At the asker's close the slot is dropped (`drop`, OutputEnd.drainOnClose):
 * the reply is refused there and goes to the mailbox, and the client's
 * settle ends in ConnectionLost (ReplyTimeout for its ask). An answer held
 * past the client's liveness timeout is kept, not released: the client has
 * stopped waiting for it (its settle ended in ReplyTimeout), and it still
 * goes once the reply does, or with the connection; the slot is bounded
 * (`MAX_HELD`), so it costs at most that many frames per connection.
 *
 * Ownership: the slots are this module's (one map, keyed by `Peer`),
 * written only in Output's and OutputEnd's synchronous steps. It reads
 * Output's readers with parked output, their `parked` lists and the current
 * batch's (which Output and OutputEnd write), and queues a released answer
 * through Output (`AnswerQueue`). Runs per settling `list` while some reader has
 * parked output, and — while a slot holds an answer (a size test otherwise)
 * — when a parked item addressed to a held asker leaves a parked list:
 * never per routed frame. Split from Output.ts (2026-12-06).
 */
import type { OutboundItem, Peer } from "./Peer.ts"
import { isMessage } from "./OutboundItems.ts"

/** How a released answer is queued: through Output, the owner of the outboxes and parked lists. */
export interface AnswerQueue {
  /** Queues `answer` in `asker`'s outbox, past its bounds (Output.forceEnqueue). */
  readonly forceEnqueue: (asker: Peer, answer: string) => void
  /** Parks `answer` at the end of `asker`'s own parked list, which its drainer is offering. */
  readonly parkLast: (asker: Peer, answer: string) => void
}

/**
 * Settling answers one connection may have held at once. A client settles
 * one ask per round trip; past this, a further one goes at once (the
 * uncovered case of docs/protocol.md), so a client that sends settling
 * lists without end cannot make the broker hold them without end.
 */
export const MAX_HELD = 8

/** The held settling answers and the check that releases them (see the module header). */
export class ParkedReplies {
  private readonly parkedReaders: ReadonlySet<Peer>
  private readonly batchParked: () => ReadonlyArray<readonly [Peer, OutboundItem]>
  private readonly queue: AnswerQueue
  /** Each asker's held answers, oldest first; an asker with none has no entry. */
  private readonly held = new Map<Peer, Array<string>>()
  /** Settling answers held since the broker started (stats). */
  answersHeld = 0

  /**
   * @param parkedReaders the readers whose own parked list may hold output (Output's).
   * @param batchParked the output of the batch being handled that did not fit yet (Output's).
   * @param queue queues a released answer (Output's).
   */
  constructor(
    parkedReaders: ReadonlySet<Peer>,
    batchParked: () => ReadonlyArray<readonly [Peer, OutboundItem]>,
    queue: AnswerQueue
  ) {
    this.parkedReaders = parkedReaders
    this.batchParked = batchParked
    this.queue = queue
  }

  /** Whether any answer is held (a size test, for the points a held asker's reply may leave a list). */
  get holding(): boolean {
    return this.held.size > 0
  }

  /**
   * Holds `answer`, the `sessions` answer to `asker`'s settling `list`, when
   * a reply to `asker` is parked in another connection's list (`parkedFor`)
   * or an earlier answer is held for it (they go in order); parks it at the
   * end of `asker`'s own parked list when only that list holds such a reply
   * (behind `asker`'s mailbox flush, with its drainer at work); false when
   * it may be queued at once — also when the slot is full (`MAX_HELD`).
   */
  hold(asker: Peer, answer: string): boolean {
    const answers = this.held.get(asker)
    if (answers !== undefined) {
      if (answers.length >= MAX_HELD) return false
      answers.push(answer)
    } else if (this.parkedFor(asker)) {
      this.held.set(asker, [answer])
    } else if (this.parkedReaders.has(asker) && holdsReplyFor(asker.parked, asker)) {
      // The reply waits in `asker`'s own list (forced behind its sender's mail there, its mailbox flush):
      // the answer is parked after it there, where its drainer offers it next.
      this.queue.parkLast(asker, answer)
    } else {
      return false
    }
    this.answersHeld++
    return true
  }

  /**
   * A parked item addressed to `recipient` left a parked list (offered by a
   * drainer: queued, parked at the end of `recipient`'s own list, or
   * refused). When answers are held for `recipient` and no reply to it is
   * parked elsewhere any more, they are released now, after it.
   */
  offered(recipient: Peer): void {
    if (this.held.has(recipient) && !this.parkedFor(recipient)) this.releaseFor(recipient)
  }

  /**
   * Parked lists were forced or taken back (a connection's close): each
   * held asker with no reply parked elsewhere any more gets its answers.
   */
  recheck(): void {
    if (this.held.size === 0) return
    for (const asker of [...this.held.keys()]) if (!this.parkedFor(asker)) this.releaseFor(asker)
  }

  /** `asker`'s connection closes: its held answers are dropped (it reads nothing more). */
  drop(asker: Peer): void {
    this.held.delete(asker)
  }

  /**
   * `asker`'s held answers go, in order: after what its own parked list
   * holds while its drainer is at work (the reply may have been parked
   * there, behind its sender's older mail), else into its outbox, past the
   * bounds (at most `MAX_HELD` frames). Dropped for a connection that is
   * closing: it reads nothing more.
   */
  private releaseFor(asker: Peer): void {
    const answers = this.held.get(asker)
    if (answers === undefined) return
    this.held.delete(asker)
    if (asker.outboxShut || asker.state === "closed" || asker.isClosing) return
    const behindOwn = asker.parked.length > 0 && this.parkedReaders.has(asker)
    for (let i = 0; i < answers.length; i++) {
      if (behindOwn) this.queue.parkLast(asker, answers[i]!)
      else this.queue.forceEnqueue(asker, answers[i]!)
    }
  }

  /**
   * Whether a reply (a message with `replyTo`) to `asker` is parked in the
   * list of a reader other than `asker`, or in the batch being handled (a
   * scan of those lists; one field test while none holds output). `asker`'s
   * own list is left out: what of it is ahead of an answer released there
   * is offered first anyway (`releaseFor`).
   */
  private parkedFor(asker: Peer): boolean {
    if (holdsReplyFor(this.batchParked(), asker)) return true
    if (this.parkedReaders.size === 0) return false
    for (const reader of this.parkedReaders) {
      if (reader !== asker && holdsReplyFor(reader.parked, asker)) return true
    }
    return false
  }
}

/** Whether `parked` holds a reply addressed to `asker` (a scan). */
const holdsReplyFor = (parked: ReadonlyArray<readonly [Peer, OutboundItem]>, asker: Peer): boolean => {
  for (let i = 0; i < parked.length; i++) {
    const [to, item] = parked[i]!
    if (to === asker && isMessage(item) && item.mail.message.replyTo !== undefined) return true
  }
  return false
}
