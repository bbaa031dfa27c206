/**
 * Size: about 540 lines, past the guideline: one concept — the batch
 * being handled, its parking and its end-of-batch wake of writers and
 * drainers — with the wiring of the parts split from it; over a third of
 * it is this header and JSDoc.
 *
 * Output and backpressure: the front of the output concern. Routing never
 * writes to a socket; it queues. `enqueue` offers to the recipient's
 * bounded outbox (a plain array; its budgets in frames and characters,
 * each outbox and all together, are OutboxBudgets.ts's) and, once any
 * offer of the current batch finds an outbox full, parks that and every
 * later item of the batch (order is kept). After the batch, the calling
 * connection actor moves the parked items to its own list (`parkFor`) and
 * its drainer offers them one by one, waiting for room, before it reads its
 * socket again (ParkedDrain.ts): a fast sender is slowed, nothing accepted
 * is dropped.
 *
 * A live sender's new message (or a control frame about one:
 * ControlFrame.ts) is parked with the batch, as at a full outbox, while
 * the recipient's own parked list holds older mail of its sender for it
 * (`Peer.parkedMail`), while the recipient withholds that sender's return
 * and the message is from since (`Peer.returnWaits`), or while a
 * takeover's custody hold covers it (CustodyHold.ts): the tests are
 * ParkedOrder.ts's, one field test each while nothing is parked or
 * withheld. Another sender's mail does not wait so, nor do answers,
 * receipts and notices. Output forced past the bounds keeps the same
 * order (`forceEnqueue`, ForcedOutput.ts).
 *
 * Writers are not woken per item: the outboxes a batch of routing touched
 * are flushed once, when the batch ends (`endBatch`, `wakeTouched`); output
 * queued outside a reader's batch (timers, the membership notifier, a
 * drainer's offer) asks the broker's output fiber to flush
 * (`requestFlush`), so nothing queued waits for the next frame to arrive.
 * Likewise a drainer that waits on its head is woken at the batch's end
 * (after the writers) when an item that may go ahead of that head joins
 * its reader's list (`ownJoined`, ParkedDrain.offerOwnAhead): a woken
 * drainer runs at once, so never inside the step that parked the item.
 * Output with no reader to park it with — a replace-staged message falling
 * due (ReplaceStaging.ts) — asks `hasRoom` first and is told when a writer
 * made room (`room`, from `OutputWrites.roomMade`). The answer to an
 * `ask-expiry-v1` client's settling `list` may be held behind a reply
 * parked elsewhere (`enqueueSettleAnswer`, ParkedReplies.ts).
 * A cancel or supersede asks whether the message it withdraws is parked
 * anywhere, in the batch or any reader's list (`parksWithdrawn`, a scan off
 * the send path, for MayStillWait.ts's `mayStillWait`).
 *
 * Split by concern (2026-12-05, 2026-12-06); each part is reached through
 * a field of this class or is plain functions:
 * - `budgets` (OutboxBudgets.ts): the outbox budgets, the total character
 *   count and the drainers waiting on it; the one writer of `outboxChars`.
 * - ParkedOrder.ts: the per-sender counts of a reader's own parked mail
 *   and the tests of what waits behind it or behind a withheld return.
 * - `controls` (ParkedControls.ts): the counts of control frames and, by
 *   sender, of messages parked, raised and lowered by the parts that park
 *   and unpark them.
 * - `forced` (ForcedOutput.ts): output forced past the bounds, parked
 *   behind its sender's older parked mail or a withheld return's old output.
 * - `writes` (OutputWrites.ts): the writer's side — a write taken from an
 *   outbox (`takeForWrite`, with the membership feed and Rejoins.ts), its
 *   batch reused (WriteBatch.ts), the room it makes.
 * - `drain` (ParkedDrain.ts): the drainers' offers of a reader's parked list.
 * - `end` (OutputEnd.ts): a connection's end and a takeover's hand-over.
 * - `holds` (CustodyHold.ts), `departureSide` (ParkedDepartures.ts, with
 *   DepartureHolds.ts), `replies` (ParkedReplies.ts), and the tests of
 *   what an item is (OutboundItems.ts).
 *
 * Ownership: this class owns the batch being handled (its parked list,
 * `batching`), the outboxes it touched (`touched`, `Peer.touched`) and the
 * drainers to wake at its end (`drainWakes`; it sets `Peer.ownAhead`); it
 * is the one writer of the set of readers with parked output (added in
 * `parkFor`; taken off through the `unpark` closures it hands ParkedDrain.ts
 * and OutputEnd.ts). A `Peer`'s `outbox` and `parked` are pushed to here and
 * by the parts above, each in its caller's synchronous step; which part
 * writes what is said in its header. The parts reach Output's state only
 * through what it hands them once at construction (closures, the shared
 * set, the budgets); none holds Output itself.
 *
 * Per-frame path: `enqueue`, `ParkedDrain.place` and
 * `OutputWrites.takeForWrite` load what they loaded before the split (the
 * parts copy what every item uses flat; the order tests are direct calls), but for
 * one field per write or per drain (`output.writes`, `output.drain`), and
 * allocate nothing new (docs/performance.md, "Output split, thirty-second
 * stop").
 */
import { END_OF_OUTPUT, FEED_TICK, type OutboundItem, type OutboundMessage, type Peer, type Returnable } from "./Peer.ts"
import type { ControlFrame } from "./ControlFrame.ts"
import type { LeftBy } from "./MailReturns.ts"
import { ParkedControls } from "./ParkedControls.ts"
import { CustodyHolds } from "./CustodyHold.ts"
import { DepartureHolds } from "./DepartureHolds.ts"
import { Deferred, Exit } from "effect"
import { charsOf, isControl, isMessage, isReadOnlyAnswer, isSenderOrdered, parksMessage } from "./OutboundItems.ts"
import { isShut, type OutboxBudget, OutboxBudgets } from "./OutboxBudgets.ts"
import { ForcedOutput } from "./ForcedOutput.ts"
import { OutputEnd } from "./OutputEnd.ts"
import { ParkedDepartures } from "./ParkedDepartures.ts"
import { ParkedDrain } from "./ParkedDrain.ts"
import { countParkedMail, waitsBehindParked, waitsForReturn, wakeWaiters } from "./ParkedOrder.ts"
import { ParkedReplies } from "./ParkedReplies.ts"
import { type FeedSource, OutputWrites } from "./OutputWrites.ts"

/** Slots the list of touched outboxes keeps between flushes; past this it is let go. */
const KEEP_TOUCHED_SLOTS = 1_024

/** The output concern: queueing, parking and forcing output, the writer's side, and the parts split from it. */
export class Output {
  /** Output of the batch being handled that did not fit its outbox yet. */
  private parked: Array<readonly [Peer, OutboundItem]> = []
  /** Readers whose own parked list (`Peer.parked`) may hold output: from `parkFor` until it is empty. */
  private readonly parkedReaders = new Set<Peer>()
  /**
   * Control frames, and messages by sender, in the readers' parked lists (ParkedControls.ts):
   * `dropParkedControls` scans none while no control is, `parksWithdrawn` none while the sender has no message there.
   */
  private readonly controls = new ParkedControls()
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
  /** The drain of the readers' own parked lists: their drainers' offers (ParkedDrain.ts). */
  readonly drain: ParkedDrain
  /**
   * Outboxes that got output in this batch, in order; their writers are
   * woken once at its end. Entries `[touchedHead, touchedCount)` are pending
   * (`Peer.touched` marks them): a plain array reused from batch to batch,
   * where a `Set` emptied once per batch allocated a new table each time.
   */
  private touched: Array<Peer | undefined> = []
  private touchedHead = 0
  private touchedCount = 0
  /**
   * Readers whose drainer waits on its head while an item that may go ahead
   * of it joined their list (`ownJoined`): woken at the batch's end, after
   * the touched writers (`wakeTouched`), since a woken drainer runs at once.
   */
  private drainWakes: Array<Peer> = []
  private readonly takeBack: (item: Returnable | ControlFrame, refusedBy?: LeftBy, cameBack?: OutboundMessage) => boolean
  /** The outboxes' budgets and the characters charged against them (OutboxBudgets.ts). */
  private readonly budgets: OutboxBudgets
  private readonly requestFlush: () => void
  /** A reader's batch is being handled: its reader flushes the touched outboxes at its end. */
  private batching = false

  /**
   * @param takeBack takes output that can no longer be written where it was queued (MailDelivery): mail, notices, control frames;
   *   true when it went to its session's live connection; `refusedBy`: a control it cannot take now is kept for
   *   the client instance it was written to if its rule allows, holding the idle exit when its session left the
   *   refusing connection by its close; `cameBack`: its message, taken back with it and passed on to no one, which
   *   that instance must have read (MailReturns.takeBack).
   * @param feed the membership frames a recipient has not seen (Membership).
   * @param budget frames and characters of frame text outboxes hold before senders are slowed.
   * @param log the broker's log.
   * @param requestFlush asks the broker's output fiber to call `wakeTouched` soon (output queued outside a batch).
   * @param room `peer`'s writer took its outbox: output kept back for want of room may be queued now (ReplaceStaging.roomFor).
   */
  constructor(
    takeBack: (item: Returnable | ControlFrame, refusedBy?: LeftBy, cameBack?: OutboundMessage) => boolean,
    feed: FeedSource,
    budget: OutboxBudget,
    log: (level: "info" | "warning", message: string) => void,
    requestFlush: () => void,
    room: (peer: Peer) => void
  ) {
    this.takeBack = takeBack
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
      ownJoined: (reader) => this.ownJoined(reader),
      batchParked: () => this.parked,
      parkedReaders: this.parkedReaders,
      controls: this.controls,
      budgets: this.budgets,
      holds: this.holds,
      departureHolds: this.departureHolds
    })
    this.replies = new ParkedReplies(this.parkedReaders, () => this.parked, (key) => this.holds.keepsReply(key), {
      forceEnqueue: (asker, answer) => this.forceEnqueue(asker, answer),
      parkAt: (asker, index, answer) => {
        asker.parked.splice(index, 0, [asker, answer])
        this.ownJoined(asker)
      }
    })
    this.drain = new ParkedDrain({
      holds: this.holds,
      budgets: this.budgets,
      forced: this.forced,
      departureHolds: this.departureHolds,
      replies: this.replies,
      feed,
      undeliverable: (item) => this.undeliverable(item),
      refused: (item, recipient) => this.refused(item, recipient),
      unpark: (reader) => this.parkedReaders.delete(reader),
      controls: this.controls
    })
    this.end = new OutputEnd({
      charge: (peer, chars) => this.budgets.charge(peer, chars),
      takeBack,
      roomMade: (peer) => this.writes.roomMade(peer),
      forceEnqueue: (recipient, item) => this.forceEnqueue(recipient, item),
      refused: (item, recipient) => this.refused(item, recipient),
      unpark: (reader) => this.parkedReaders.delete(reader),
      controls: this.controls,
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
   * end of a recipient's own list (`parkedBehindOwn`, ForcedOutput.ts's),
   * drainer offers that waited behind it (`waitsBehindOwn`, ParkedDrain.ts's);
   * the departures held behind it are counted by `departureSide`
   * (`ParkedDepartures.departuresHeld`). Counted on those slow paths only,
   * never per routed frame. This one: batches that parked mail for their own reader.
   */
  ownParks = 0

  /** Drainer offers that waited behind their sender's mail in a recipient's own list (ParkedDrain.place; stats, slow path only). */
  get waitsBehindOwn(): number {
    return this.drain.waitsBehindOwn
  }

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
      peer.queue(item)
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
    peer.queue(FEED_TICK)
    this.touch(peer)
    return true
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
    if (this.drainWakes.length > 0) this.wakeDrainers()
  }

  /**
   * An item for `reader` itself that may go ahead of a head that waits
   * (ParkedDrain.offerOwnAhead) joined `reader`'s own parked list: marks it
   * (`Peer.ownAhead`) and, when its drainer waits on the head
   * (`Peer.drainWait`), wakes it at the batch's end (or soon, outside one:
   * `requestFlush`), never inside the step that parked the item. Slow path:
   * parked output only.
   */
  private ownJoined(reader: Peer): void {
    reader.ownAhead = true
    if (reader.drainWait === undefined) return
    if (this.drainWakes.length === 0 && !this.batching) this.requestFlush()
    this.drainWakes.push(reader)
  }

  /**
   * Takes every control frame for session `to` about the message under
   * `messageKey` out of the readers' parked lists (ParkedDrain.dropControls):
   * that message came back to the close path with `to` away, and the control
   * shares its fate (MailReturns.requeue; review revao). Slow path only;
   * no scan while no control is parked (`ParkedControls`, review revaq AQ3).
   * Returns what it took, each with the connection it was parked for (the
   * caller may keep one owed to the instance that read the message), but
   * one `leave` says yes to, which stays parked.
   */
  dropParkedControls(
    to: string,
    messageKey: string,
    leave?: (control: ControlFrame) => boolean
  ): ReadonlyArray<readonly [Peer, ControlFrame]> {
    if (this.controls.size === 0) return []
    return this.drain.dropControls(this.parkedReaders, to, messageKey, leave)
  }

  /**
   * Whether the message of record key `messageKey`, of sender `senderKey`, is
   * parked anywhere a drainer or this batch's end may still queue it: in the
   * batch being handled (`parked`, before `parkFor` moves it to its reader —
   * a send and its cancel or supersede in one batch) or in the list of any
   * reader with parked output (`parkedReaders`: the sender's current
   * connection, an older connection of its session still open after a
   * takeover, whose messages to others stay parked there,
   * `OutputEnd.forceOwnAnswers`, and a withheld return's reader that
   * `ForcedOutput.parkBehindReturn` parked it behind, which is one of them by
   * that method's own test). MayStillWait.ts's `mayStillWait`, on the cancel and
   * supersede paths only (review revay AY1, AY2); never on the send path.
   * Cost: the batch's own parked output, and — only while `senderKey` has a
   * message in some reader's list (`ParkedControls.messagesOf`) — one test
   * per item parked broker-wide; a reader's own list can hold mail of many
   * batches of others (ParkedDrain.place, ForcedOutput.behindOwnParked), so
   * that is bounded by what is parked, not by one batch per connection
   * (review revbc BC1, BC2: before the count, every cancel paid it).
   */
  parksWithdrawn(messageKey: string, senderKey: string): boolean {
    if (parksMessage(this.parked, messageKey)) return true
    if (this.controls.messagesOf(senderKey) === 0) return false
    for (const reader of this.parkedReaders) if (parksMessage(reader.parked, messageKey)) return true
    return false
  }

  /** Messages of sender `senderKey` in the readers' parked lists now (ParkedControls.ts; tests). */
  parkedMessagesOf(senderKey: string): number {
    return this.controls.messagesOf(senderKey)
  }

  /** Control frames in the readers' parked lists now (ParkedControls.ts; tests, stats). */
  get parkedControls(): number {
    return this.controls.size
  }

  /** The drainers `ownJoined` marked try their head again, and offer what may go ahead of it. */
  private wakeDrainers(): void {
    const readers = this.drainWakes
    this.drainWakes = []
    for (const reader of readers) {
      const wait = reader.drainWait
      if (wait === undefined) continue
      reader.drainWait = undefined
      Deferred.doneUnsafe(wait, Exit.void)
    }
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
    let ahead = false
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
        ahead = true
      } else if (entry[0] === reader && !ahead && isReadOnlyAnswer(item)) {
        ahead = true
      }
      this.controls.joined(item)
      parked[kept++] = entry
    }
    parked.length = kept
    if (kept === 0) return false
    if (own) this.ownParks++
    reader.parked = reader.parked.length === 0 ? parked : [...reader.parked, ...parked]
    if (ahead) this.ownJoined(reader)
    this.parkedReaders.add(reader)
    this.backpressureWaits++
    return true
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
    peer.queue(END_OF_OUTPUT)
  }

  /**
   * An item that can no longer reach its connection: mail goes back to the
   * mailbox, a notice is owed again, a control frame goes where its session
   * is now (ControlFrame.ts).
   */
  undeliverable(item: OutboundItem): void {
    if (typeof item === "object" && ("frame" in item || isControl(item))) this.takeBack(item)
  }

  /**
   * A parked item its recipient's connection refused (closed: ParkedDrain's
   * offer, or forced at its reader's close, OutputEnd.forceParked): as
   * `undeliverable`, but a control frame its session's live connection
   * cannot take now is kept for the client instance it was written to, as a
   * control given back alone at a close is (MailReturns.takeBack's
   * `keepRefused`; review revau AU3), holding the idle exit unless the
   * control's own session left `recipient` by `unregister` (`Peer.leftBy`,
   * by that session's key: the connection may have registered another since;
   * review revba BA2).
   */
  private refused(item: OutboundItem, recipient: Peer): void {
    if (isControl(item)) this.takeBack(item, recipient.leftBy(item.to))
    else this.undeliverable(item)
  }
}
