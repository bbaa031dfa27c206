/**
 * One connection's record inside the broker, and the items its outbox holds.
 *
 * Ownership: every mutable field is written by the Router's synchronous
 * concern modules only — the registry fields by `Registration`, the output
 * fields by `Output` (at a close or takeover by its close side,
 * `OutputEnd`; the custody hold's by `CustodyHolds`), the membership fields by `Membership` and
 * `WithheldDepartures`. The connection
 * actor (ConnectionActor.ts), its reader (PeerReader.ts) and its writer
 * (PeerWriter.ts) never write a `Peer`: they read `isClosing` and call
 * `Output` (take output to write, offer parked output; drain at close,
 * through `Output.end`).
 */
import { Deferred } from "effect"
import type { OutFrame } from "../protocol/framing.ts"
import type { Connection } from "../transport/Connection.ts"
import type { Mail } from "../store/records.ts"
import type { ControlFrame } from "./ControlFrame.ts"
import type { PeerCustody } from "./Custody.ts"
import type { CustodyHold } from "./CustodyHold.ts"
import type { LeftBy } from "./MailReturns.ts"
import type { WithheldDeparture } from "./MembershipFeed.ts"
import type { PeerReader } from "./PeerReader.ts"
import type { PeerWriter } from "./PeerWriter.ts"
import type { Session } from "./Registry.ts"

/** A message addressed to a session: its type lives with the other stored records (src/store/records.ts). */
export type { Mail } from "../store/records.ts"

/** Tells the writer to pull membership changes (MembershipFeed) before writing. */
export const FEED_TICK: unique symbol = Symbol.for("effect-intercom/broker/FeedTick")
/** Tells the writer to flush and end the connection. */
export const END_OF_OUTPUT: unique symbol = Symbol.for("effect-intercom/broker/EndOfOutput")

/**
 * A `message` frame on its way to a recipient, kept with what is needed to put
 * it back in the mailbox if the recipient disconnects before it was written.
 */
export interface OutboundMessage {
  /** The frame, in parts when it was built that way (frameParts.ts). */
  readonly frame: OutFrame
  readonly mail: Mail
  /** The registry key of the session it was queued for (its target, or P49's holder of the identity). */
  readonly to: string
  /**
   * Its sender's incarnation when it was routed (`Session.presentSince`; 0
   * for mail flushed from the mailbox): a writer that meets the sender gone
   * and back writes the older ones before its `session_left` (Rejoins.ts).
   */
  readonly senderSince: number
}


/**
 * A failure notice on its way to a message's sender (an `expired` or
 * `superseded` receipt): owed to it again if its connection closes before
 * the notice was written (or, `received-v1`, confirmed read).
 */
export interface OutboundNotice {
  readonly frame: string
  /** The registry key of the sender it is for. */
  readonly owedTo: string
  /** Its number in the durable store (StoreJournal.putNotice); undefined without a store. */
  readonly seq: number | undefined
  /**
   * When it was first owed (issued): it is kept a day from then, however often
   * a closing connection hands it back (MailReturns.takeBack).
   */
  readonly owedAt: number
  /**
   * The extension a connection must have been granted to be written this
   * notice, undefined for a base frame. Such a notice is only for a live
   * connection granted it: never owed to a session that is away, nor stored
   * (MailDelivery.tellLive) — today `ask_expired` (`ask-expiry-v1`), whose
   * asker settles an ask it could not hear of itself (Ask.ts).
   */
  readonly feature?: string | undefined
}

/** Output the broker takes back when it could not be written: mail and failure notices. */
export type Returnable = OutboundMessage | OutboundNotice

/**
 * What a write carries that comes back when its socket never took it, or
 * (`received-v1`) its client never confirmed reading it: mail, notices, and
 * control frames about mail (ControlFrame.ts), so a cancel goes again with
 * the message it is about (MailReturns.takeBack).
 */
export type Written = Returnable | ControlFrame

/** A returned sender's mail waits for its withheld departure and join (`Peer.returnWaits`). */
export interface ReturnWait {
  /** The returned session's id (its `withheldDepartures` entry's key): the key here is its sender key. */
  readonly id: string
  /** The latest departed incarnation's `presentSince`: mail tagged past it is from since the return. */
  since: number
  /** The connection whose parked output the withheld pair waits for. */
  reader: Peer
}

/**
 * What an outbox holds: a frame (its text, or its parts), output taken back
 * if unwritten (an object with a `frame`), or a signal.
 */
export type OutboundItem = OutFrame | Returnable | typeof FEED_TICK | typeof END_OF_OUTPUT

/** `end` flushes queued output first; `destroy` drops the connection at once. */
export type CloseMode = "end" | "destroy"

/**
 * `closed` once the actor has detached; a peer never goes back from `closed`.
 * `observing`: registered as an observer of the broker (`observe-v1`), not as
 * a session.
 */
export type PeerState = "unregistered" | "registered" | "observing" | "closed"

/** The broker's record of one connection; see the module header for who writes what. */
export class Peer {
  readonly connection: Connection
  /** Writes the outbox to the socket; `Output` asks it to once per batch that queued output here. */
  readonly writer: PeerWriter
  /** Completed once with how to close: `end` flushes queued output first. */
  readonly closing = Deferred.makeUnsafe<CloseMode>()
  /** Hands the connection's frames to the Router; stopped when a close is requested (`closePeer`). */
  readonly reader: PeerReader

  // --- Registration ---------------------------------------------------------
  state: PeerState = "unregistered"
  /** The session this connection currently owns; cleared when it leaves or is taken over. */
  session: Session | undefined = undefined
  /** When the connection (re)entered the unregistered state, for the registration timeout (P15). */
  unregisteredSince: number
  /**
   * The key of the session this connection registered last (`registeredHere`), and whether that session left
   * it by `unregister` (`leftByUnregister`): how the session a control is for left this connection, which says
   * whether one kept because this connection refused it, or gave it back at its close, holds a memory
   * broker's idle exit (Output.refusedBy, Registration.detach; review revba BA2: the connection's own state
   * says how its LAST session left, not an earlier one's). A connection holds one session at a time, and one
   * taken over is ended (Registration: destroyed once its taker is registered), so every session it held
   * before its last one left it by `unregister`: two fields, no list (review revbe BE1: a list of eight let an
   * earlier session's `unregister` be forgotten, read as the close).
   */
  private lastKey: string | undefined = undefined
  private lastUnregistered = false
  /** Extensions granted to this connection in `registered`: a set shared with others granted the same (FeatureSets.ts), never changed. */
  features: ReadonlySet<string> = NO_FEATURES
  /**
   * The client instance that registered on this connection (`rejoin-v1`'s `instanceId`, kept only
   * where granted): a register from the same instance while this holds its session is its own rejoin.
   */
  instanceId: string | undefined = undefined

  // --- Membership -------------------------------------------------------------
  /** Membership feed position (MembershipFeed.collect). */
  feedCursor = 0
  /**
   * Departures this connection had not seen when the feed dropped them to stay
   * bounded; sent as `session_left` with its next feed frames: after the
   * output already queued for it, like the feed's departures, or before the
   * session's new join if it is back (Membership.collect).
   */
  owedDepartures: Set<string> | undefined = undefined
  /**
   * New joins of returned sessions this connection's writer passed over
   * while their departures were withheld with them
   * (`WithheldDeparture.rejoined`), owed now, by session id: written with
   * the owed departure, after the session's older mail, or first
   * (Membership.collect). Dropped like `owedDepartures`.
   */
  owedJoins: Set<string> | undefined = undefined
  /**
   * Returned sessions whose departure and join this connection withholds
   * (`WithheldDeparture.rejoined`), by sender key: their mail from since
   * the return (tagged past `since`) waits until the pair is owed — no
   * message may precede its sender's join — except what `reader`, the
   * connection whose parked output the pair waits for, offers (behind that
   * output already). Written by WithheldDepartures, read by Output. Kept past
   * the session's leave when the connection closed (WithheldDepartures.left), so
   * the mail that waited goes back behind that output.
   */
  returnWaits: Map<string, ReturnWait> | undefined = undefined
  /**
   * The `returnWaits` this connection held when its session unregistered
   * (WithheldDepartures.left), kept for the mail that waited on them: woken at the
   * leave, such a message is refused (its session is gone) and goes back
   * to the mailbox — parked first behind the old output it waited for
   * (ParkedDrain.place, `parkBehindReturn`), so the mailbox gets that output
   * first. Read only for mail stranded here, so a later session of the
   * connection never waits on them; replaced at its next leave, dropped at
   * its close.
   */
  leftReturnWaits: Map<string, ReturnWait> | undefined = undefined
  /**
   * Departures this connection gets only after mail of the departed session
   * that waits for it elsewhere — replace messages waiting for room in its
   * outbox, mail in its own parked output, the session's own output parked
   * when it came back (then with its new join: `rejoined`)
   * (WithheldDepartures.withholdDeparture) —
   * by session id, with whether its writer passed the departure in the feed
   * and how many holds are on it (none: released while the session was back,
   * waiting for the writer to settle it). Both this and `owedDepartures` are
   * dropped when the connection's session leaves (WithheldDepartures.left).
   */
  withheldDepartures: Map<string, WithheldDeparture> | undefined = undefined

  /** A FEED_TICK is already waiting in the outbox. */
  feedPending = false

  // --- Output -----------------------------------------------------------------
  /**
   * The outbox's list: made by the first `queue` after the writer took the
   * last one (`takeOutbox`), so an idle connection holds none.
   */
  private queued: Array<OutboundItem> | undefined = undefined
  /** The outbox was drained at close: it takes nothing more (OutputEnd.drainOnClose). */
  outboxShut = false
  /** Characters of frame text queued in the outbox, not yet taken by the writer. */
  outboxChars = 0
  /** The outbox got output since the last flush: its writer is among those `Output` flushes next. */
  touched = false
  /**
   * Durable broker: the journal change count its queued output reveals (an
   * acknowledgement, a delivery, a cancel's answer); its writer writes
   * nothing until the store holds that much (StoreJournal.ts). Written only
   * by the journal.
   */
  storeMark = 0
  /** Durable broker: frames written to this connection since it connected (Custody.ts). */
  framesWritten = 0
  /** Mail written here and kept in the store until the client confirms it read it (`received-v1`, Custody.ts). */
  custody: PeerCustody | undefined = undefined
  /**
   * The part of the write in progress its socket never took, once writing was abandoned
   * (`Router.abandonWrites`), oldest first; taken once by whichever comes first, the client's rejoin
   * (`Router.abandoned`) or the close (`Router.detach`). Written and taken only there.
   */
  untakenRest: Array<Written> | undefined = undefined
  /**
   * Control frames handed over at a takeover by another instance whose message is in this base
   * connection's write in progress (OutputEnd.handOver): whether the new instance gets that message
   * depends on what the socket takes, so they wait for the close, to go back right after the untaken
   * rest — and on only right after their message (MailReturns.giveBack). Written there, taken at the
   * close (`Router.detach`).
   */
  controlsAtClose: Array<ControlFrame> | undefined = undefined
  /**
   * Drainers waiting to offer to this outbox: for room (in frames or
   * characters), or for the last of their sender's older mail in this
   * connection's own parked list to be offered (`parkedMail`); woken when
   * the writer takes, and when such a sender's last parked message is
   * offered (ParkedDrain.ts pushes them, ParkedOrder.wakeWaiters wakes them).
   */
  roomWaiters: Array<Deferred.Deferred<void>> | undefined = undefined
  /**
   * Output this connection produced that is still waiting for room in its
   * recipients' outboxes, in order; until it fits, the connection's other
   * frames are held (ConnectionActor.ts).
   */
  parked: Array<readonly [Peer, OutboundItem]> = []
  /**
   * How many messages in this connection's own `parked` list are addressed
   * to it (its mailbox flush that did not fit, mail parked behind that), by
   * sender key; undefined while none are. While a sender has some there, its
   * new mail for this connection waits behind them instead of entering the
   * outbox (Output.enqueue, ParkedDrain.place; the counts are ParkedOrder.ts's); other senders' mail does not wait. Held from the
   * close's `forceParked` to its `drainOnClose`, so mail arriving meanwhile
   * follows the flush back.
   */
  parkedMail: Map<string, number> | undefined = undefined
  /**
   * This connection's own `parked` list may hold items addressed to it that
   * go ahead of a head that waits (ParkedDrain.offerOwnAhead: messages,
   * control frames, read-only answers). Set where such an item joins the list
   * (Output.parkFor, ForcedOutput.parkOwn, a parked settling answer), cleared
   * by the drainer when a look finds none that may go before an answer it
   * stops at, set again when such an answer leaves the list as its head
   * (ParkedDrain.parkedOffered): while false, a head that waits costs no scan.
   */
  ownAhead = false
  /**
   * What this connection's drainer awaits while its head waits (ParkedDrain.offerParked), else
   * undefined: completed at a batch's end when an item that may go ahead joins the list
   * (Output.ownJoined), so the drainer offers it without waiting for the head's room.
   */
  drainWait: Deferred.Deferred<void> | undefined = undefined
  /**
   * The wait of the first item for this connection itself that its drainer
   * offered ahead of a head that waits and that waits too (ParkedDrain.offerOwnAhead),
   * pushed once onto what it waits for (its own `roomWaiters` mostly); the
   * drainer awaits it with the head's wait and looks ahead again only once
   * it completed. Written by ParkedDrain only; cleared when the list empties.
   */
  ownWait: Deferred.Deferred<void> | undefined = undefined
  /**
   * How many takeovers' custody holds this connection holds (CustodyHold.ts;
   * each a session's, kept by `CustodyHolds` by session key), one or more
   * when any: that of the session it took over from one whose client left
   * mail unconfirmed (`received-v1`), or adopted, and those of any sessions
   * it held before and left, each apart. Until that old connection closes, messages for the session of the senders of that mail
   * wait (routed: parked with their sender's batch) or are kept in the hold
   * (forced), so they do not overtake it. 0 otherwise, the common case: the
   * per-message path tests only this field then.
   */
  custodyHolds = 0
  /** The hold this connection's close releases (it was taken over with mail unconfirmed; CustodyHold.ts). */
  releasesHold: CustodyHold | undefined = undefined

  /**
   * @param reader makes the connection's reader, which hands its frames to the Router.
   * @param writer makes the connection's writer, which writes this peer's outbox.
   */
  constructor(
    connection: Connection,
    now: number,
    reader: (peer: Peer) => PeerReader,
    writer: (peer: Peer) => PeerWriter
  ) {
    this.connection = connection
    this.unregisteredSince = now
    this.reader = reader(this)
    this.writer = writer(this)
  }

  /**
   * Output queued for this connection, oldest first, not yet taken by its
   * writer: bounded by `outboxCapacity` frames and the character budgets,
   * except for output forced past them (Output.ts, ForcedOutput.ts). Added
   * to only by `queue`; its list let go by `takeOutbox`, or by
   * `dropEmptyOutbox` after an edit in place left it empty.
   */
  get outbox(): ReadonlyArray<OutboundItem> {
    return this.queued ?? NOTHING_QUEUED
  }

  /** Puts `item` at the end of the outbox (the callers check its budgets: Output.ts, ForcedOutput.ts, ParkedDrain.ts). */
  queue(item: OutboundItem): void {
    (this.queued ??= []).push(item)
  }

  /**
   * The outbox's own list, for an edit in place that keeps some of its
   * items (OutputEnd.handOver); undefined while nothing is queued.
   */
  outboxToEdit(): Array<OutboundItem> | undefined {
    return this.queued
  }

  /**
   * Lets go of the outbox's list when an edit in place (`outboxToEdit`) left
   * it empty, so a connection with nothing queued holds no list (review rvidle
   * probe 1: a hand-back that took every item kept it).
   */
  dropEmptyOutbox(): void {
    if (this.queued?.length === 0) this.queued = undefined
  }

  /** Takes everything in the outbox, oldest first, and leaves it empty: the list is the caller's. */
  takeOutbox(): Array<OutboundItem> {
    const items = this.queued ?? []
    this.queued = undefined
    return items
  }

  /** A close was requested (it may not have taken effect yet). */
  get isClosing(): boolean {
    return Deferred.isDoneUnsafe(this.closing)
  }

  /** The session `key` left this connection by `unregister` (`lastKey`). */
  leftByUnregister(key: string): void {
    if (key === this.lastKey) this.lastUnregistered = true
  }

  /** The session `key` registered on this connection: the one it holds now (`lastKey`). */
  registeredHere(key: string): void {
    this.lastKey = key
    this.lastUnregistered = false
  }

  /**
   * How the session `key` left this connection: by its close or a takeover only when it is the connection's
   * last session and did not `unregister` (`lastKey`); any earlier one left by `unregister`.
   */
  leftBy(key: string): LeftBy {
    return key === this.lastKey && !this.lastUnregistered ? "close" : "unregister"
  }
}

const NO_FEATURES: ReadonlySet<string> = new Set()

/** The outbox of every connection with nothing queued (`Peer.outbox`): read only, never added to. */
const NOTHING_QUEUED: ReadonlyArray<OutboundItem> = []
