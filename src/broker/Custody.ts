/**
 * Size: about 530 lines, past the ~400 guideline: one concept, the
 * per-connection FIFO (`PeerCustody`, with whom it wrote to) and the
 * Router's part around it.
 *
 * Custody of written mail, failure notices and control frames (extension
 * `received-v1`, issue 13). A durable
 * broker keeps the mail it wrote to a connection in its store until that
 * connection's client says, with `received {frames}`, that it has read the
 * frame carrying it — not merely until the socket took it.
 *
 * Why: written is not read. When the broker is killed, a client's next write
 * fails (EPIPE) and Node destroys its socket with the broker's last frames
 * still unread in the kernel, so mail the store had already forgotten was
 * gone (the kill -9 test found it, docs/store.md "Proof"). Kept in custody,
 * such mail is in the store at the restart and delivered again; the client
 * drops the copies it did read (RecentMessages).
 *
 * When the connection closes with the broker alive (a drop, a stalled
 * reader, a takeover, the client's own close), what is still in custody was
 * never confirmed read: it goes back like output the connection never wrote
 * (`Router.detach`: to the session's next connection, or its mailbox), ahead
 * of that output; at a takeover by another instance the new connection holds
 * the newer mail of those senders until then (CustodyHold.ts), so their
 * order holds. At the client's own rejoin (`rejoin-v1`) it goes back at
 * once, at the new `register` (`Router.abandoned`), not at the close; so
 * does what a session that ends by `unregister` was given (`handBack`): its
 * client confirms nothing after that. A client that had read it after all drops the copy
 * (`RecentMessages`). A broker in memory mode grants the extension too: its
 * custody keeps mail only in memory, which is enough for that.
 *
 * Failure notices (`expired` and `superseded` receipts, MailDelivery.ts) are
 * held the same way: one written to a connection that closes before its
 * client confirmed reading it is owed to its sender again, so a sender whose
 * reader stalled and was dropped still hears that its mail was lost. A
 * durable broker stores them too (StoreJournal.putNotice) until the client
 * confirms them (or, for a client without custody, until they are written),
 * so a notice unread when the broker is killed is sent again after the
 * restart.
 *
 * Control frames (a cancel, a supersede: ControlFrame.ts) are held the same
 * way, in memory only: one written and never confirmed goes back with the
 * rest, oldest first. At the client's own rejoin it goes to the new
 * connection as it is (that client may have read it: it drops the copy,
 * RecentControls.ts). At the close, to a takeover by another instance, it
 * goes only right after the message it is about, given back before it in
 * the same close — without it that instance got a message its sender had
 * been told it withdrew — and never otherwise, as that instance cannot act
 * on it (MailReturns.giveBack): without the message (its old client
 * confirmed it) it is kept for the old instance's return, and so is one
 * whose message, withdrawn, came back and went nowhere (a message its
 * sender withdrew is given back to no new instance, its route naming the
 * old one: MailReturns.requeue) when the old instance read that message
 * (in this custody, or on an earlier connection); one whose message no
 * client read, and any for an instance that can never register again (it
 * sent no `instanceId`), is dropped (MailReturns' `keepAlone`, review
 * revba BA1, BA3). With the session away it is dropped (MailReturns.takeBack),
 * unless its message, confirmed, is not given back with it: then it is kept
 * for the client instance given that message (KeptControls.ts) — at a
 * close, and at an `unregister`'s hand-back alike (`handBack`: its client
 * instance may register again; helper unregctl).
 * What custody gives back is told to the mailbox concern first
 * (`unconfirmed`), with whom it was written to: a copy of such a message
 * back in the mailbox was read, so a cancel of it there is kept for that
 * client (WithdrawnCopies.ts). Each connection's custody notes the client
 * instance every session registered as on it (`PeerCustody.registeredAs`,
 * per registration, nothing per message), so that holds however long the
 * mail waited unconfirmed (a receipt route, which also says so, goes after
 * an hour: review L2).
 *
 * Ownership: the Router's synchronous code only — the writer's `written`
 * call, the reader's `received` frames, and the detach. One FIFO per
 * connection of (frame count, message) in two parallel arrays, and the
 * highest count its client confirmed: a confirmation may overtake the
 * bookkeeping, because the client can read a frame before the write that
 * carried it completes.
 */
import { decodeReceivedCount } from "../protocol/decode.ts"
import { RECEIVED_V1 } from "../protocol/features.ts"
import type { ControlFrame } from "./ControlFrame.ts"
import { isControl } from "./OutboundItems.ts"
import type { Mail, Peer, Written } from "./Peer.ts"
import type { SessionInstance } from "./Registry.ts"
import type { WriteBatch } from "./WriteBatch.ts"
import type { RegistrationHooks } from "./Registration.ts"
import type { FrameHandlers, RouterContext } from "./RouterContext.ts"

/** The registry key of the session a written item was meant for. */
const keyOf = (item: Written): string => "owedTo" in item ? item.owedTo : item.to

/** Slots a FIFO's first hold gives it (a power of two: the arrays are a ring indexed by `& mask`). */
const FIRST_SLOTS = 64

/** Sessions a connection's custody knows the instance of before it lets go those it holds nothing for. */
const MAX_IDLE_INSTANCES = 8

/** Slots an emptied FIFO keeps for reuse; past this it lets its rings go (a burst's worth of room is not kept). */
const KEEP_SLOTS = 1_024

/**
 * One connection's mail, notices and control frames written but not yet confirmed read; see the module
 * header. The entries in use are the `count` slots from `head` of two parallel rings
 * (their length a power of two, indexes wrapped by `mask`): released slots are reused
 * in place, so a connection that is confirmed as fast as it is written allocates nothing
 * per message, and nothing is ever compacted. A connection that never held anything has
 * empty rings; the first hold makes them `FIRST_SLOTS` long, and a ring that fills doubles.
 *
 * Why a ring (docs/performance.md, "Durable per message, thirteenth stop"): the arrays
 * used to be compacted once many entries were released from the front, a test first
 * reached when a confirmation left entries pending. In a w64 run that is when two windows
 * are first in flight, after V8 had optimized `confirm` on confirmations that emptied the
 * FIFO, so it deoptimized `confirm` in every durable run. Every test `confirm` makes now
 * runs on each call; only letting a burst's rings go is first run late. And the rings are
 * replaced (`grow`) on a connection's first hold, long before V8 optimizes anything, so the
 * fields are not "constant" to V8 when a later `grow` replaces them again (a write to a field
 * V8 took for constant deoptimizes the code that read it).
 */
export class PeerCustody {
  private ends: Array<number> = []
  private items: Array<Written | undefined> = []
  /** The rings' length less one; -1 while they are empty. */
  private mask = -1
  private head = 0
  private count = 0
  private confirmed = 0
  private readonly release: (mail: Mail) => void
  private readonly releaseNotice: (seq: number) => void
  /**
   * The client instance of each session registered with custody on this connection, by session key
   * (`registeredAs`, per registration, nothing per message): whom what it holds for that key was written
   * to, however long ago (review L2: a receipt route says so only for an hour).
   */
  private readonly instances = new Map<string, SessionInstance>()

  /**
   * @param release lets the store forget one message (StoreJournal.mailGone; nothing in memory mode).
   * @param releaseNotice lets the store forget one failure notice (StoreJournal.noticeGone; nothing in memory mode).
   */
  constructor(release: (mail: Mail) => void, releaseNotice: (seq: number) => void = () => {}) {
    this.release = release
    this.releaseNotice = releaseNotice
  }

  /** The session `key` registered on this connection as client instance `instance`: what is held for it is written to that one. */
  registeredAs(key: string, instance: SessionInstance): void {
    // Bounded by what is held: past a few keys (one connection registered as many sessions), those
    // nothing is held for are let go (a scan, at a registration only).
    if (this.instances.size >= MAX_IDLE_INSTANCES && !this.instances.has(key)) {
      const held = new Set<string>()
      for (let i = 0; i < this.count; i++) {
        const item = this.items[(this.head + i) & this.mask]
        if (item !== undefined) held.add(keyOf(item))
      }
      for (const known of this.instances.keys()) if (!held.has(known)) this.instances.delete(known)
    }
    this.instances.set(key, instance)
  }

  /** The client instance what is held for the session `key` was written to, if it registered here with custody. */
  instanceOf(key: string): SessionInstance | undefined {
    return this.instances.get(key)
  }

  /** `item` went out in the connection's frame number `end` (1-based, counted since it connected). */
  hold(end: number, item: Written): void {
    if (end <= this.confirmed) {
      if ("mail" in item) this.release(item.mail)
      else if (!isControl(item) && item.seq !== undefined) this.releaseNotice(item.seq)
      return
    }
    if (this.count > this.mask) this.grow()
    const slot = (this.head + this.count) & this.mask
    this.ends[slot] = end
    this.items[slot] = item
    this.count++
  }

  /** The client has read `frames` frames: the mail they carried is released. */
  confirm(frames: number): void {
    if (frames <= this.confirmed) return
    this.confirmed = frames
    const ends = this.ends
    const items = this.items
    const mask = this.mask
    let head = this.head
    let count = this.count
    while (count > 0 && ends[head]! <= frames) {
      const item = items[head]
      items[head] = undefined
      head = (head + 1) & mask
      count--
      if (item === undefined) continue
      if ("mail" in item) this.release(item.mail)
      else if (!isControl(item) && item.seq !== undefined) this.releaseNotice(item.seq)
    }
    this.head = head
    this.count = count
    // Both tests run on every call (see the class's doc); the branch is taken only after a burst.
    const empty = count === 0
    const large = mask >= KEEP_SLOTS
    if (empty && large) this.restart()
  }

  /**
   * The connection closed with the broker alive: what is still held, oldest
   * first, to go back like unwritten output (it stays in the store meanwhile).
   */
  takeBack(): ReadonlyArray<Written> {
    const unread: Array<Written> = []
    for (let i = 0; i < this.count; i++) {
      const item = this.items[(this.head + i) & this.mask]
      if (item !== undefined) unread.push(item)
    }
    this.restart()
    return unread
  }

  /**
   * The session `key` ended by `unregister`: the mail and notices held for
   * it, oldest first, to go back like unwritten output (its client confirms
   * nothing after its `unregister`). The rest stays held; the slots emptied
   * are skipped, and those at the front let go at once.
   */
  takeBackFor(key: string): ReadonlyArray<Written> {
    const unread: Array<Written> = []
    for (let i = 0; i < this.count; i++) {
      const slot = (this.head + i) & this.mask
      const item = this.items[slot]
      if (item === undefined || keyOf(item) !== key) continue
      unread.push(item)
      this.items[slot] = undefined
    }
    while (this.count > 0 && this.items[this.head] === undefined) {
      this.head = (this.head + 1) & this.mask
      this.count--
    }
    return unread
  }

  /** Adds to `into` the sender of each message held for the session `key` (a scan: at a takeover only). */
  sendersFor(key: string, into: Set<string>): void {
    for (let i = 0; i < this.count; i++) {
      const item = this.items[(this.head + i) & this.mask]
      if (item !== undefined && "mail" in item && item.to === key) into.add(item.mail.senderKey)
    }
  }

  /** Whether the message of record key `messageKey` is held, not yet confirmed (a scan: for a cancel during a takeover's hold only). */
  holdsMessage(messageKey: string): boolean {
    return this.heldMail(messageKey, this.count) !== undefined
  }

  /**
   * The message of record key `messageKey` if it is held, not yet confirmed: a scan from the oldest, made
   * only for a reply accepted while this connection holds anything (AnsweredCopies.markAnswered: the ask it answers, read
   * and replied to before it was confirmed, is found at or near the front of a client confirming what it
   * handled). At most the `limit` oldest items are looked at.
   */
  heldMail(messageKey: string, limit: number): Mail | undefined {
    const n = Math.min(limit, this.count)
    for (let i = 0; i < n; i++) {
      const item = this.items[(this.head + i) & this.mask]
      if (item !== undefined && "mail" in item && item.mail.recordKey === messageKey) return item.mail
    }
    return undefined
  }

  /** Whether a reply to session `key` is held, not yet confirmed (a scan: for a settling answer during a takeover's hold only). */
  holdsReplyTo(key: string): boolean {
    for (let i = 0; i < this.count; i++) {
      const item = this.items[(this.head + i) & this.mask]
      if (item !== undefined && "mail" in item && item.to === key && item.mail.message.replyTo !== undefined) return true
    }
    return false
  }

  /** Whether the client confirmed reading the connection's frame number `end` (1-based). */
  confirmedThrough(end: number): boolean {
    return end <= this.confirmed
  }

  /** Mail, notices and control frames held, not yet confirmed (with the slots `takeBackFor` emptied that a confirmation has not passed). */
  get size(): number {
    return this.count
  }

  /** Slots in the rings (for tests: an emptied FIFO past `KEEP_SLOTS` lets its rings go). */
  get slots(): number {
    return this.mask + 1
  }

  /** Full (or never used): the entries move, in order, to the front of rings twice as long (`FIRST_SLOTS` at least). */
  private grow(): void {
    const slots = Math.max(FIRST_SLOTS, (this.mask + 1) * 2)
    const ends = new Array<number>(slots).fill(0)
    const items = new Array<Written | undefined>(slots).fill(undefined)
    for (let i = 0; i < this.count; i++) {
      const from = (this.head + i) & this.mask
      ends[i] = this.ends[from]!
      items[i] = this.items[from]
    }
    this.ends = ends
    this.items = items
    this.mask = slots - 1
    this.head = 0
  }

  /** Empty, its rings let go (the next hold makes new ones). */
  private restart(): void {
    this.ends = []
    this.items = []
    this.mask = -1
    this.head = 0
    this.count = 0
  }
}

/**
 * Where what a session that ends by `unregister` hands back goes
 * (`Custody.handBack`): the mailbox concern, as at a close (MailDelivery.ts).
 */
export interface HandBack {
  /**
   * Its custody's and write's unconfirmed items, oldest first
   * (MailReturns.giveBack): a control whose message is not among them (its
   * client confirmed that) is kept for that client instance's return.
   */
  readonly giveBack: (items: ReadonlyArray<Written>) => void
  /**
   * The controls its outbox and parked list held (OutputEnd.handOver, whose
   * mail went back already), decided as `giveBack` decides one, knowing
   * `items`, everything handed back (MailReturns.controlsHandedBack).
   */
  readonly controlsHandedBack: (controls: ReadonlyArray<ControlFrame>, items: ReadonlyArray<Written>) => void
}

/**
 * The Router's part of `received-v1`: gives custody to connections whose
 * client asked for it, takes their `received` frames, and says where written
 * mail goes (custody, or straight out of the store).
 */
export class Custody {
  private readonly ctx: RouterContext
  private readonly unconfirmed: (items: ReadonlyArray<Written>, custody: PeerCustody) => void
  private readonly back: HandBack

  /**
   * @param unconfirmed told of what custody gives back, written and never confirmed read, before it goes
   *   back, with the custody it comes from, which says whom it was written to (`PeerCustody.instanceOf`;
   *   MailDelivery.unconfirmed: a copy its sender cancels in the mailbox is kept for that client).
   * @param back takes what a session that ends by `unregister` hands back (`handBack`) as a close's
   *   give-back does (MailDelivery).
   */
  constructor(
    ctx: RouterContext,
    unconfirmed: (items: ReadonlyArray<Written>, custody: PeerCustody) => void,
    back: HandBack
  ) {
    this.ctx = ctx
    this.unconfirmed = unconfirmed
    this.back = back
  }

  /**
   * A client granted `received-v1` gets custody on registering (kept across a
   * re-registration that asks for it too, ended by one that does not). A session that ends by `unregister` hands back at once
   * what it was given and will never confirm (`handBack`), not when its
   * connection closes.
   */
  readonly hooks: RegistrationHooks = {
    left: (session, _now, unregistered) => {
      if (unregistered) this.handBack(session.peer, session.key)
    },
    registered: (session) => {
      const peer = session.peer
      if (!peer.features.has(RECEIVED_V1)) {
        // A registration that did not ask for it, on a connection an earlier one had it for: its client
        // confirms nothing, so custody would hold its mail to hand it back (a second copy) at its leave.
        // Ended; what an earlier session left unconfirmed (its `unregister` took its own) goes back.
        const held = peer.custody
        if (held === undefined) return
        peer.custody = undefined
        const unread = held.takeBack()
        this.unconfirmed(unread, held)
        for (const item of unread) this.ctx.output.undeliverable(item)
        return
      }
      if (peer.custody === undefined) {
        const journal = this.ctx.journal
        peer.custody = journal === undefined
          ? new PeerCustody(() => {})
          : new PeerCustody((mail) => journal.mailGone(mail.senderKey, mail.message.id, mail.targetKey), (seq) => journal.noticeGone(seq))
      }
      peer.custody.registeredAs(session.key, session.instance)
    }
  }

  readonly frames: FrameHandlers = {
    received: {
      handle: (peer, raw) => {
        if (peer.custody === undefined) {
          return this.ctx.protocolError(peer, `"received" frame without the ${RECEIVED_V1} extension`)
        }
        const frames = decodeReceivedCount(raw)
        if (typeof frames !== "number") return this.ctx.protocolError(peer, frames.message)
        peer.custody.confirm(frames)
      }
    }
  }

  /**
   * `peer`'s writer handed the first `count` frames of `batch` to its socket
   * (all of it, or the start of an unfinished write): the mail, notices and
   * control frames they carried go into custody; for a client without it, the mail and
   * notices go out of the store.
   */
  written(peer: Peer, batch: WriteBatch, count: number): void {
    const first = peer.framesWritten
    peer.framesWritten = first + count
    const journal = this.ctx.journal
    const custody = peer.custody
    if (journal === undefined && custody === undefined) return
    const returnable = batch.returnable
    for (let i = 0; i < returnable.length; i++) {
      const index = batch.returnableAt[i]!
      const item = returnable[i]!
      if (index >= count) continue
      if (custody !== undefined) custody.hold(first + index + 1, item)
      else if ("mail" in item) journal?.mailGone(item.mail.senderKey, item.mail.message.id, item.mail.targetKey)
      else if (!isControl(item) && item.seq !== undefined) journal?.noticeGone(item.seq)
    }
  }

  /**
   * `peer`'s session `key` ended by `unregister` (the connection lives on,
   * unregistered; its `session` is already cleared). Its client confirms
   * nothing from now on (a `received` after `unregister` is a protocol
   * error), so what was meant for the session goes back now, in the order it
   * was given, to the mailbox (or the session's next connection, or — for a
   * short-lived session — failed, MailReturns.requeue), where later mail
   * for the session queues behind it (architecture.md, "a receiver stops
   * reading, then leaves"). It used to go back only when the connection
   * closed, behind mail sent to the session since then. The
   * order is `Router.abandoned`'s: custody first, then the write in
   * progress, then the outbox.
   *
   * The write in progress goes on (the connection may register again), but
   * for a `received-v1` client its mail for the session leaves the batch
   * and goes back with the rest: written or not, it will not be confirmed.
   * What its client had already confirmed stays, to be released as the
   * write completes.
   *
   * It all goes back as a close's give-back goes (`HandBack`): a control
   * whose message is not handed back with it (its client confirmed that
   * message, and may have shown it) is kept for that client instance's
   * return, which may come after an `unregister` — but for a short-lived
   * session, which MailDelivery's `left` hook (it runs before this one)
   * noted as ended: it never comes back, so nothing is kept for it.
   *
   * A base client's write in progress is left alone: what its socket takes
   * counts as delivered, as ever, and what it never takes comes back only
   * at the close (`Router.abandonWrites`). Its outbox is handed back now
   * only when no write is in progress; behind one it stays, to come back
   * after that write's rest (as it did before), since handed back first it
   * would overtake it.
   */
  handBack(peer: Peer, key: string): void {
    const custody = peer.custody
    const output = this.ctx.output
    const batch = peer.writer.inFlight
    let given: ReadonlyArray<Written> = []
    if (custody !== undefined) {
      const unread = custody.size > 0 ? custody.takeBackFor(key) : []
      if (unread.length > 0) this.unconfirmed(unread, custody)
      // Its client reads these as the write completes: marked read like the rest (review revi I6).
      const taken = batch === undefined ? [] : this.unconfirmedOf(peer, custody, batch, key)
      if (taken.length > 0) this.unconfirmed(taken, custody)
      given = taken.length === 0 ? unread : [...unread, ...taken]
      // As at a close: a control whose message is not given back with it (its client confirmed that) is
      // kept for its client instance's return after the `unregister` (helper unregctl).
      if (given.length > 0) this.back.giveBack(given)
    } else if (batch !== undefined) return
    const handed: Array<Written> = []
    output.end.handOver(peer, undefined, handed)
    let controls: Array<ControlFrame> | undefined
    for (const item of handed) if (isControl(item)) (controls ??= []).push(item)
    if (controls !== undefined) this.back.controlsHandedBack(controls, given.length === 0 ? handed : [...given, ...handed])
  }

  /**
   * Takes out of `batch` (a write in progress on `peer`) the mail and
   * notices for the session `key` that its client has not confirmed, and
   * returns them in order; the write still carries their frames, but no
   * longer holds them when it completes.
   */
  private unconfirmedOf(peer: Peer, custody: PeerCustody, batch: WriteBatch, key: string): ReadonlyArray<Written> {
    const taken: Array<Written> = []
    const returnable = batch.returnable
    const at = batch.returnableAt
    let kept = 0
    for (let i = 0; i < returnable.length; i++) {
      const item = returnable[i]!
      const index = at[i]!
      const forKey = keyOf(item) === key
      if (forKey && !custody.confirmedThrough(peer.framesWritten + index + 1)) taken.push(item)
      else {
        returnable[kept] = item
        at[kept++] = index
      }
    }
    returnable.length = kept
    at.length = kept
    return taken
  }

  /**
   * The connection closed with the broker alive: the mail, notices and
   * control frames it wrote and its client never confirmed, oldest first, for `Router.detach`
   * to send back ahead of the output it never wrote (see the module header).
   */
  detached(peer: Peer): ReadonlyArray<Written> {
    const custody = peer.custody
    if (custody === undefined) return []
    const unread = custody.takeBack()
    this.unconfirmed(unread, custody)
    return unread
  }
}
