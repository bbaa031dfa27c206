/**
 * Output and backpressure: the owner of a `Peer`'s output state (`outbox`,
 * `parked`), written here and, at a connection's end or a takeover, by
 * its close side (OutputEnd.ts).
 *
 * Routing never writes to a socket; it queues. `enqueue` offers to the
 * recipient's bounded outbox — bounded in frames and in characters of frame
 * text, each outbox and all of them together (an empty outbox always takes
 * one frame), so sessions that never read cannot make the broker hold
 * gigabytes —
 * and, once any offer of the current batch finds an outbox full, parks that
 * and every later item of the batch (order is kept). After the batch, the calling connection actor takes the parked items
 * (`parkFor`) and offers them one by one, waiting for room, before it reads
 * its socket again: a fast sender is slowed, nothing accepted is dropped.
 * A message forced past the bounds (`forceEnqueue`: requeued, taken back, a
 * closing reader's parked output) for a recipient whose own parked output
 * (its mailbox flush) holds older mail of the same sender is parked behind
 * that output (`parkBehind`, `behindOwnParked`), so it cannot overtake it.
 * One forced at a connection that no longer holds its session (taken over,
 * or unregistered, since it was meant for it: a closing reader's parked
 * output) is taken back at once, as `place` refuses it, to where the session
 * is now.
 * A live sender's new message, routed (`enqueue`) or offered by its drainer
 * (`offerParked`), waits while the recipient's own parked list holds older mail of
 * its sender for it (`Peer.parkedMail`, counted by sender here: no scan, since
 * that list also holds what the recipient's own sends parked for anyone):
 * routed, it is parked with the
 * batch as at a full outbox (the sender is slowed as usual); offered, the
 * drainer waits until that mail is offered — unless its own reader's list
 * holds mail for that reader, when the message is parked at the end of the
 * recipient's list: a guard, so a drainer only waits on one that waits on
 * writers alone, and no ring of drainers can wait for ever (architecture.md,
 * step 7). A control frame about a message (a cancel, a supersede:
 * ControlFrame.ts) waits, parks and is kept with a hold like its sender's
 * mail, so it never overtakes the message it is about. Only a sender with
 * mail there waits so: another sender's mail
 * does not (it would be held back by a flush that itself waits on some
 * other session that does not read), nor do answers, receipts and notices.
 * A returned sender's mail from since its return (and a control frame it
 * sent since, by `ControlFrame.senderSince`) waits the same way for a
 * recipient that withholds its departure and return until its old parked
 * output is out (`Peer.returnWaits`, WithheldDepartures.ts's; `waitsForReturn`);
 * forced (its connection closed, or taken back from one taken over), or
 * refused by a recipient whose connection closed, or whose session
 * unregistered, while it waited (`returnWaits`, or `leftReturnWaits` when
 * the leave ended them), it is parked behind that old output, in the old
 * connection's parked list (`parkBehindReturn`).
 *
 * An outbox is a plain array. Its writer (PeerWriter.ts) is not woken per
 * item: the outboxes a batch of routing touched are flushed once, when the
 * batch ends (`endBatch`, `wakeTouched`); output queued outside a reader's
 * batch (timers, the membership notifier, a drainer's offer) asks the broker's
 * output fiber to flush (`requestFlush`), so nothing queued waits for the
 * next frame to arrive.
 *
 * The answer to an `ask-expiry-v1` client's settling `list` is held while
 * a reply to it the broker accepted is still parked in another reader's
 * list (`enqueueSettleAnswer`; the slot and its release are
 * ParkedReplies.ts's, checked where such a reply leaves a parked list), so
 * the asker's round trip at its deadline cannot overtake it; the asker's
 * reader reads on meanwhile.
 *
 * Output with no reader to park it with — a replace-staged message falling
 * due (ReplaceStaging.ts) — is neither parked (it would hold back whichever
 * reader's batch comes next) nor forced past the bounds (a recipient that
 * never reads would grow without limit): its owner asks `hasRoom` first and
 * keeps it while there is none, and is told when the recipient's writer
 * made room (`room`, from `roomMade`).
 *
 * The writer side (`takeForWrite`, the room a write makes) is
 * OutputWrites.ts's, reached as `writes`.
 *
 * A departed sender's mail in a recipient's own parked list holds its
 * `session_left` from that recipient until the last of it is offered
 * (the per-sender counts of the readers with parked output are here; their
 * look-up, `parkedMailOf`, is ParkedDepartures.ts's; the holds' records and
 * their counting down are DepartureHolds.ts's; WithheldDepartures.ts
 * withholds it).
 *
 * Split by concern (2026-12-05), each part reached through a field of this
 * class: a connection's end and a takeover's hand-over (`end`,
 * OutputEnd.ts), the takeovers' custody holds (`holds`, CustodyHold.ts,
 * with `CustodyHolds.holdOf`, one field test per message while none is held),
 * what the withheld departures ask of parked output (`departureSide`,
 * ParkedDepartures.ts), the settling `list` answers held behind parked
 * replies (`replies`, ParkedReplies.ts), the tests of what an item is (OutboundItems.ts)
 * and (2026-12-06) the outbox budgets (`budgets`, OutboxBudgets.ts) and the
 * per-sender counts of a reader's own parked mail with the tests of what
 * waits behind it (ParkedOrder.ts, plain functions), forced output and its
 * parking behind older mail of its sender (`forced`, ForcedOutput.ts;
 * `forceEnqueue` hands on to it) and the writer's side (`writes`,
 * OutputWrites.ts).
 * This class keeps the parked lists' bookkeeping and the budgets; the parts
 * reach what they change of it through closures it hands them once
 * (`OutputSide`, the wake-ups, the batch's parked list).
 *
 * Size: about 930 lines, past the ~400 guideline: what is left is the
 * per-frame path (`enqueue`, `place`, `parkFor`, `takeForWrite`, the
 * flushes) and the slow paths that share its state in the same synchronous
 * steps — forcing past the bounds with a sender's order kept (`forceEnqueue`,
 * `parkBehind`, `parkBehindReturn`, `behindOwnParked`, `parkOwn`, also
 * reached from `place`) and the per-sender counts of a reader's own parked
 * mail — kept here because `place` and `parkFor`, on the per-frame path,
 * use them directly and would otherwise call through another object.
 * Already apart besides the above: the write batch (WriteBatch.ts),
 * the placement of a returned sender's departure (Rejoins.ts) and the
 * departures held behind a recipient's own parked output (DepartureHolds.ts).
 * What waits for room without a reader (due replace messages) is
 * ReplaceStaging.ts's; this module only answers `hasRoom` and calls `room`
 * when a writer makes some.
 */
import { Deferred, Effect } from "effect"
import { END_OF_OUTPUT, FEED_TICK, type OutboundItem, type Peer, type Returnable } from "./Peer.ts"
import type { ControlFrame } from "./ControlFrame.ts"
import { CustodyHolds } from "./CustodyHold.ts"
import { DepartureHolds } from "./DepartureHolds.ts"
import { charsOf, isControl, isMessage, isSenderOrdered, isStranded } from "./OutboundItems.ts"
import { isShut, type OutboxBudget, OutboxBudgets } from "./OutboxBudgets.ts"
import { ForcedOutput } from "./ForcedOutput.ts"
import { OutputEnd } from "./OutputEnd.ts"
import { ParkedDepartures } from "./ParkedDepartures.ts"
import { countParkedMail, returnWaitOf, uncountParkedMail, waitsBehindParked, waitsForReturn, wakeWaiters } from "./ParkedOrder.ts"
import { ParkedReplies } from "./ParkedReplies.ts"
import { type FeedSource, OutputWrites } from "./OutputWrites.ts"

/** Slots the list of touched outboxes keeps between flushes; past this it is let go. */
const KEEP_TOUCHED_SLOTS = 1_024

/** An answer to `health` or `list` (frames built by encode.ts, so the prefix is exact). */
const isReadOnlyAnswer = (frame: string): boolean =>
  frame.startsWith(`{"type":"health_ok"`) || frame.startsWith(`{"type":"sessions"`)

/** The output concern: queueing, parking and forcing output, the writer's side, and the parts split from it. */
export class Output {
  /** Output of the batch being handled that did not fit its outbox yet. */
  private parked: Array<readonly [Peer, OutboundItem]> = []
  /** Readers whose own parked list (`Peer.parked`) may hold output: from `parkFor` until it is empty. */
  private readonly parkedReaders = new Set<Peer>()
  /**
   * Departures withheld from a recipient until the departed sender's mail in
   * its own parked list is offered (`holdBehindParked`).
   */
  private readonly departureHolds: DepartureHolds
  /** The takeovers' custody holds (CustodyHold.ts): taken at a takeover, ended at the old connection's close. */
  readonly holds: CustodyHolds
  /** The close and takeover side: a connection's output at its end, and a takeover's hand-over (OutputEnd.ts). */
  readonly end: OutputEnd
  /** What the withheld departures ask of parked output (ParkedDepartures.ts; WithheldDepartures' `ParkedOutput`). */
  readonly departureSide: ParkedDepartures
  /** The settling `list` answers held behind a reply to their asker parked elsewhere (ParkedReplies.ts). */
  readonly replies: ParkedReplies
  /** Output forced past the outbox bounds, kept behind its sender's older parked mail (ForcedOutput.ts). */
  private readonly forced: ForcedOutput
  /** The writer's side: a write taken from an outbox, and the room it makes (OutputWrites.ts). */
  readonly writes: OutputWrites
  /**
   * Outboxes that got output in this batch, in order; their writers are
   * woken once at its end. Entries `[touchedHead, touchedCount)` are pending
   * (`Peer.touched` marks them): a plain array reused from batch to batch,
   * where a `Set` emptied once per batch allocated a new table each time.
   */
  private touched: Array<Peer | undefined> = []
  private touchedHead = 0
  private touchedCount = 0
  private readonly takeBack: (item: Returnable | ControlFrame) => boolean
  private readonly feed: FeedSource
  /** The outboxes' budgets and the characters charged against them (OutboxBudgets.ts). */
  private readonly budgets: OutboxBudgets
  private readonly requestFlush: () => void
  /** A reader's batch is being handled: its reader flushes the touched outboxes at its end. */
  private batching = false

  /**
   * @param takeBack takes output that can no longer be written where it was queued (MailDelivery): mail, notices, control frames;
   *   true when it went to its session's live connection.
   * @param feed the membership frames a recipient has not seen (Membership).
   * @param budget frames and characters of frame text outboxes hold before senders are slowed.
   * @param log the broker's log.
   * @param requestFlush asks the broker's output fiber to call `wakeTouched` soon (output queued outside a batch).
   * @param room `peer`'s writer took its outbox: output kept back for want of room may be queued now (ReplaceStaging.roomFor).
   */
  constructor(
    takeBack: (item: Returnable | ControlFrame) => boolean,
    feed: FeedSource,
    budget: OutboxBudget,
    log: (level: "info" | "warning", message: string) => void,
    requestFlush: () => void,
    room: (peer: Peer) => void
  ) {
    this.takeBack = takeBack
    this.feed = feed
    this.departureHolds = new DepartureHolds((recipient, senderId) => feed.releaseDeparture(recipient, senderId))
    this.budgets = new OutboxBudgets(budget)
    this.requestFlush = requestFlush
    this.holds = new CustodyHolds(wakeWaiters, (recipient, senderId) => feed.releaseBehindCustody(recipient, senderId))
    this.departureSide = new ParkedDepartures(
      () => this.parked,
      this.parkedReaders,
      this.departureHolds,
      this.holds,
      wakeWaiters
    )
    this.writes = new OutputWrites({ feed, budgets: this.budgets, takeBack, log, room })
    this.forced = new ForcedOutput({
      takeBack,
      undeliverable: (item) => this.undeliverable(item),
      touch: (peer) => this.touch(peer),
      batchParked: () => this.parked,
      parkedReaders: this.parkedReaders,
      budgets: this.budgets,
      holds: this.holds,
      departureHolds: this.departureHolds
    })
    this.replies = new ParkedReplies(this.parkedReaders, () => this.parked, {
      forceEnqueue: (asker, answer) => this.forceEnqueue(asker, answer),
      parkAt: (asker, index, answer) => void asker.parked.splice(index, 0, [asker, answer])
    })
    this.end = new OutputEnd({
      charge: (peer, chars) => this.budgets.charge(peer, chars),
      takeBack,
      roomMade: (peer) => this.writes.roomMade(peer),
      forceEnqueue: (recipient, item) => this.forceEnqueue(recipient, item),
      undeliverable: (item) => this.undeliverable(item),
      unpark: (reader) => this.parkedReaders.delete(reader),
      parkedOut: (reader) => feed.parkedOut(reader),
      departureHolds: this.departureHolds,
      holds: this.holds,
      replies: this.replies
    })
  }

  /** Characters of frame text queued in every outbox together (stats). */
  get queuedChars(): number {
    return this.budgets.queuedChars
  }

  /**
   * Times a connection's reader had output parked and had to wait for room
   * before reading on (backpressure), since the broker started (stats).
   */
  backpressureWaits = 0

  /**
   * How often the machinery for a recipient's own parked mail ran since the
   * broker started (stats; the simulation counts them to show its workloads
   * reach it): batches that parked mail for their own reader (a
   * registration's mailbox flush that did not fit), messages parked at the
   * end of a recipient's own list (`parkOwn`), drainer offers that waited
   * behind it (`offerParked`); the departures held behind it are counted by
   * `departureSide` (`ParkedDepartures.departuresHeld`). Counted on those slow
   * paths only, never per routed frame.
   */
  ownParks = 0
  waitsBehindOwn = 0

  /** Messages parked at the end of a recipient's own list (ForcedOutput.parkOwn; stats, slow path only). */
  get parkedBehindOwn(): number {
    return this.forced.parkedBehindOwn
  }

  /** `peer`'s outbox got output: its writer is asked to flush at the end of the batch (or soon, outside one). */
  private touch(peer: Peer): void {
    if (peer.touched) return
    if (this.touchedCount === this.touchedHead && !this.batching) this.requestFlush()
    peer.touched = true
    this.touched[this.touchedCount++] = peer
  }

  /** Whether a reader's batch is being handled now: output queued into a full outbox is parked with it. */
  get inBatch(): boolean {
    return this.batching
  }

  /**
   * Whether `item` fits `peer`'s outbox now, within its frames, its
   * characters and all outboxes' characters together (an empty outbox takes
   * one frame); false once the outbox is shut. What fits may be queued with
   * `forceEnqueue` without going past any bound.
   */
  hasRoom(peer: Peer, item: OutboundItem): boolean {
    return this.budgets.hasRoom(peer, item)
  }

  /**
   * Queues `item` for `peer`, parking it (and the rest of the batch) if the
   * outbox is full, or if it is a message whose sender has older mail for
   * `peer` in `peer`'s own parked list (`Peer.parkedMail`): it must not
   * overtake that mail.
   */
  enqueue(peer: Peer, item: OutboundItem): void {
    if (isShut(peer)) return this.undeliverable(item)
    const chars = charsOf(item)
    const budgets = this.budgets
    if (
      this.parked.length > 0 || budgets.full(peer) || budgets.overOwn(peer, chars) ||
      budgets.overTotal(peer, chars) || waitsBehindParked(peer, item) || waitsForReturn(peer, item, undefined) ||
      this.holds.holdOf(peer, item) !== undefined
    ) {
      this.parked.push([peer, item])
    } else {
      budgets.charge(peer, chars)
      peer.outbox.push(item)
      this.touch(peer)
    }
  }

  /**
   * `ask-expiry-v1`: queues `answer`, the `sessions` answer to a settling
   * `list` from `peer` (a client granted the extension, `settle: true`), as
   * `enqueue` does — unless a reply to `peer` that the broker accepted is
   * still parked in another reader's list (behind that sender's mail to a
   * full outbox): then the answer alone is held, and queued once no such
   * reply is parked (ParkedReplies.ts). The asker's
   * round trip at its own deadline is this `list` (Ask.ts): answered first,
   * it would end the wait in ReplyTimeout although the reply is on its way.
   */
  enqueueSettleAnswer(peer: Peer, answer: string): void {
    if (!this.replies.hold(peer, answer)) this.enqueue(peer, answer)
  }

  /**
   * Membership: a FEED_TICK for `peer`'s writer, unless its outbox is full
   * (false: its writer is busy, and collects the feed before writing anyway).
   */
  tick(peer: Peer): boolean {
    if (isShut(peer) || this.budgets.full(peer)) return false
    peer.outbox.push(FEED_TICK)
    this.touch(peer)
    return true
  }

  /**
   * Offers `entry`, the oldest item `reader` parked (`nextParked`), to its
   * recipient, waiting for room in frames and in characters. The item leaves
   * the parked list in the same synchronous step that accepts it (or refuses
   * it: its recipient closed, or no longer holds its session), before the
   * recipient's writer is told to flush, so nothing ever sees it both queued
   * and still parked — a takeover's `handOver` takes parked items back, and
   * would send one the old socket already wrote a second time. Done at once
   * when `entry` is no longer the oldest (a hand-over took it back while this
   * waited). The caller is a drainer fiber, outside any batch. A message for
   * another recipient whose own parked list holds older mail of its sender
   * for it (`Peer.parkedMail`) waits until that is offered — or, when
   * `reader`'s own list holds mail for `reader` too, is parked at the end of
   * the recipient's list (accepted), so two drainers never wait on each other.
   */
  offerParked(reader: Peer, entry: readonly [Peer, OutboundItem]): Effect.Effect<void> {
    return Effect.suspend(() => {
      if (reader.parked[0] !== entry) return Effect.void
      const recipient = entry[0]
      const placed = this.place(reader, recipient, entry[1])
      if (typeof placed !== "string") return Effect.andThen(Deferred.await(placed), this.offerParked(reader, entry))
      this.parkedOffered(reader, entry, placed !== "refused")
      if (placed === "queued") recipient.writer.flush()
      return Effect.void
    })
  }

  /**
   * One try of `offerParked`: the item queued in the recipient's outbox,
   * parked at the end of its own list, refused, or a wait to retry after.
   */
  private place(reader: Peer, recipient: Peer, item: OutboundItem): "queued" | "parked" | "refused" | Deferred.Deferred<void> {
    // Held behind the custody of the connection the recipient took its session over from (CustodyHold.ts):
    // it waits for that close; refused meanwhile (the recipient closed or left), it is kept with the hold,
    // to come back after that custody.
    const hold = this.holds.holdOf(recipient, item)
    if (hold !== undefined) {
      // The recipient's own parked output (its mailbox's flush, output handed over) is kept with the hold
      // too: its drainer is the one that lets the recipient read, and must not wait for another's close.
      // (`parkFor` keeps it at once; here only what was parked before the recipient took the hold.)
      if (isShut(recipient) || isStranded(item, recipient) || reader === recipient) {
        this.holds.keep(hold, item)
        return "parked"
      }
      this.holds.counts.waits++
      const turn = Deferred.makeUnsafe<void>()
      ;(recipient.roomWaiters ??= []).push(turn)
      return turn
    }
    // Mail for a session the recipient no longer holds (taken over while this waited) is refused
    // here, so its sender takes it back to the new holder now, ahead of the sender's later mail.
    if (isShut(recipient) || isStranded(item, recipient)) {
      // A returned sender's mail from since its return, for a recipient that closed while it withheld
      // the return: parked behind the old output it waited for, it is refused after that output, so
      // it reaches the mailbox after it (its closed connection kept the waits, WithheldDepartures.left).
      // Likewise for a recipient whose session unregistered while it withheld the return: woken by its
      // hand-back (Custody.handBack, before the leave) its waits still stand; woken by the leave, they ended
      // there (the connection may register again), but this message waited on one (`leftReturnWaits`).
      if (isSenderOrdered(item)) {
        const wait = returnWaitOf(recipient.returnWaits ?? recipient.leftReturnWaits, item)
        if (wait !== undefined && wait.reader !== reader && this.forced.parkBehindReturn(recipient, item, wait)) {
          return "parked"
        }
      }
      return "refused"
    }
    // A control frame about a message waits behind its sender's mail there the same way (ControlFrame.ts).
    if (recipient !== reader && waitsBehindParked(recipient, item) && isSenderOrdered(item)) {
      // (A closing recipient's list keeps its own output, no drainer: parked there, this is taken back
      // after it at the close. An empty list with a count is one with none: this waits for the shut.)
      if (reader.parkedMail !== undefined && recipient.parked.length > 0) {
        this.forced.parkOwn(recipient, item)
        return "parked"
      }
      // Woken when the recipient's writer makes room, and when the last of a sender's mail there is offered.
      this.waitsBehindOwn++
      const turn = Deferred.makeUnsafe<void>()
      ;(recipient.roomWaiters ??= []).push(turn)
      return turn
    }
    if (waitsForReturn(recipient, item, reader)) {
      // Woken when the sender's departure and join are owed to the recipient (Membership, `returned`).
      const turn = Deferred.makeUnsafe<void>()
      ;(recipient.roomWaiters ??= []).push(turn)
      return turn
    }
    const chars = charsOf(item)
    const budgets = this.budgets
    if (budgets.full(recipient) || budgets.overOwn(recipient, chars)) {
      const room = Deferred.makeUnsafe<void>()
      ;(recipient.roomWaiters ??= []).push(room)
      return room
    }
    if (budgets.overTotal(recipient, chars)) return budgets.waitForTotal()
    budgets.charge(recipient, chars)
    recipient.outbox.push(item)
    return "queued"
  }

  /** A reader starts handling a batch: the outboxes it touches are flushed at its end, not before. */
  startBatch(): void {
    this.batching = true
  }

  /** The reader's batch was handled: its output is written now (hot-path.md B7). */
  endBatch(): void {
    this.batching = false
    this.wakeTouched()
  }

  /**
   * Flushes every outbox that got output since the last flush. A writer's
   * flush may queue more (for another connection, or its own): an outbox
   * touched again meanwhile is flushed again in the same pass.
   */
  wakeTouched(): void {
    const touched = this.touched
    while (this.touchedHead < this.touchedCount) {
      const at = this.touchedHead++
      const peer = touched[at]
      touched[at] = undefined
      if (peer === undefined) continue
      peer.touched = false
      peer.writer.flush()
    }
    this.touchedHead = this.touchedCount = 0
    // A wake of thousands (the membership notifier) does not keep its slots.
    if (touched.length > KEEP_TOUCHED_SLOTS) this.touched = []
  }

  /**
   * Moves this batch's parked output to the reader's own list; true when there
   * is some, and the reader must offer it (waiting for room) before reading on.
   * Its messages for itself that its custody hold covers are kept with the
   * hold instead (`CustodyHold.items`, in order), not parked.
   */
  parkFor(reader: Peer): boolean {
    if (this.parked.length === 0) return false
    // Its mail for itself (a mailbox flush) is counted: new mail for it waits behind it (`Peer.parkedMail`).
    // What of it a takeover's hold covers is kept with the hold at once, not parked (CustodyHold.ts): parked,
    // it would join the hold only when the drainer offers it, and the old close (its custody forced behind
    // it) or a held sender's newer mail (kept with the hold) could come first.
    const parked = this.parked
    this.parked = []
    const holds = reader.custodyHolds > 0 ? this.holds : undefined
    let own = false
    let kept = 0
    for (let i = 0; i < parked.length; i++) {
      const entry = parked[i]!
      const item = entry[1]
      if (entry[0] === reader && isSenderOrdered(item)) {
        const hold = holds?.holdOf(reader, item)
        if (hold !== undefined) {
          this.holds.keep(hold, item)
          continue
        }
        if (isMessage(item)) {
          countParkedMail(reader, item.mail.senderKey)
          own = true
        }
      }
      parked[kept++] = entry
    }
    parked.length = kept
    if (kept === 0) return false
    if (own) this.ownParks++
    reader.parked = reader.parked.length === 0 ? parked : [...reader.parked, ...parked]
    this.parkedReaders.add(reader)
    this.backpressureWaits++
    return true
  }

  /**
   * Whether an answer to a read-only request (`health_ok`, `sessions`) is
   * among `reader`'s own parked output (slow path: a scan). While one is, no
   * later such answer may overtake it.
   */
  parksAnswerFor(reader: Peer): boolean {
    for (const [to, item] of reader.parked) {
      if (to === reader && typeof item === "string" && isReadOnlyAnswer(item)) return true
    }
    return false
  }

  /** The reader's oldest parked item, or undefined when all of it fitted. */
  nextParked(reader: Peer): readonly [Peer, OutboundItem] | undefined {
    return reader.parked[0]
  }

  /**
   * The oldest parked item, `entry`, was offered (`offerParked`): accepted,
   * or refused because its recipient closed meanwhile. Nothing when `entry`
   * is no longer the oldest.
   */
  private parkedOffered(reader: Peer, entry: readonly [Peer, OutboundItem], accepted: boolean): void {
    if (reader.parked[0] !== entry) return
    const first = reader.parked.shift()
    const own = first !== undefined && first[0] === reader && isMessage(first[1]) ? first[1] : undefined
    if (own !== undefined && !this.departureHolds.isEmpty) this.departureHolds.offered(reader, own)
    if (first !== undefined && !accepted) this.undeliverable(first[1])
    if (reader.parked.length === 0) {
      this.parkedReaders.delete(reader)
      this.feed.parkedOut(reader)
    }
    // `ask-expiry-v1`: the last reply to a held asker's session left (queued, parked or refused and taken back): its answer follows it.
    if (first !== undefined && this.replies.holding && first[0] !== reader) this.replies.offered(first[1])
    // Last: the count's last one wakes the senders waiting behind it, and a woken drainer runs at once
    // (Deferred.doneUnsafe), so the rest of this bookkeeping is done before it looks.
    if (own !== undefined) uncountParkedMail(reader, own.mail.senderKey)
  }

  /**
   * Queues `item` for `recipient` even past its outbox's capacity, after what
   * it already holds, keeping it behind older mail of its sender parked
   * elsewhere, or taking it back when `recipient` no longer holds its
   * session (ForcedOutput.ts).
   */
  forceEnqueue(recipient: Peer, item: OutboundItem): void {
    this.forced.enqueue(recipient, item)
  }

  /** `peer`'s connection ends: END_OF_OUTPUT after everything queued (its writer ends the connection there). */
  endOutput(peer: Peer): void {
    peer.outbox.push(END_OF_OUTPUT)
  }

  /**
   * An item that can no longer reach its connection: mail goes back to the
   * mailbox, a notice is owed again, a control frame goes where its session
   * is now (ControlFrame.ts).
   */
  undeliverable(item: OutboundItem): void {
    if (typeof item === "object" && ("frame" in item || isControl(item))) this.takeBack(item)
  }
}
