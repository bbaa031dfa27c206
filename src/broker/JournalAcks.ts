/**
 * The store journal's held acknowledgements (durable mode, clients granted
 * `received-v1`; StoreJournal.ts): those waiting for a commit (`hold`), in
 * the order they were made, and those waiting for their message's read or
 * a commit, whichever comes first (`holdUntilRead`) — on the message's mail
 * entry (`JournalMail.ack`) when it is the last put, else in ReadAcks. It
 * releases them, in order, once the changes they reveal are stored, or
 * their message is read, and refuses, after a failed commit, the sends
 * they stand for whose mail was never stored (`failed`).
 *
 * Owned by the StoreJournal (and through it by the Router's synchronous
 * code), which keeps the change counts and passes them in: this module
 * holds no count of its own. Kept apart so the journal's batch and mail
 * code stays apart from the order acknowledgements are released in.
 */
import type { OutFrame } from "../protocol/framing.ts"
import type { ByMessage } from "./ByMessage.ts"
import { HeldAck, HeldAckWithNotice, type JournalMail } from "./JournalEntries.ts"
import type { Peer } from "./Peer.ts"
import { ReadAcks, released } from "./ReadAcks.ts"

/** The acknowledgements held behind a commit or a read; see the module header. */
export class JournalAcks {
  /** Acknowledgements waiting for a commit, in the order they were made (their `upTo` never decreases). */
  private heldAcks: Array<HeldAck> = []
  /**
   * Acknowledgements waiting for their message's read or a commit, whichever comes first
   * (`holdUntilRead`), that are not on their message's entry: asks, and any whose put was not the last.
   */
  private readonly readAcks = new ReadAcks<HeldAck>()
  private readonly storedMail: ByMessage<JournalMail>
  private readonly releaseAcks: (ready: ReadonlyArray<HeldAck>) => void
  private readonly refuseUnstored: (ack: HeldAck, reason: string, dropFor: string | undefined) => boolean

  /**
   * @param storedMail the journal's table of mail stored or about to be: a failed commit refuses a send whose mail there is still pending.
   * @param releaseAcks queues held acknowledgements whose changes are stored, in order (StoreJournal's constructor).
   * @param refuseUnstored refuses the send a held acknowledgement stands for (StoreJournal's constructor).
   */
  constructor(
    storedMail: ByMessage<JournalMail>,
    releaseAcks: (ready: ReadonlyArray<HeldAck>) => void,
    refuseUnstored: (ack: HeldAck, reason: string, dropFor: string | undefined) => boolean
  ) {
    this.storedMail = storedMail
    this.releaseAcks = releaseAcks
    this.refuseUnstored = refuseUnstored
  }

  /**
   * An acknowledgement for `peer` of `messageId` that waits for the changes
   * up to `upTo` to be stored (StoreJournal.holdAck), with `notice` right
   * behind it, released and refused with it (HeldAckWithNotice). `targetKey`:
   * the session the send's mail is for, when the answer knows it.
   */
  hold(
    peer: Peer,
    messageId: string,
    delivery: "socket_delivered" | "queued",
    upTo: number,
    notice?: OutFrame,
    targetKey?: string
  ): void {
    // Never in ReadAcks; its sender's key and session find its mail if a failed commit refuses it (`refuseHeld`).
    const senderKey = peer.session?.key ?? ""
    this.heldAcks.push(
      notice === undefined
        ? new HeldAck(peer, senderKey, messageId, delivery, upTo, false, targetKey)
        : new HeldAckWithNotice(peer, senderKey, messageId, delivery, upTo, notice, targetKey)
    )
  }

  /**
   * An acknowledgement released by its message's read or the commit of the
   * changes up to `upTo`, whichever comes first (StoreJournal.holdAckUntilRead).
   * `entry` is the entry of the last mail put.
   */
  holdUntilRead(
    peer: Peer,
    senderKey: string,
    messageId: string,
    byReceipt: boolean,
    upTo: number,
    entry: JournalMail | undefined
  ): void {
    const ack = new HeldAck(peer, senderKey, messageId, "socket_delivered", upTo, byReceipt)
    // A plain message or a reply just put (Send puts it, then holds its acknowledgement): the ack waits on
    // the entry, released by the lookup that drops it (`mailGone`) or by the commit that takes it.
    if (
      byReceipt && entry !== undefined && entry.pending && entry.ack === undefined && entry.id === messageId &&
      entry.senderKey === senderKey
    ) {
      entry.ack = ack
      return
    }
    const previous = this.readAcks.hold(ack)
    if (previous.length > 0) this.heldAcks.push(...previous)
  }

  /**
   * The reply (`replySender`, `replyId`) closed the edge of the ask
   * (`askSender`, `askId`): the ask's acknowledgement, if still held until a
   * read, is released with the reply's (StoreJournal.answered). `entry` is
   * the entry of the last mail put.
   */
  answered(askSender: string, askId: string, replySender: string, replyId: string, entry: JournalMail | undefined): void {
    if (this.readAcks.size === 0) return
    const onEntry = entry !== undefined && entry.id === replyId && entry.senderKey === replySender ? entry.ack : undefined
    const carried = onEntry === undefined
      ? this.readAcks.answered(askSender, askId, replySender, replyId)
      : this.readAcks.answeredBy(askSender, askId, onEntry)
    if (carried.length > 0) this.heldAcks.push(...carried)
  }

  /** `senderKey`'s message `messageId` was read (or dropped, its sender told): an acknowledgement held for that need not wait for the commit. */
  read(senderKey: string, messageId: string): void {
    if (this.readAcks.size === 0) return
    const read = this.readAcks.read(senderKey, messageId)
    if (read.length > 0) this.releaseAcks(read)
  }

  /** `entry` left the store (read or dropped): the acknowledgement waiting on it, if any, is released now. */
  releaseEntry(entry: JournalMail): void {
    const ack = entry.ack
    if (ack === undefined) return
    entry.ack = undefined
    this.releaseAcks(released(ack))
  }

  /** `entry` was replaced by another row of its message: an acknowledgement waiting on it waits for a commit instead. */
  unhookEntry(entry: JournalMail): void {
    const ack = entry.ack
    entry.ack = undefined
    if (ack !== undefined) this.heldAcks.push(...released(ack))
  }

  /** The acknowledgements waiting on entries just stored, those not released by a read meanwhile. */
  releaseTaken(acked: ReadonlyArray<JournalMail>): void {
    const out: Array<HeldAck> = []
    for (let i = 0; i < acked.length; i++) {
      const entry = acked[i]!
      const ack = entry.ack
      if (ack === undefined) continue
      entry.ack = undefined
      out.push(ack)
      if (ack.answered !== undefined) out.push(ack.answered)
    }
    if (out.length > 0) this.releaseAcks(out)
  }

  /** The changes up to `stored` are stored: the acknowledgements waiting for no more go, in order. */
  releaseStored(stored: number): void {
    const read = this.readAcks.stored(stored)
    if (read.length > 0) this.releaseAcks(read)
    const held = this.heldAcks
    let ready = 0
    for (const ack of held) {
      if (ack.upTo > stored) break
      ready++
    }
    if (ready === 0) return
    this.heldAcks = ready === held.length ? [] : held.slice(ready)
    this.releaseAcks(ready === held.length ? held : held.slice(0, ready))
  }

  /** A commit failed with `reason`: the held sends whose mail was never stored are refused (`refuseHeld`). */
  failed(reason: string): void {
    if (this.heldAcks.length > 0) this.refuseHeld(reason)
  }

  /**
   * Refuses `ack`, a held `queued` acknowledgement, dropping the mail of a pending (never stored) put of its
   * sender's message under its id for the session the acknowledgement names (`HeldAck.targetKey`: a send's first
   * answer, and a retry's answered from its record, SendReplays.replayed), found in the mailbox by that session
   * (`refuseUnstored`), and not one `dropped` already. Paired with the first pending row under the id instead, the
   * refusal of a send handed meanwhile to its returned session dropped another session's message, and that one's
   * own send was refused as a retry (task byid item 2); a retry did the same until it named its session too
   * (review rvbf probe 2). One that names none — a retry whose `to` names no session now
   * (SendReplays.replayedUnresolved: a durable broker restarted before its target came back, or the target was
   * forgotten; or a `supervisor_send` refused with its supervisor away) — drops nothing: no row under the id is known
   * to be its message's. Rows under an id another message's row holds for another session follow it
   * (JournalMail.sameId). The session whose mail it dropped when it was refused.
   */
  private refuseAndDrop(ack: HeldAck, reason: string, dropped: Set<JournalMail>): string | undefined {
    const target = ack.targetKey
    if (target === undefined) return undefined
    for (let entry = this.storedMail.get(ack.senderKey, ack.id); entry !== undefined; entry = entry.sameId) {
      if (entry.targetKey !== target || !entry.pending || dropped.has(entry)) continue
      // Its drop takes the row out of the chain (`mailGone`): the walk ends here.
      if (this.refuseUnstored(ack, reason, entry.targetKey)) {
        dropped.add(entry)
        return entry.targetKey
      }
    }
    return undefined
  }

  /** Whether a row of `senderKey`'s message `id` for any session is still kept (pending or stored), not one `dropped`. */
  private rowLeftUnder(senderKey: string, id: string, dropped: Set<JournalMail>): boolean {
    for (let entry = this.storedMail.get(senderKey, id); entry !== undefined; entry = entry.sameId) {
      if (!dropped.has(entry)) return true
    }
    return false
  }

  /**
   * After a failed commit: the sends whose acknowledgement waits for a commit
   * (`hold`) and whose mail is queued for an absent recipient and was never
   * stored are refused with `reason` now, as a send made now would be, and
   * their mail dropped: left waiting, their senders timed out not knowing
   * whether they were sent, and the broker delivered them once a commit
   * succeeded, so a resend arrived twice. Refused, they were never sent, and
   * a retry of one is judged afresh. Mail already on its way to a live
   * recipient stays held (it cannot be taken back), and so does its
   * acknowledgement, until a commit succeeds.
   */
  private refuseHeld(reason: string): void {
    const held = this.heldAcks
    this.heldAcks = []
    const kept: Array<HeldAck> = []
    // Sends refused in this pass, by sender, id and session: a second acknowledgement of one (a retry's) is refused
    // too, without a drop, so a send under the id for another session, whose mail was not dropped, is not refused
    // as a retry of it (task byid item 2). One that names no session is refused so only when no row under the id is
    // left: then every message under it this pass knew of was refused and dropped, its own too, and acknowledged
    // later it would claim a message nothing holds (review rvlate1 probe 1); while another session's row is left,
    // another send's refusal under the id says nothing of its message (review rvbf probe 1).
    const refused = new Set<string>()
    const refusedIds = new Set<string>()
    const dropped = new Set<JournalMail>()
    for (let i = 0; i < held.length; i++) {
      const ack = held[i]!
      const target = ack.targetKey
      const droppedFor = ack.delivery === "queued" ? this.refuseAndDrop(ack, reason, dropped) : undefined
      if (droppedFor !== undefined) {
        // Pending: its put was never stored, so nothing acknowledged it yet.
        refused.add(`${ack.senderKey}\u0000${ack.id}\u0000${droppedFor}`)
        refusedIds.add(`${ack.senderKey}\u0000${ack.id}`)
        continue
      }
      if (
        target !== undefined && refused.has(`${ack.senderKey}\u0000${ack.id}\u0000${target}`) &&
        this.refuseUnstored(ack, reason, undefined)
      ) continue
      if (
        target === undefined && ack.delivery === "queued" && refusedIds.has(`${ack.senderKey}\u0000${ack.id}`) &&
        !this.rowLeftUnder(ack.senderKey, ack.id, dropped) && this.refuseUnstored(ack, reason, undefined)
      ) continue
      kept.push(ack)
    }
    // Acknowledgements held meanwhile (none are expected: refusing changes nothing they wait on) come after.
    this.heldAcks = this.heldAcks.length === 0 ? kept : [...kept, ...this.heldAcks]
  }
}
