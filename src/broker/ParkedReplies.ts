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
 * leaves: offered by its drainer (`ParkedDrain.parkedOffered` calls `offered`),
 * forced at its sender's close (`OutputEnd.forceParked` calls `recheck`).
 * A reply a takeover's custody hold keeps (CustodyHold.ts: forced to the
 * session's new connection while the old one's custody may still give its
 * sender's older mail back) is not parked, but the broker accepted it: it
 * counts like a parked one (`CustodyHolds.keepsReply`), and the answer goes
 * when the hold ends (`custodyEnded`, from Router.detach after the kept
 * mail went back) — or is dropped with the asker's connection, should that
 * close first (the hold then keeps the reply for the session's next one).
 * So does a reply the old connection the hold waits for was written and
 * never confirmed (its custody, its write in progress or that write's
 * untaken rest): its close gives it back to the session's connection, ahead
 * of what the hold keeps — the asker's client may be the old instance that
 * took its session back before that close (review settle4); if the old
 * client confirms it as it closes, no reply follows and the answer goes at
 * that close. A reply written to the asker's own previous connection and
 * never confirmed needs no slot: the client's own rejoin (`rejoin-v1`)
 * takes it back at its `register`, ahead of anything read on the new
 * connection (`Router.abandoned`), and a close that comes first gives it
 * to the mailbox, whose flush at the next `register` comes first too
 * (test/broker/ask-settle-written-reply.test.ts).
 * A reply already in the asker's own parked list (forced behind its
 * mailbox flush there, which its drainer is offering) needs no slot: the
 * answer is parked right after the last such reply in that list — never at
 * its end, behind the asker's own sends to a session that may not read
 * (review revd2, D1); likewise a released answer. Replies are matched by
 * the asker's session, not its connection: one queued for the session's
 * previous connection (a reconnect, a takeover) is refused there and taken
 * back to the asker, and the answer waits for it (D2). The batch being
 * handled (the asker's own, whose settling `list` this is) does not make
 * the answer held: `enqueue` parks it behind that batch's output anyway,
 * in order (D3).
 * At the asker's close the slot is dropped (`drop`, OutputEnd.drainOnClose):
 * the reply is refused there and goes to the mailbox, and the client's
 * settle ends in ConnectionLost (and settles again on its next connection,
 * SettleRoundTrip.ts). No timer releases a held answer. This package's
 * client, its settle unanswered for its liveness timeout, probes the same
 * connection (an unmarked `list`, answered at once): answered, it keeps the
 * connection and waits on for the held answer until its rejoin grace from
 * the deadline runs out, then ends the ask in ReplyTimeout and ignores the
 * answer, which still goes once the reply does, or with the connection
 * (only when the asker's own parked `list` answer holds later `list`s back,
 * `PeerReader.whileHeldBack`, does the probe go unanswered too, and the
 * client drops the connection, as it drops a frozen broker's). The slot is
 * bounded (`MAX_HELD`), so it costs at most that many frames per connection.
 *
 * A reply forced into the asker's own parked list behind the asker's own
 * sends to a session that does not read (its sender's older mail is in the
 * asker's mailbox flush there, so `ForcedOutput.parkOwn` puts it at the
 * list's end) does not wait for that session: while the head of the list,
 * for another connection, waits, the drainer offers the items addressed to
 * the asker itself ahead of it (`ParkedDrain.offerOwnAhead`) — the reply,
 * the answer parked right behind it, a `list` answer parked behind the
 * sends (whose parked answer held later `list`s back,
 * `PeerReader.whileHeldBack`). Every per-pair order holds: those items keep
 * their order among themselves and all go to one outbox, and the asker's
 * sends to others keep theirs; a departure hold counts down per offered
 * message, not per position (`DepartureHolds.offered`), so a departure
 * still follows its sender's mail; a return wait and a custody hold are
 * tested in `ParkedDrain.place` for the asker's own items too; a control
 * frame is in its message's pair. The `delivered` acks of the sends parked
 * at the head stay in place, behind their sends (a send is never
 * acknowledged before it is queued); messages, control frames and
 * read-only answers go ahead. An item that joins the list while the
 * drainer waits on the head (the forced reply, the answer parked behind
 * it, an early `list` answer — appended inside a batch or a close) marks
 * the list (`Peer.ownAhead`) and wakes the drainer at the batch's end
 * (`Output.ownJoined`, `wakeTouched`; outside a batch, the output fiber's
 * flush), never inside the step that parked it: a woken drainer runs at
 * once (`Deferred.doneUnsafe`). Tests: test/broker/ask-settle-parked-reply.test.ts
 * (by hand), own-ahead.test.ts (running fibers), own-ahead-order.test.ts
 * (the per-pair orders).
 *
 * Ownership: the slots are this module's (one map, keyed by `Peer`),
 * written only in Output's, ParkedDrain's, OutputEnd's and Router.detach's synchronous steps. It reads
 * Output's readers with parked output, their `parked` lists and the current
 * batch's (which Output and OutputEnd write), what the custody holds keep
 * (through `keepsReply`), and queues a released answer
 * through Output (`AnswerQueue`). Runs per settling `list` while some reader has
 * parked output, and — while a slot holds an answer (a size test otherwise)
 * — when a parked reply to a held asker's session leaves a parked list:
 * never per routed frame, nor per other parked item. Such a reply's
 * check rescans the parked lists (O(parked) per reply, while an answer is
 * held; a count of parked replies per session would need every place a
 * parked list is written to keep it, which was not worth it). Split from Output.ts (2026-12-06).
 * Stats: answers held (`answersHeld`), and how held ones left the slot:
 * released after an offered reply (`answersOffered`), released at a close
 * that forced parked lists (`answersForced`), dropped with the asker's
 * connection (`answersDropped`), or released at the end of the custody
 * hold that kept the reply (`answersCustody`). An answer parked at once in
 * the asker's own list (`hold`) is held but takes no slot, so none of the
 * four counts it.
 */
import type { OutboundItem, Peer } from "./Peer.ts"
import { isMessage } from "./OutboundItems.ts"

/** How a released answer is queued: through Output, the owner of the outboxes and parked lists. */
export interface AnswerQueue {
  /** Queues `answer` in `asker`'s outbox, past its bounds (Output.forceEnqueue). */
  readonly forceEnqueue: (asker: Peer, answer: string) => void
  /** Parks `answer` at `index` of `asker`'s own parked list, which its drainer is offering. */
  readonly parkAt: (asker: Peer, index: number, answer: string) => void
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
  private readonly keptReply: (key: string) => boolean
  private readonly queue: AnswerQueue
  /** Each asker's held answers, oldest first; an asker with none has no entry. */
  private readonly held = new Map<Peer, Array<string>>()
  /** Settling answers held since the broker started (stats). */
  answersHeld = 0
  /** Held answers released after their last reply was offered by its drainer (`offered`; stats). */
  answersOffered = 0
  /** Held answers released when parked lists were forced or taken back at a close (`recheck`; stats). */
  answersForced = 0
  /** Held answers dropped with their asker's connection, at its close or while it closed (stats). */
  answersDropped = 0
  /** Held answers released when the takeover custody hold that kept their reply ended (`custodyEnded`; stats). */
  answersCustody = 0

  /**
   * @param parkedReaders the readers whose own parked list may hold output (Output's).
   * @param batchParked the output of the batch being handled that did not fit yet (Output's).
   * @param keptReply whether a takeover's custody hold on session `key` keeps a reply to it, or may be given one back at an old close (`CustodyHolds.keepsReply`).
   * @param queue queues a released answer (Output's).
   */
  constructor(
    parkedReaders: ReadonlySet<Peer>,
    batchParked: () => ReadonlyArray<readonly [Peer, OutboundItem]>,
    keptReply: (key: string) => boolean,
    queue: AnswerQueue
  ) {
    this.parkedReaders = parkedReaders
    this.batchParked = batchParked
    this.keptReply = keptReply
    this.queue = queue
  }

  /** Whether any answer is held (a size test, for the points a held asker's reply may leave a list). */
  get holding(): boolean {
    return this.held.size > 0
  }

  /**
   * Holds `answer`, the `sessions` answer to `asker`'s settling `list`, when
   * a reply to `asker`'s session is parked in another connection's list
   * (`parkedFor`; the batch being handled — `asker`'s own — is left out:
   * `enqueue` parks the answer behind its output anyway) or an earlier
   * answer is held for it (they go in order); parks it right behind the
   * last such reply in `asker`'s own parked list when only that list holds
   * one (behind `asker`'s mailbox flush, with its drainer at work); false
   * when it may be queued at once — also when the slot is full (`MAX_HELD`).
   */
  hold(asker: Peer, answer: string): boolean {
    const answers = this.held.get(asker)
    if (answers !== undefined) {
      if (answers.length >= MAX_HELD) return false
      answers.push(answer)
    } else {
      const key = asker.session?.key
      if (key === undefined) return false
      if (this.parkedFor(asker, key, false)) {
        this.held.set(asker, [answer])
      } else {
        // The reply waits in `asker`'s own list (forced behind its sender's mail there, its mailbox flush):
        // the answer is parked right after it there, ahead of `asker`'s own mail to others.
        const last = this.parkedReaders.has(asker) ? lastReplyIn(asker.parked, key) : -1
        if (last < 0) return false
        this.queue.parkAt(asker, last + 1, answer)
      }
    }
    this.answersHeld++
    return true
  }

  /**
   * `item` left a parked list (offered by a drainer: queued, parked in its
   * recipient's own list, or refused and taken back to its session's
   * current connection). When it is a reply to the session of an asker with
   * held answers, and no reply to that session is parked elsewhere any
   * more, they are released now, after it. Matched by session, not
   * connection: the reply may have been queued for the asker's previous
   * one (a reconnect or a takeover). A scan of the parked lists only for
   * such a reply, never per other item.
   */
  offered(item: OutboundItem): void {
    if (!isMessage(item) || item.mail.message.replyTo === undefined) return
    for (const asker of this.held.keys()) {
      if (asker.session?.key !== item.to) continue
      if (!this.parkedFor(asker, item.to, true)) this.answersOffered += this.releaseFor(asker)
      return
    }
  }

  /**
   * Parked lists were forced or taken back (a connection's close): each
   * held asker with no reply parked elsewhere any more gets its answers.
   */
  recheck(): void {
    if (this.held.size === 0) return
    for (const asker of [...this.held.keys()]) {
      const key = asker.session?.key
      if (key === undefined || !this.parkedFor(asker, key, true)) this.answersForced += this.releaseFor(asker)
    }
  }

  /**
   * A takeover's custody hold ended (Router.detach, at the last old close it
   * waited for) and what it kept went back — to the session's connection, or
   * the mailbox when it is away: each held asker with no reply parked or kept
   * any more gets its answers, after that mail.
   */
  custodyEnded(): void {
    if (this.held.size === 0) return
    for (const asker of [...this.held.keys()]) {
      const key = asker.session?.key
      if (key === undefined || !this.parkedFor(asker, key, true)) this.answersCustody += this.releaseFor(asker)
    }
  }

  /** `asker`'s connection closes: its held answers are dropped (it reads nothing more). */
  drop(asker: Peer): void {
    const answers = this.held.get(asker)
    if (answers === undefined) return
    this.held.delete(asker)
    this.answersDropped += answers.length
  }

  /**
   * `asker`'s held answers go, in order: right behind the last reply to its
   * session in its own parked list while its drainer is at work (the reply
   * may have been parked there, behind its sender's older mail) — never
   * behind `asker`'s own mail to others, which may wait on a session that
   * does not read — else into its outbox, past the bounds (at most
   * `MAX_HELD` frames). Dropped for a connection that is closing: it reads
   * nothing more (counted in `answersDropped`). Returns how many went.
   */
  private releaseFor(asker: Peer): number {
    const answers = this.held.get(asker)
    if (answers === undefined) return 0
    this.held.delete(asker)
    if (asker.outboxShut || asker.state === "closed" || asker.isClosing) {
      this.answersDropped += answers.length
      return 0
    }
    const key = asker.session?.key
    const last = key !== undefined && this.parkedReaders.has(asker) ? lastReplyIn(asker.parked, key) : -1
    for (let i = 0; i < answers.length; i++) {
      if (last >= 0) this.queue.parkAt(asker, last + 1 + i, answers[i]!)
      else this.queue.forceEnqueue(asker, answers[i]!)
    }
    return answers.length
  }

  /**
   * Whether a reply (a message with `replyTo`) to session `key` (`asker`'s)
   * is parked in the list of a reader other than `asker` — whichever
   * connection of that session it was queued for — or, when `withBatch`, in
   * the batch being handled (a scan of those lists; one field test while
   * none holds output) — or kept by a takeover's custody hold on that
   * session (forced to it meanwhile: a size test while no hold exists, else
   * a look-up by key and a scan of what that hold keeps). `asker`'s own
   * list is left out: what of it is ahead of an answer released there is
   * offered first anyway (`releaseFor`).
   */
  private parkedFor(asker: Peer, key: string, withBatch: boolean): boolean {
    if (withBatch && lastReplyIn(this.batchParked(), key) >= 0) return true
    if (this.keptReply(key)) return true
    if (this.parkedReaders.size === 0) return false
    for (const reader of this.parkedReaders) {
      if (reader !== asker && lastReplyIn(reader.parked, key) >= 0) return true
    }
    return false
  }
}

/** The index of the last reply to session `key` in `parked`, or -1 (a scan from the end). */
const lastReplyIn = (parked: ReadonlyArray<readonly [Peer, OutboundItem]>, key: string): number => {
  for (let i = parked.length - 1; i >= 0; i--) {
    const item = parked[i]![1]
    if (isMessage(item) && item.to === key && item.mail.message.replyTo !== undefined) return i
  }
  return -1
}
