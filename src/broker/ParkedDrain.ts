/**
 * Size note: about 425 lines; one concept (offering parked items in order),
 * its rules documented where they are kept.
 *
 * The drain of a reader's own parked list: after a batch parked output
 * (`Output.parkFor`), the reader's drainer (PeerReader.drainParked) offers
 * it item by item (`nextParked`, `offerParked`), waiting for room, before
 * its reader reads its socket again — a fast sender is slowed, nothing
 * accepted is dropped.
 *
 * One offer (`place`) queues the item in its recipient's outbox, parks it
 * at the end of the recipient's own list, refuses it (its recipient closed
 * or no longer holds its session) or returns a wait to retry after: for
 * room in that outbox or in all outboxes together (OutboxBudgets.ts); for
 * older mail of its sender in the recipient's own parked list to be offered
 * (ParkedOrder.ts) — unless the reader's own list holds mail for the reader
 * too, when the item is parked at the end of the recipient's list instead,
 * so no ring of drainers waits for ever (architecture.md, step 7); for its
 * sender's withheld return to be owed; or for the custody of the connection
 * the recipient took its session over from (CustodyHold.ts). The item
 * leaves the parked list in the same synchronous step that accepts or
 * refuses it (`parkedOffered`), before the recipient's writer is told to
 * flush, so nothing ever sees it both queued and still parked — a
 * takeover's hand-over takes parked items back, and would send one the old
 * socket already wrote a second time. That step also counts down the
 * departure holds and the per-sender counts behind it, tells the withheld
 * departures when the list is empty (`FeedSource.parkedOut`), and releases
 * a settling answer held behind a reply (ParkedReplies.ts).
 *
 * While the head, for another connection, waits, the items behind it
 * addressed to the reader itself — messages, control frames about one,
 * `health`/`list` answers; not its other answers (the acks of its own sends
 * among them), which stay in place — are offered ahead of it, in their
 * order, up to the first that waits too or the first answer that changes
 * which session the connection holds, such as a `registered` that mail
 * behind it depends on (`offerOwnAhead`, OutboundItems.changesSession): what the broker holds
 * for a session never waits for another session's room (a reply forced
 * behind the session's sends to one that does not read, the settling answer
 * behind it: ParkedReplies.ts). Only while `Peer.ownAhead` says such an item
 * may be there; one that joins while the drainer waits wakes it at the
 * batch's end (`Peer.drainWait`, Output.ownJoined). The wait of an own item
 * that waits is kept (`Peer.ownWait`) and awaited with the head's: until it
 * completes, a retry of the head neither looks ahead nor pushes it again.
 * When the last parked answer to a read-only request leaves (ahead, or as the
 * head), `offerParked` says so, and the reader answers the `health`/`list`
 * frames it held behind it (PeerReader.answerHeldReads).
 *
 * Ownership: no state of its own but the `waitsBehindOwn` and
 * `offeredAhead` counts. It takes items off the head of a reader's
 * `parked` list (and, `offerOwnAhead`, the reader's own items after it),
 * writes its `drainWait` and `ownWait`, and clears its `ownAhead` or sets it
 * again when an answer the look ahead stops at leaves (Output's, which
 * `Output.parkFor` fills and ForcedOutput.ts and OutputEnd.ts also append
 * to or take), pushes waits onto a recipient's `roomWaiters` (emptied by
 * ParkedOrder.wakeWaiters) and queues into its outbox, charging the budget;
 * it takes an emptied reader off Output's set of readers with parked output
 * through `unpark`. `place` runs once per offered item, on the per-frame
 * path of a slowed sender: what every offer uses is copied flat onto this
 * instance, so it loads what it did as Output's own, and it allocates only the
 * Deferred it waits on. Reached as `Output.drain`. Split from Output.ts
 * (2026-12-06).
 */
import { Deferred, Effect } from "effect"
import type { ControlFrame } from "./ControlFrame.ts"
import type { CustodyHolds } from "./CustodyHold.ts"
import type { DepartureHolds } from "./DepartureHolds.ts"
import type { ForcedOutput } from "./ForcedOutput.ts"
import {
  changesSession,
  charsOf,
  goesAhead,
  isControl,
  isMessage,
  isReadOnlyAnswer,
  isSenderOrdered,
  isStranded
} from "./OutboundItems.ts"
import { isShut, type OutboxBudgets } from "./OutboxBudgets.ts"
import type { FeedSource } from "./OutputWrites.ts"
import type { ParkedControls } from "./ParkedControls.ts"
import type { ParkedReplies } from "./ParkedReplies.ts"
import { returnWaitOf, uncountParkedMail, waitsBehindParked, waitsForReturn } from "./ParkedOrder.ts"
import type { OutboundItem, Peer } from "./Peer.ts"

/** `ParkedDrain.dropControls`' answer when it took nothing: shared, so the common case allocates nothing. */
const NONE_TAKEN: ReadonlyArray<readonly [Peer, ControlFrame]> = []

/** What the drain uses of Output's and its parts' (see the module header). */
export interface DrainSide {
  /** The takeovers' custody holds (CustodyHold.ts): an offer they cover waits for the old close, or is kept. */
  readonly holds: CustodyHolds
  /** The outbox budgets (OutboxBudgets.ts). */
  readonly budgets: OutboxBudgets
  /** Forced output's parking (ForcedOutput.ts): behind a recipient's own parked mail, or a withheld return's old output. */
  readonly forced: ForcedOutput
  /** The departures held behind recipients' own parked output (DepartureHolds.ts), counted down as that mail is offered. */
  readonly departureHolds: DepartureHolds
  /** The settling answers held behind parked replies (ParkedReplies.ts), released as the last such reply leaves. */
  readonly replies: ParkedReplies
  /** The membership feed: `parkedOut` when a reader's parked list is empty (WithheldDepartures.left). */
  readonly feed: FeedSource
  /** An item that can no longer reach its connection goes back (Output.undeliverable). */
  readonly undeliverable: (item: OutboundItem) => void
  /** A parked item `recipient`'s connection refused goes back, a control kept if it may be (Output.refused). */
  readonly refused: (item: OutboundItem, recipient: Peer) => void
  /** `reader` is no longer among Output's readers with parked output; true when it was. */
  readonly unpark: (reader: Peer) => boolean
  /** The count of control frames in the parked lists (ParkedControls.ts, Output's): lowered for each control offered or dropped here. */
  readonly controls: ParkedControls
}

/** The drain of the readers' own parked lists (see the module header). */
export class ParkedDrain {
  private readonly side: DrainSide
  // What every offer uses, copied flat from `side`: `place` and `parkedOffered` load them as they did as Output's own.
  private readonly holds: CustodyHolds
  private readonly budgets: OutboxBudgets
  private readonly replies: ParkedReplies

  /**
   * Drainer offers that waited behind older mail of their sender in the
   * recipient's own parked list since the broker started (stats:
   * `BrokerStats.waitsBehindOwn`; slow path only).
   */
  waitsBehindOwn = 0

  /**
   * Items for a reader itself offered ahead of the head of its parked list,
   * which waited (`offerOwnAhead`), since the broker started (stats; slow path only).
   */
  offeredAhead = 0

  /** @param side what the drain uses of Output's and its parts'. */
  constructor(side: DrainSide) {
    this.side = side
    this.holds = side.holds
    this.budgets = side.budgets
    this.replies = side.replies
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
   * True when the last parked answer to a read-only request of `reader`'s
   * left (as `entry`, or ahead of it while it waits: then it returns with
   * `entry` still parked, to be offered again after the reader answered
   * what it held behind that answer, PeerReader.answerHeldReads).
   */
  offerParked(reader: Peer, entry: readonly [Peer, OutboundItem]): Effect.Effect<boolean> {
    return Effect.suspend(() => {
      if (reader.parked[0] !== entry) return Effect.succeed(false)
      reader.drainWait = undefined
      const recipient = entry[0]
      const placed = this.place(reader, recipient, entry[1])
      if (typeof placed !== "string") {
        // The head waits: what after it is for the reader itself may go ahead (`offerOwnAhead`), and an item
        // that may go joining the list later wakes this wait at the batch's end (`drainWait`, Output.ownJoined).
        // While an own item offered ahead still waits (`Peer.ownWait`), a look would find the same: none is taken.
        let own = reader.ownWait
        if (own !== undefined && Deferred.isDoneUnsafe(own)) own = reader.ownWait = undefined
        if (own === undefined && reader.ownAhead && recipient !== reader) {
          // The last parked read-only answer went ahead: back to the reader, which may answer its held reads.
          if (this.offerOwnAhead(reader)) return Effect.succeed(true)
          own = reader.ownWait
        }
        reader.drainWait = placed
        const woken = own === undefined
          ? Deferred.await(placed)
          : Effect.raceFirst(Deferred.await(placed), Deferred.await(own))
        return Effect.andThen(woken, this.offerParked(reader, entry))
      }
      return Effect.succeed(this.parkedOffered(reader, entry, placed !== "refused", placed === "queued"))
    })
  }

  /**
   * One try of `offerParked` (or of an item offered ahead of the head,
   * `offerOwnAhead`): the item queued in the recipient's outbox, parked at
   * the end of its own list, refused, or a new wait to retry after, pushed
   * once onto what it waits for.
   */
  private place(
    reader: Peer,
    recipient: Peer,
    item: OutboundItem
  ): "queued" | "parked" | "refused" | Deferred.Deferred<void> {
    // Held behind the custody of the connection the recipient took its session over from (CustodyHold.ts):
    // it waits for that close; refused meanwhile (the recipient closed or left), it is kept with the hold,
    // to come back after that custody.
    const hold = this.holds.holdOf(recipient, item)
    if (hold !== undefined) {
      // The recipient's own parked output (its mailbox's flush, output handed over) is kept with the hold
      // too: its drainer is the one that lets the recipient read, and must not wait for another's close.
      // (`Output.parkFor` keeps it at once; here only what was parked before the recipient took the hold.)
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
        if (wait !== undefined && wait.reader !== reader && this.side.forced.parkBehindReturn(recipient, item, wait)) {
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
        this.side.forced.parkOwn(recipient, item)
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
    recipient.queue(item)
    return "queued"
  }

  /**
   * The head of `reader`'s parked list, for another connection, waits: the
   * items after it addressed to `reader` itself that may go ahead
   * (`goesAhead`: messages, control frames about one, read-only answers) are
   * offered now, in their order, up to the first that waits too — on a wait
   * of its own, kept as `Peer.ownWait` (pushed once onto the waits of what it
   * waits for, the reader's own room mostly), which the drainer awaits with
   * the head's until it completes, so it is neither pushed again nor looked
   * for again on each retry of the head. They pass the reader's other own
   * items, which stay in place — the acks of its own sends, mail notices,
   * answers to its requests by id (topics, results, questions, stats,
   * supervisor) — and the scan stops at an answer that changes which session
   * the connection holds or ends it (`changesSession`: `registered`,
   * `registration_failed`, `taken_over`, `error`): what follows such an
   * answer may depend on it — mail for a session registered in the batch
   * follows its `registered`. Each leaves the list in the step that accepts or refuses
   * it, with `parkedOffered`'s bookkeeping. Every per-pair order holds: they
   * keep their order among themselves and all go to one outbox, the reader's
   * sends to others keep theirs, and a departure hold counts down per offered
   * message (DepartureHolds.offered), not per position. Clears
   * `Peer.ownAhead` when none is left that may go before such an answer
   * (`parkedOffered` sets it again when that answer leaves as the head).
   * True when the last parked read-only answer went ahead: the reader may
   * answer the `health`/`list` frames it holds (PeerReader.answerHeldReads). Slow path: a
   * scan of the list, only while `ownAhead` is set, the head waits and no own
   * item waits.
   */
  private offerOwnAhead(reader: Peer): boolean {
    const parked = reader.parked
    let queued = false
    let waits = false
    let readAnswered = false
    for (let i = 1; i < parked.length; i++) {
      const entry = parked[i]!
      const item = entry[1]
      if (entry[0] !== reader) continue
      if (!goesAhead(item)) {
        if (changesSession(item)) break
        continue
      }
      const placed = this.place(reader, reader, item)
      if (typeof placed !== "string") {
        reader.ownWait = placed
        waits = true
        break
      }
      parked.splice(i--, 1)
      this.side.controls.left(item)
      this.offeredAhead++
      if (placed === "queued") queued = true
      const own = isMessage(item) ? item : undefined
      if (own === undefined && isReadOnlyAnswer(item)) readAnswered = true
      if (own !== undefined && !this.side.departureHolds.isEmpty) this.side.departureHolds.offered(reader, own)
      if (placed === "refused") this.side.refused(item, reader)
      // Last, as in `parkedOffered`: a woken drainer runs at once.
      if (own !== undefined) uncountParkedMail(reader, own.mail.senderKey)
    }
    if (!waits) reader.ownAhead = false
    if (queued) reader.writer.flush()
    return readAnswered && !this.parksAnswerFor(reader)
  }

  /**
   * Whether an answer to a read-only request (`health_ok`, `sessions`) is
   * among `reader`'s own parked output (slow path: a scan). While one is, no
   * later such answer may overtake it.
   */
  parksAnswerFor(reader: Peer): boolean {
    for (const [to, item] of reader.parked) {
      if (to === reader && isReadOnlyAnswer(item)) return true
    }
    return false
  }

  /**
   * Takes out of `readers`' parked lists every control frame for session
   * `to` about the message under `messageKey` (ControlFrame.ts): that
   * message came back to the close path with `to` away, so its fate is the
   * mailbox's, and the control shares it, as one given back with it does
   * (MailReturns.requeue; review revao). A control is never counted in
   * `Peer.parkedMail` (a message for the reader only) nor a reply
   * (ParkedReplies.ts): its removal touches no count. A drainer waiting on
   * a head taken so finds, once woken (the waits of a connection that
   * gives back are released: OutputEnd.handOver's room, the close's), that
   * `entry` is no longer the oldest and offers the next (`offerParked`); a
   * list left empty is unparked as when its last item is offered
   * (`parkedOffered`). Slow path: a scan of the lists, on the close path of
   * a message withdrawn on its way only. Returns what it took, each with the
   * connection it was parked for (none: a shared empty array). `leave`: a
   * control it says yes to stays parked (MailReturns' `dropWithdrawn`: one
   * owed to an instance that read the message).
   */
  dropControls(
    readers: ReadonlySet<Peer>,
    to: string,
    messageKey: string,
    leave?: (control: ControlFrame) => boolean
  ): ReadonlyArray<readonly [Peer, ControlFrame]> {
    let taken: Array<readonly [Peer, ControlFrame]> | undefined
    if (readers.size === 0) return NONE_TAKEN
    for (const reader of [...readers]) {
      const parked = reader.parked
      let kept = 0
      for (let i = 0; i < parked.length; i++) {
        const entry = parked[i]!
        const item = entry[1]
        if (!isControl(item) || item.to !== to || item.messageKey !== messageKey || leave?.(item) === true) parked[kept++] = entry
        else {
          this.side.controls.left(item)
          taken ??= []
          taken.push([entry[0], item])
        }
      }
      if (kept === parked.length) continue
      parked.length = kept
      if (kept === 0) {
        reader.ownWait = undefined
        if (this.side.unpark(reader)) this.side.feed.parkedOut(reader)
      }
    }
    return taken ?? NONE_TAKEN
  }

  /** The reader's oldest parked item, or undefined when all of it fitted. */
  nextParked(reader: Peer): readonly [Peer, OutboundItem] | undefined {
    return reader.parked[0]
  }

  /**
   * The oldest parked item, `entry`, was offered (`offerParked`): accepted
   * (queued: `queued`), or refused because its recipient closed meanwhile;
   * its recipient's writer is told to flush when queued. Nothing when
   * `entry` is no longer the oldest. True when it was the last parked answer
   * to a read-only request of the reader's (see `offerOwnAhead`).
   */
  private parkedOffered(reader: Peer, entry: readonly [Peer, OutboundItem], accepted: boolean, queued: boolean): boolean {
    if (reader.parked[0] !== entry) return false
    const first = reader.parked.shift()
    if (first !== undefined) this.side.controls.left(first[1])
    const toReader = first !== undefined && first[0] === reader
    const own = toReader && isMessage(first[1]) ? first[1] : undefined
    if (own !== undefined && !this.side.departureHolds.isEmpty) this.side.departureHolds.offered(reader, own)
    if (first !== undefined && !accepted) this.side.refused(first[1], first[0])
    let readAnswered = false
    if (toReader && own === undefined) {
      // An answer of its own that the scan ahead stops at left: what is behind it may go ahead again.
      if (changesSession(first[1])) reader.ownAhead = true
      else if (isReadOnlyAnswer(first[1])) readAnswered = !this.parksAnswerFor(reader)
    }
    if (reader.parked.length === 0) {
      reader.ownWait = undefined
      this.side.unpark(reader)
      this.side.feed.parkedOut(reader)
    }
    // `ask-expiry-v1`: the last reply to a held asker's session left (queued, parked or refused and taken back): its answer follows it.
    if (first !== undefined && this.replies.holding && first[0] !== reader) this.replies.offered(first[1])
    // Last: the count's last one wakes the senders waiting behind it, and a woken drainer runs at once
    // (Deferred.doneUnsafe), so the rest of this bookkeeping is done before it looks.
    if (own !== undefined) uncountParkedMail(reader, own.mail.senderKey)
    if (queued) entry[0].writer.flush()
    return readAnswered
  }
}
