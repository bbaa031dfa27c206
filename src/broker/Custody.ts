/**
 * Custody of written mail (extension `received-v1`, issue 13). A durable
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
 * of that output. A client that had read it after all drops the copy
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
 * Ownership: the Router's synchronous code only — the writer's `written`
 * call, the reader's `received` frames, and the detach. One FIFO per
 * connection of (frame count, message) in two parallel arrays, and the
 * highest count its client confirmed: a confirmation may overtake the
 * bookkeeping, because the client can read a frame before the write that
 * carried it completes.
 */
import { decodeReceivedCount } from "../protocol/decode.ts"
import { RECEIVED_V1 } from "../protocol/features.ts"
import type { Mail, Peer, Returnable } from "./Peer.ts"
import type { WriteBatch } from "./WriteBatch.ts"
import type { RegistrationHooks } from "./Registration.ts"
import type { FrameHandlers, RouterContext } from "./RouterContext.ts"

/** Entries released from the front before the arrays are compacted. */
const COMPACT_AFTER = 1_024

/** Slots an emptied FIFO keeps for reuse; past this it lets its arrays go (a burst's worth of room is not kept). */
const KEEP_SLOTS = 1_024

/**
 * One connection's mail and notices written but not yet confirmed read; see the module
 * header. The entries in use are `[head, tail)` of the two arrays: an emptied
 * FIFO starts again at slot 0 of the same arrays, so a connection that is
 * confirmed as fast as it is written allocates nothing per message.
 */
export class PeerCustody {
  private ends: Array<number> = []
  private items: Array<Returnable | undefined> = []
  private head = 0
  private tail = 0
  private confirmed = 0
  private readonly release: (mail: Mail) => void
  private readonly releaseNotice: (seq: number) => void

  /**
   * @param release lets the store forget one message (StoreJournal.mailGone; nothing in memory mode).
   * @param releaseNotice lets the store forget one failure notice (StoreJournal.noticeGone; nothing in memory mode).
   */
  constructor(release: (mail: Mail) => void, releaseNotice: (seq: number) => void = () => {}) {
    this.release = release
    this.releaseNotice = releaseNotice
  }

  /** `item` went out in the connection's frame number `end` (1-based, counted since it connected). */
  hold(end: number, item: Returnable): void {
    if (end <= this.confirmed) {
      if ("mail" in item) this.release(item.mail)
      else if (item.seq !== undefined) this.releaseNotice(item.seq)
      return
    }
    const tail = this.tail
    this.ends[tail] = end
    this.items[tail] = item
    this.tail = tail + 1
  }

  /** The client has read `frames` frames: the mail they carried is released. */
  confirm(frames: number): void {
    if (frames <= this.confirmed) return
    this.confirmed = frames
    const ends = this.ends
    const items = this.items
    const tail = this.tail
    let head = this.head
    while (head < tail && ends[head]! <= frames) {
      const item = items[head]
      items[head++] = undefined
      if (item === undefined) continue
      if ("mail" in item) this.release(item.mail)
      else if (item.seq !== undefined) this.releaseNotice(item.seq)
    }
    this.head = head
    if (head === tail) {
      if (head > 0) this.clear()
    } else if (head >= COMPACT_AFTER && head * 2 >= tail) {
      this.ends = ends.slice(head, tail)
      this.items = items.slice(head, tail)
      this.head = 0
      this.tail = tail - head
    }
  }

  /**
   * The connection closed with the broker alive: what is still held, oldest
   * first, to go back like unwritten output (it stays in the store meanwhile).
   */
  takeBack(): ReadonlyArray<Returnable> {
    const unread: Array<Returnable> = []
    for (let i = this.head; i < this.tail; i++) {
      const item = this.items[i]
      if (item !== undefined) unread.push(item)
    }
    this.ends = []
    this.items = []
    this.head = this.tail = 0
    return unread
  }

  /** Mail and notices held, not yet confirmed. */
  get size(): number {
    return this.tail - this.head
  }

  /** Empty again: the arrays are reused from slot 0 (released slots hold no mail), unless a burst grew them. */
  private clear(): void {
    if (this.ends.length > KEEP_SLOTS) {
      this.ends = []
      this.items = []
    }
    this.head = this.tail = 0
  }
}

/**
 * The Router's part of `received-v1`: gives custody to connections whose
 * client asked for it, takes their `received` frames, and says where written
 * mail goes (custody, or straight out of the store).
 */
export class Custody {
  private readonly ctx: RouterContext

  constructor(ctx: RouterContext) {
    this.ctx = ctx
  }

  /** A client granted `received-v1` gets custody on registering (kept across a re-registration). */
  readonly hooks: RegistrationHooks = {
    registered: (session) => {
      const peer = session.peer
      if (peer.custody !== undefined || !peer.features.has(RECEIVED_V1)) return
      const journal = this.ctx.journal
      peer.custody = journal === undefined
        ? new PeerCustody(() => {})
        : new PeerCustody((mail) => journal.mailGone(mail.senderKey, mail.message.id), (seq) => journal.noticeGone(seq))
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
   * (all of it, or the start of an unfinished write): the mail and notices
   * they carried go into custody; for a client without it, the mail and
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
      else if ("mail" in item) journal?.mailGone(item.mail.senderKey, item.mail.message.id)
      else if (item.seq !== undefined) journal?.noticeGone(item.seq)
    }
  }

  /**
   * The connection closed with the broker alive: the mail and notices it
   * wrote and its client never confirmed, oldest first, for `Router.detach`
   * to send back ahead of the output it never wrote (see the module header).
   */
  detached(peer: Peer): ReadonlyArray<Returnable> {
    return peer.custody?.takeBack() ?? []
  }
}
