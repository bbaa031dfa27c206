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
 * Ownership: the Router's synchronous code only — the writer's `written`
 * call, the reader's `received` frames, and the detach. One FIFO per
 * connection of (frame count, record key) in two parallel arrays, and the
 * highest count its client confirmed: a confirmation may overtake the
 * bookkeeping, because the client can read a frame before the write that
 * carried it completes. When the connection closes with the broker alive,
 * what is still in custody counts as delivered, as it does for a client
 * without the extension (an orderly close reads to the end).
 */
import { decodeClientFrame, isFrameDecodeError } from "../protocol/decode.ts"
import { RECEIVED_V1 } from "../protocol/features.ts"
import type { WriteBatch } from "./Output.ts"
import type { Peer } from "./Peer.ts"
import type { RegistrationHooks } from "./Registration.ts"
import type { FrameHandlers, RouterContext } from "./RouterContext.ts"

/** Entries released from the front before the arrays are compacted. */
const COMPACT_AFTER = 1_024

/** One connection's mail written but not yet confirmed read; see the module header. */
export class PeerCustody {
  private ends: Array<number> = []
  private keys: Array<string> = []
  private head = 0
  private confirmed = 0
  private readonly release: (recordKey: string) => void

  /** @param release lets the store forget one message (StoreJournal.mailGone). */
  constructor(release: (recordKey: string) => void) {
    this.release = release
  }

  /** Mail for `recordKey` went out in the connection's frame number `end` (1-based, counted since it connected). */
  hold(end: number, recordKey: string): void {
    if (end <= this.confirmed) return this.release(recordKey)
    this.ends.push(end)
    this.keys.push(recordKey)
  }

  /** The client has read `frames` frames: the mail they carried is released. */
  confirm(frames: number): void {
    if (frames <= this.confirmed) return
    this.confirmed = frames
    const ends = this.ends
    let head = this.head
    while (head < ends.length && ends[head]! <= frames) this.release(this.keys[head++]!)
    this.head = head
    if (head === ends.length) {
      if (head > 0) this.clear()
    } else if (head >= COMPACT_AFTER && head * 2 >= ends.length) {
      this.ends = ends.slice(head)
      this.keys = this.keys.slice(head)
      this.head = 0
    }
  }

  /** The connection closed with the broker alive: everything still held counts as delivered. */
  releaseAll(): void {
    for (let i = this.head; i < this.keys.length; i++) this.release(this.keys[i]!)
    this.clear()
  }

  /** Mail held, not yet confirmed. */
  get size(): number {
    return this.ends.length - this.head
  }

  private clear(): void {
    this.ends = []
    this.keys = []
    this.head = 0
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
      const journal = this.ctx.journal
      if (journal === undefined || peer.custody !== undefined || !peer.features.has(RECEIVED_V1)) return
      peer.custody = new PeerCustody((recordKey) => journal.mailGone(recordKey))
    }
  }

  readonly frames: FrameHandlers = {
    received: {
      handle: (peer, raw) => {
        if (peer.custody === undefined) {
          return this.ctx.protocolError(peer, `"received" frame without the ${RECEIVED_V1} extension`)
        }
        const frame = decodeClientFrame.received(raw)
        if (isFrameDecodeError(frame)) return this.ctx.protocolError(peer, frame.message)
        peer.custody.confirm(frame.frames)
      }
    }
  }

  /**
   * `peer`'s writer handed the first `count` frames of `batch` to its socket
   * (all of it, or the start of an unfinished write): the mail they carried
   * goes into custody, or out of the store for a client without it.
   */
  written(peer: Peer, batch: WriteBatch, count: number): void {
    const journal = this.ctx.journal
    if (journal === undefined) return
    const first = peer.framesWritten
    peer.framesWritten = first + count
    const custody = peer.custody
    for (const [index, item] of batch.returnable) {
      if (index >= count || !("mail" in item)) continue
      if (custody === undefined) journal.mailGone(item.mail.recordKey)
      else custody.hold(first + index + 1, item.mail.recordKey)
    }
  }

  /** The connection closed with the broker alive (see the module header). */
  detached(peer: Peer): void {
    peer.custody?.releaseAll()
  }
}
