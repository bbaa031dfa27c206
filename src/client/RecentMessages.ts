/**
 * Size note: about 520 lines, one concept (whether a message read under a
 * (sender, id) pair is passed on: new, again, or a repeat); most of it is the
 * reopening rules' bookkeeping and their reasons.
 *
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
 * remembered by reply id (`replied`, the last `capacity`), recorded as the
 * reply is sent, before any answer or receipt about it can be read, with
 * the asker they were sent to — a child's reply to its supervisor's question
 * through `supervisorSend` too, its asker the supervisor (helper cancelb). A reply's loss reopens exactly its
 * question's (asker, id) pair, which then passes once more: as the client
 * reads the reply's `expired` receipt (`replyLost`; the broker writes that
 * receipt, from the reply's target — the asker — before it asks the question
 * again: MailDelivery.lost); or around its `cancel_message`. The broker
 * writes the question again ahead of that cancel's answer, or asks nothing
 * again (test/client/reply-lost-ask-again.test.ts), so the pair is reopened
 * as the cancel is written (`cancelWritten`) and closed again when the
 * broker's answer is read (`cancelEnded`), even after every caller stopped
 * waiting; a cancel its connection closed on unanswered leaves it reopened
 * (a possible duplicate, never a loss) — a copy of the question that comes
 * meanwhile passes once. Review revz Z2, revad AD1, revag AG1.
 * Why a pair stays open whatever its cancels do is kept per pair
 * (`sticky`), as it is when a cancel ends, not when it was written
 * (review revam AM1): a lost reply (`"lost"`), or a cancel of it the
 * broker may have carried out unanswered (dropped detached, or cut off by
 * a close: `cancelAbandoned`, `"abandoned"`). A cancel that reached no
 * broker (its frame taken back: `cancelWithdrawn`) closes the pair only
 * when no other cancel holds it and it has no such reason (review revaj
 * AJ1); a cancel's answer closes it unless a reply was lost — whether
 * the question asked again for that loss comes before or after the
 * cancel's answer nothing says, so it stays open (a duplicate at worst).
 * A copy that passes clears the reason. Each cancel written holds its pair
 * until it ends so (answered, withdrawn or abandoned): at most `capacity`
 * pairs are kept reopened beyond the held ones; past that the oldest not
 * held is let go and forgotten from the pairs received too, so its
 * question, asked again, passes as new — the bound costs at most a
 * duplicate (a redelivered copy of it passes), never a lost question
 * (review revaj AJ2, revam). The pair the confirmations last stopped at is
 * not forgotten so; should the stop be one forgotten so before it became
 * the stop, nothing is forgotten until it moves. PendingCancels bounds the
 * held ones.
 * A reply's loss read from its `expired` receipt (`replyLost`) reopens its
 * pair until a copy passes, also when the broker asks nothing again (the
 * ask was answered or past its deadline, its short-lived asker ended, or it
 * was withdrawn by a control this client has not read yet: a later
 * redelivery then passes once, a duplicate). Unlike a
 * cancel, whose answer comes behind any question it asks again, no frame
 * marks where a question asked again would have come by: it is written to
 * the live connection or kept for the next, and whether the ask's edge is
 * still open (its deadline on the broker's clock, the asker's withdrawal)
 * is the broker's to know. Closing the pair on any guess could drop a
 * question asked again, so it stays open (helper cancelb); a receipt that
 * said whether the question is asked again (a negotiated extension) would
 * make it exact.
 * A question its sender withdrew (a cancel or supersede of it read:
 * RecentControls, asked through `isWithdrawn`) is over, and the broker asks
 * it nothing again: a lost or cancelled reply does not reopen its pair, and
 * the withdrawal read closes one reopened before (`withdrawn`). A copy of it
 * read after that is a redelivery of the message passed on already (dropped),
 * and a message passed on "again" is always read before its pair's control —
 * so a NEW message under a reused id is never taken for an old withdrawn
 * question asked again, which kept the old cancel for it (review revbf BF2).
 * A reply addressed by name or id prefix names no asker: the asker is the
 * sender of the ask with that id this client read (`askers`), unless the
 * reply's exact `targetId`, or its `to` as the exact id of a sender of
 * that ask, says otherwise (review revaa AA1).
 * Reopening never takes a pair out of the order `forget` walks: it is kept
 * apart (`reopened`), so the message the confirmations stop at keeps its
 * place (review revaa AA3).
 * It also numbers the messages read (`nextRead`) and keeps, per pair, the
 * number of the last passed on, so a control marked with the number read
 * before it (`lastRead`) can be told from a newer message under its id
 * (`readSince`, review revbb BB2): a value in the map of pairs, no more.
 * A new message its sender sent under an id it used before, while the pair
 * is remembered, is dropped as a copy: the pair is all that is known of a
 * message. Its own `timestamp` does not tell a reuse from a copy for sure —
 * the broker keeps and stores it as sent, and this client's re-send writes
 * the same request, but a retry is the same message whatever its timestamp
 * (P46 leaves it out of the fingerprint), and the broker's notice of a
 * durable question (Questions.notify) is stamped with the question's
 * `createdAt`, which a memory-mode broker restarted takes anew as the child
 * asks again — so it changes nothing passed on; a drop
 * whose timestamp differs from the one passed on is counted (`reusedDrops`)
 * and told once per pair (`takeReused`) for the client to log: ids must be
 * unique per sender.
 * Owned by one `IntercomClient` and touched only by its synchronous code.
 */
import type { ConfirmBound } from "./ConfirmationPolicy.ts"
import type { InboundMessage } from "./events.ts"

const PAIR_SEPARATOR = "\u0001"
const pairOf = (senderId: string, messageId: string): string => `${senderId}${PAIR_SEPARATOR}${messageId}`

/**
 * The hard bound on the askers kept, per unit of `capacity`: an asker goes with its ask's pair, and `seen`
 * keeps every pair while confirmations are withheld, so this bounds only a consumer that never handles.
 */
const ASKERS_PER_CAPACITY = 64

/** What is kept of a pair in `seen`: of the last message passed on under it, its read number and `timestamp`. */
interface Seen {
  /** Its read number (`nextRead`): `readSince` compares it with a control's. */
  read: number
  /** Its own `timestamp` (its sender's); undefined when none was given to `firstTime`. */
  stamp: number | undefined
  /** A drop under the pair whose `timestamp` differed was told already (`takeReused`): once per pair. */
  told: boolean
}

/**
 * A message dropped as a copy of one passed on under its (sender, id), though its `timestamp` differs from that
 * one's: most likely a new message under a reused id, lost to the reader.
 */
export interface ReusedDrop {
  readonly senderId: string
  readonly messageId: string
  /** The `timestamp` of the message passed on under the pair. */
  readonly passed: number
  /** The `timestamp` of the one dropped. */
  readonly dropped: number
}

/** The warning a client logs for a `ReusedDrop`: which message was lost, and what its sender must do. */
export const describeReusedDrop = (drop: ReusedDrop): string =>
  `Intercom: dropped a message from session ${drop.senderId} under id ${JSON.stringify(drop.messageId)} as a copy ` +
  `of the one read before under that id, though its timestamp (${drop.dropped}) is not that one's (${drop.passed}): ` +
  `most likely a new message under a reused id, which this session never saw. Message ids must be unique per ` +
  `sender: the sender should give every new message a fresh id (a UUID). Told once per (sender, id); ` +
  `IntercomClient.status counts every such drop (reusedIdDrops).`

/** The question a reply of this client's answered: its id, and the sender it was taken to be from. */
interface Answered {
  readonly askId: string
  readonly asker: string
}

/** Forgets the oldest entry of an insertion-ordered set or map that one addition took past `capacity`. */
const trim = (entries: Set<string> | Map<string, unknown>, capacity: number): void => {
  if (entries.size > capacity) for (const oldest of entries.keys()) {
    entries.delete(oldest)
    break
  }
}

/**
 * Remembers the (sender, message id) pairs received since the message the
 * client's confirmations stop at, and at least the last `capacity` ones.
 */
export class RecentMessages {
  /** The pairs, in the order they were first received, each with what is kept of the last message passed on under it. */
  private readonly seen = new Map<string, Seen>()
  /** How many messages were dropped as copies though their `timestamp` differed from the one passed on. */
  private reused = 0
  /** The drops of `reused` not taken yet by `takeReused`, the first of each pair only; undefined while none. */
  private untold: Array<ReusedDrop> | undefined
  /** The read number of the last message read (`nextRead`): 0 before any. */
  private reads = 0
  private readonly capacity: number
  /** The message the pair in `boundPair` is of: computed once per bound, not per message. */
  private boundMessage: InboundMessage | undefined
  private boundPair = ""
  /** The question each recent reply this client sent answered, by reply id (the last `capacity`, oldest first). */
  private readonly replies = new Map<string, Answered>()
  /**
   * The sender of each ask read whose pair is still in `seen`, by its id (the last sender of that id): dropped
   * as its pair is forgotten (`forget`), and past `askersLimit` the oldest first.
   */
  private readonly askers = new Map<string, string>()
  private readonly askersLimit: number
  /**
   * Pairs in `seen` that pass once more: questions whose reply was lost, oldest first. At most `capacity` of
   * them, beyond the ones a cancel awaiting its answer holds (`holds`): those are never trimmed.
   */
  private readonly reopened = new Set<string>()
  /** The cancels written and not yet answered, withdrawn or abandoned, by reply id: the pair each holds, and how many. */
  private readonly cancels = new Map<string, { readonly pair: string; count: number }>()
  /** How many of those cancels hold each pair: a held pair stays reopened, untrimmed. */
  private readonly holds = new Map<string, number>()
  /**
   * Why a reopened pair must stay open whatever its cancels do (review revam AM1): `"lost"` — a reply's
   * `expired` receipt was read, and the question may be asked again at any time; `"abandoned"` — a cancel of it
   * was let go unanswered, and the broker may have carried it out. Kept per pair, not per cancel, so it is true
   * when a cancel ends, not when it was written. An entry only for a pair in `reopened`: cleared as a copy
   * passes, as the pair is trimmed, or as a cancel's answer closes it.
   */
  private readonly sticky = new Map<string, "lost" | "abandoned">()

  /** Whether the client's record of controls holds a withdrawal of the message it last read under (sender, id). */
  private readonly isWithdrawn: (senderId: string, messageId: string) => boolean

  constructor(capacity = 1024, isWithdrawn: (senderId: string, messageId: string) => boolean = () => false) {
    this.capacity = capacity
    this.askersLimit = capacity * ASKERS_PER_CAPACITY
    this.isWithdrawn = isWithdrawn
  }

  /**
   * Records the message: `"new"` when its pair is not known (a message
   * read for the first time — or one forgotten, past `capacity`); `"again"`
   * when it passes once more because its pair was reopened (a question
   * whose reply was lost or cancelled: the same message, asked again or
   * delivered again); false when it was seen already (a redelivery: drop
   * it). `bound` says how far the client may confirm what it read: called
   * only when a pair may be forgotten, and none from its message onward is.
   * `ask`: the message asks for a reply, and its sender is remembered as the
   * asker of its id. `timestamp`: the message's own; a drop whose timestamp
   * differs from the one passed on under the pair is counted (`reusedDrops`)
   * and told (`takeReused`), and still dropped (see the module header).
   */
  firstTime(
    senderId: string,
    messageId: string,
    bound: () => ConfirmBound,
    ask = false,
    read = this.reads,
    timestamp?: number
  ): "new" | "again" | false {
    const key = pairOf(senderId, messageId)
    const seen = this.seen
    const reopened = this.reopened
    const known = seen.get(key)
    // A question asked again after its reply was lost passes once, in its place in the order.
    if (known !== undefined) {
      if (reopened.size === 0 || !this.close(key)) {
        if (timestamp !== undefined && known.stamp !== undefined && timestamp !== known.stamp) {
          this.droppedReused(known, senderId, messageId, timestamp)
        }
        return false
      }
      known.read = read
      known.stamp = timestamp
      return "again"
    }
    seen.set(key, { read, stamp: timestamp, told: false })
    // A reopened pair already forgotten from `seen` (past `capacity`): its question, asked again, all the same.
    const again = reopened.size > 0 && this.close(key)
    if (ask) {
      this.askers.delete(messageId)
      this.askers.set(messageId, senderId)
      trim(this.askers, this.askersLimit)
    }
    if (seen.size > this.capacity) this.forget(bound())
    return again ? "again" : "new"
  }

  /**
   * Numbers the next message read (every one, passed on or not: gaps are harmless): increasing, so a message
   * read after a control has a higher number than the control's mark (`lastRead` as it was read).
   */
  nextRead(): number {
    return ++this.reads
  }

  /** The number of the last message read: a control read now is read after every message numbered up to it. */
  get lastRead(): number {
    return this.reads
  }

  /**
   * How many messages were dropped as copies of one passed on under their (sender, id) though their own
   * `timestamp` differed from that one's: most likely new messages under reused ids, which the reader lost.
   */
  get reusedDrops(): number {
    return this.reused
  }

  /**
   * The drops `reusedDrops` counted since the last call, the first under each pair only (a pair is told once
   * while it is remembered); undefined when there is none, so the caller's common path allocates nothing.
   */
  takeReused(): ReadonlyArray<ReusedDrop> | undefined {
    const untold = this.untold
    this.untold = undefined
    return untold
  }

  /**
   * Whether a message `senderId` sent under `messageId` was passed on after `mark` (a control's `lastRead`): that
   * control is then an earlier message's (a control never comes before its message; review revbb BB2). False
   * when no such message is known: none came, or its pair was forgotten (past `capacity`).
   */
  readSince(senderId: string, messageId: string, mark: number): boolean {
    return (this.seen.get(pairOf(senderId, messageId))?.read ?? 0) > mark
  }

  /**
   * This client sends the reply `replyId` to the ask `askId`, addressed
   * `to` (an id, name or id prefix the broker resolves), or to `targetId`
   * exactly: should the reply be lost, the ask may come again. Called
   * before the reply is written, so a receipt read ahead of its
   * acknowledgement finds it. Its asker is `targetId`; else `to` when a
   * message `askId` from that exact id was read; else the sender of the
   * last ask `askId` read; else `to`.
   */
  replied(replyId: string, askId: string, to: string, targetId: string | undefined): void {
    const asker = targetId ??
      (this.seen.has(pairOf(to, askId)) ? to : this.askers.get(askId) ?? to)
    const replies = this.replies
    replies.delete(replyId)
    replies.set(replyId, { askId, asker })
    trim(replies, this.capacity)
  }

  /**
   * This client's reply `replyId` was lost before its asker read it (an
   * `expired` receipt, from `targetId`: the session the broker routed the
   * reply to, whose question it answered): that question passes once more.
   * Nothing for an id not known as a reply.
   */
  replyLost(replyId: string, targetId: string): void {
    const answered = this.replies.get(replyId)
    if (answered === undefined) return
    this.replies.delete(replyId)
    // A withdrawn question is asked nothing again (review revbf BF2): a copy that comes is a redelivery.
    if (this.isWithdrawn(targetId, answered.askId)) return
    const pair = pairOf(targetId, answered.askId)
    // Set before reopening, so a pair the bound trims at once takes its entry with it.
    this.sticky.set(pair, "lost")
    this.reopen(pair)
  }

  /**
   * This client writes a `cancel_message` of its reply `replyId`: the
   * question it answered passes once more from now, since the broker,
   * should it withdraw the reply, writes the question again ahead of the
   * cancel's answer. The cancel holds the pair open (untrimmed) until it
   * ends: `cancelEnded`, `cancelWithdrawn` or `cancelAbandoned`, one of
   * them once per call of this. Nothing for an id not known as a reply.
   * A second cancel of an id whose first still holds holds the same pair,
   * even if the reply was recorded again since with another asker: each
   * release then frees the pair that was held (review revam AM3).
   */
  cancelWritten(replyId: string): void {
    const answered = this.replies.get(replyId)
    if (answered === undefined) return
    const held = this.cancels.get(replyId)
    const pair = held?.pair ?? pairOf(answered.asker, answered.askId)
    if (held === undefined) this.cancels.set(replyId, { pair, count: 1 })
    else held.count += 1
    this.holds.set(pair, (this.holds.get(pair) ?? 0) + 1)
    // Held all the same, so its end releases what it took; but a withdrawn question is asked nothing again (BF2).
    if (!this.isWithdrawn(answered.asker, answered.askId)) this.reopen(pair)
  }

  /**
   * Its sender's cancel or supersede of the message `senderId` sent under `messageId` was read (passed on
   * once): the broker asks a withdrawn question nothing again — not for a lost reply, not for a cancelled one —
   * so a pair a lost or cancelled reply reopened is closed, and a copy read after this is a redelivery of the
   * message passed on already: dropped (review revbf BF2). A cancel of a reply that still holds the pair keeps
   * holding it (its end releases the hold) but keeps it reopened no more.
   */
  withdrawn(senderId: string, messageId: string): void {
    if (this.reopened.size > 0) this.close(pairOf(senderId, messageId))
  }

  /**
   * The broker's answer to the cancel of `replyId` was read: its question
   * is a repeat again from now, unless another cancel awaiting its answer
   * still holds it. `cancelled`: the broker withdrew the reply (the
   * question it asked again came ahead of this answer, or it asked
   * nothing: the ask was over, or a first cancel withdrew the reply
   * already), and the reply is forgotten. Otherwise the broker refused it:
   * the reply stands. A pair a lost reply reopened stays open: its
   * question may still be asked again after this answer (a duplicate at
   * worst, never a loss; review revam AM1).
   */
  cancelEnded(replyId: string, cancelled: boolean): void {
    const pair = this.release(replyId)
    if (cancelled) this.replies.delete(replyId)
    // A question the broker asks again for a cancel came ahead of this answer, or does not come.
    if (pair !== undefined && !this.holds.has(pair) && this.sticky.get(pair) !== "lost") this.close(pair)
  }

  /**
   * The cancel of `replyId` reached no broker (its frame was taken back,
   * or never queued): the pair closes unless another cancel holds it, or
   * something kept it open for good — a cancel of it the broker may have
   * carried out and never answered, or a lost reply, before or while this
   * cancel waited: the question may still be asked again (review revaj
   * AJ1, revam AM1).
   */
  cancelWithdrawn(replyId: string): void {
    const pair = this.release(replyId)
    if (pair === undefined) return
    if (!this.holds.has(pair) && !this.sticky.has(pair)) this.reopened.delete(pair)
    else this.trimReopened()
  }

  /**
   * The cancel of `replyId` will get no answer read (its connection
   * closed first, or it was let go detached past PendingCancels' bound):
   * the broker may have carried it out, so its pair stays reopened — now
   * among those the bound trims, oldest first.
   */
  cancelAbandoned(replyId: string): void {
    const pair = this.release(replyId)
    if (pair === undefined) return
    // A lost reply's reason is the stronger: a cancel's answer does not close it.
    if (this.reopened.has(pair) && this.sticky.get(pair) !== "lost") this.sticky.set(pair, "abandoned")
    this.trimReopened()
  }

  /**
   * One cancel of `replyId` holds its pair no more: the pair, or undefined when no cancel of it held one.
   * A pair with no hold counted (`cancels` and `holds` disagreeing: a bug, review revam AM3) is not let go
   * below zero: undefined, so the caller closes nothing — the safe side, a possible duplicate, never a
   * question lost (a throw here would end the connection's reader).
   */
  private release(replyId: string): string | undefined {
    const held = this.cancels.get(replyId)
    if (held === undefined) return undefined
    if (--held.count === 0) this.cancels.delete(replyId)
    const pair = held.pair
    const holds = this.holds.get(pair)
    if (holds === undefined) return undefined
    if (holds === 1) this.holds.delete(pair)
    else this.holds.set(pair, holds - 1)
    return pair
  }

  /** A message dropped under a pair whose last passed-on message had another `timestamp`: counted, told once per pair. */
  private droppedReused(known: Seen, senderId: string, messageId: string, timestamp: number): void {
    this.reused += 1
    if (known.told || known.stamp === undefined) return
    known.told = true
    const drop: ReusedDrop = { senderId, messageId, passed: known.stamp, dropped: timestamp }
    if (this.untold === undefined) this.untold = [drop]
    else this.untold.push(drop)
  }

  /** `pair`'s message is a repeat again: true when it was reopened. */
  private close(pair: string): boolean {
    if (!this.reopened.delete(pair)) return false
    this.sticky.delete(pair)
    return true
  }

  /** Lets `pair`'s message pass once more: kept apart from the order of `seen`, newest last. */
  private reopen(pair: string): void {
    const reopened = this.reopened
    reopened.delete(pair)
    reopened.add(pair)
    this.trimReopened()
  }

  /**
   * Past `capacity` reopened pairs, lets go the oldest that no cancel awaiting its answer holds (review revaj
   * AJ2): a held pair stays however many there are — PendingCancels bounds the cancels that hold them. A pair
   * let go is forgotten from `seen` too, so its question, asked again, passes as new (a copy behind it is a
   * repeat): the bound costs at most a duplicate (a redelivery of it), never a lost question — except the
   * pair `forget` last stopped at, kept so the confirmations' stop keeps its place (review revaa AA3).
   */
  private trimReopened(): void {
    const reopened = this.reopened
    if (reopened.size <= this.capacity) return
    const holds = this.holds
    for (const pair of reopened) {
      if (holds.has(pair)) continue
      reopened.delete(pair)
      this.sticky.delete(pair)
      if (pair !== this.boundPair && this.seen.delete(pair)) this.forgetAsker(pair)
      if (reopened.size <= this.capacity) return
    }
  }

  /** A pair forgotten from `seen`: an ask's id names its sender as asker no more, unless a later ask with that id came from another sender. */
  private forgetAsker(pair: string): void {
    const askers = this.askers
    if (askers.size === 0) return
    const cut = pair.indexOf(PAIR_SEPARATOR)
    const messageId = pair.slice(cut + 1)
    if (askers.get(messageId) === pair.slice(0, cut)) askers.delete(messageId)
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
    // A stop not in `seen` (trimmed as a reopened pair before it became the stop) is nowhere in the order: keep
    // everything rather than walk past the messages after it (the safe side of review revaa AA3).
    if (stop !== undefined && !seen.has(stop)) return
    for (const oldest of seen.keys()) {
      if (seen.size <= this.capacity || oldest === stop) return
      seen.delete(oldest)
      this.forgetAsker(oldest)
    }
  }
}
