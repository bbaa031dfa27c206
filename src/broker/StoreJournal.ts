/**
 * Size: about 745 lines, past the ~400 guideline: one concept, the change
 * counts and the mail rows (one per message and target session, `setEntry`) that `putMail` and `mailGone` move for every
 * message, with the batch they are taken into — kept in one class so those
 * two move those rows with no call between. Apart: the held acknowledgements and
 * what a failed commit refuses (JournalAcks.ts), ask edges and withdrawals
 * (EdgeJournal.ts), failure notices (NoticeJournal.ts), silenced asks
 * (SilencedJournal.ts), the entries per message (JournalEntries.ts).
 *
 * The store journal: what the routing state changed since the last commit,
 * for the store writer to save in one transaction — and the gate that keeps
 * output behind that commit.
 *
 * The Router's synchronous code is its only writer (it never runs SQL): a
 * replay record set or rewritten, mail accepted, mail written or dropped,
 * mail given back to the mailbox (its row dated anew, `mailGivenBack`), an
 * ask edge opened or closed, an ask withdrawn after its reply closed it, a
 * failure notice owed to a sender or read (NoticeJournal.ts), an `expired`
 * owed for an ask that went silently as answered (SilencedJournal.ts). Changes to one
 * key's mail or edge coalesce until they are taken (mail read before its
 * commit never reaches the disk at all); a key's replay records go in the
 * order they were made, the later winning in the store.
 *
 * The promise it keeps ("acknowledged is a promise", design.md): no output
 * that reveals a change — an acknowledgement, a delivery, a cancel's answer or its control to the receiver,
 * a lost-mail notice — is written to a socket before the changes that
 * preceded it are stored, with one exception that keeps the promise by
 * other means: between clients granted `received-v1`, an acknowledgement may
 * instead wait for its message to be read (`holdAckUntilRead`). So a message
 * is acknowledged only once it is stored, or read by its recipient's client;
 * it is delivered to a base client only once its replay record is stored (a
 * retry after a crash is answered from it, never delivered again); a client
 * that drops copies itself (`received-v1`) gets it at once (`markDelivery`).
 *
 * When it commits: output that waits (`mark`, `holdAck`) wakes the store
 * writer at once, so a batch of such output waits for at most one commit,
 * shared by everyone in that tick; so does a give-back (`mailGivenBack`). Changes nothing waits for are stored
 * `LAZY_FLUSH` after the first of them (StoreWriter.ts), or with the next
 * commit someone waits for. While commits fail (disk full, I/O error),
 * output stays held and new sends are refused with `failure`'s text; what
 * was taken is put back and retried. A held send whose mail waits for an
 * absent recipient and was never stored is refused too, and its mail
 * dropped (JournalAcks.ts, `refuseHeld`).
 *
 * Its table of mail is found by the message's sender and id (ByMessage.ts),
 * not by a record key string: building and hashing one per message was
 * durable mode's own cost (docs/performance.md, "Durable, eighth stop"). A
 * plain message's or a reply's acknowledgement held until read waits on
 * that message's mail entry (`JournalMail.ack`), so the one lookup that
 * drops the mail releases it: it has no table of its own (docs/performance.md,
 * "Durable, ninth stop"); an ask's waits in ReadAcks. The held
 * acknowledgements and their release order are JournalAcks.ts's.
 */
import { Deferred, Effect } from "effect"
import type { OutFrame } from "../protocol/framing.ts"
import type { MailCommit, StoredMail, StoredRecord } from "../store/MailStore.ts"
import type { AskEdge } from "./AskEdges.ts"
import type { BrokerStamps } from "./BrokerStamps.ts"
import { ByMessage } from "./ByMessage.ts"
import { type Fingerprint, type Outcome, recordKeyOf } from "./DeliveryRecords.ts"
import { EdgeJournal } from "./EdgeJournal.ts"
import { JournalAcks } from "./JournalAcks.ts"
import { type HeldAck, JournalMail, SentRecord } from "./JournalEntries.ts"
import { NoticeJournal } from "./NoticeJournal.ts"
import type { OutboundRecord } from "./OutboundRecord.ts"
import type { Mail, Peer } from "./Peer.ts"
import { SilencedJournal } from "./SilencedJournal.ts"

/** Mail given back to the mailbox (`mailGivenBack`): the copy queued there, and the first `seq` accepted after. */
interface GivenBack {
  readonly mail: Mail
  readonly after: number
}

/** A batch taken for commit, and how far the journal had got when it was taken. */
export interface TakenBatch {
  readonly batch: MailCommit
  /** The change count the batch covers: once it is stored, output up to here may go. */
  readonly upTo: number
  /** Entries taken whose message's acknowledgement waits on them (`JournalMail.ack`): released once stored, unless read first. */
  readonly acked?: ReadonlyArray<JournalMail> | undefined
}

const EMPTY_COMMIT: MailCommit = { records: [], mailPuts: [], mailDeletes: [], edgePuts: [], edgeDeletes: [] }

/**
 * Placeholders in the table of mail (ByMessage.ts). A power of two at least
 * the entries live at once keeps V8 from shrinking and regrowing the table
 * as they come and go: 256, fan-in's 16 senders × 16 in flight. At 128 (w64's
 * 64 in flight) fan-in's table went 1,024 ↔ 512 slots (docs/performance.md,
 * "Durable fan-in, thirty-first stop").
 */
const MAIL_TABLE_FLOOR = 256

/** How often stored replay records and ask edges past their time are dropped (ms). */
const PRUNE_EVERY_MS = 60_000

/** The journal of changes not yet stored; see the module header. */
export class StoreJournal {
  /**
   * Replay records set or rewritten, in order. A key rewritten before the commit is in it twice: the
   * store applies a commit's records in order, so the later wins (MailStore.ts), and a map per key cost
   * more per message than the rare second copy (docs/performance.md, "Durable, seventh stop").
   */
  private records: Array<StoredRecord> = []
  /** Mail put since the last take, in order; those no longer `pending` were written or dropped meanwhile. */
  private puts: Array<JournalMail> = []
  /** How many of `puts` are still `pending`. */
  private pendingPuts = 0
  /** Stored mail to delete, by its `seq`. */
  private mailDeletes = new Set<number>()
  /**
   * Mail stored or about to be that was given back to the mailbox since (`mailGivenBack`), with the copy the
   * mailbox holds (its new date): a pending put takes the mark, a stored row is written again. Empty but for
   * mail given back since the last take.
   */
  private readonly givenBack = new Map<JournalMail, GivenBack>()
  /** Ask edges opened and closed, asks withdrawn after their reply closed them (EdgeJournal.ts). */
  private readonly edges = new EdgeJournal()
  private readonly notices = new NoticeJournal()
  /** `expired` owed for asks that went silently as answered, by their reply (SilencedJournal.ts). */
  private readonly silenced = new SilencedJournal()
  /**
   * Mail stored or about to be (`pending`), by sender and id: only those need a delete, or a put dropped.
   * Filled by each window of sends and drained by their reads: its floor keeps V8 from shrinking and
   * regrowing its table every window (ByMessage.ts). Messages under one id for several sessions (Mailbox.ts)
   * each keep their entry: the table holds the first, the rest follow it (`JournalMail.sameId`), one per session.
   */
  private readonly storedMail = new ByMessage<JournalMail>(MAIL_TABLE_FLOOR)
  /** Entries that follow another of their sender and id (`sameId`), not in `storedMail` itself. */
  private chained = 0
  private nextSeq = 1
  /** Changes appended, ever. */
  private appended = 0
  /** Changes stored, ever. */
  private stored = 0
  private nextCommit: Deferred.Deferred<void> | undefined
  private lastPrune = 0
  /** The broker's stamps, once restored (`restoreStamps`): their highest is stored when it moved (`take`). */
  private stamps: BrokerStamps | undefined = undefined
  /** The highest stamp stored (or, while a commit of a higher one is in flight, still the one before it). */
  private stampStored = Number.NEGATIVE_INFINITY
  /** Acknowledgements waiting for a commit, or for their message's read or a commit (JournalAcks.ts). */
  private readonly acks: JournalAcks
  /** The entry of the last mail put: `holdAckUntilRead` for that message hangs its acknowledgement on it. */
  private lastPut: JournalMail | undefined = undefined
  /** The writer was woken for output that waits (`mark`, `holdAck`) and has not taken a batch since. */
  private woken = false
  /** The lazy flush was signalled and the writer has not taken a batch since. */
  private lazyWoken = false
  private readonly wake: () => void
  private readonly wakeLazy: () => void
  private readonly retentionMs: number
  /** Why the last commit failed; undefined while commits succeed. */
  failure: string | undefined = undefined

  /**
   * @param wake tells the store writer that output waits for a commit.
   * @param retentionMs how long replay records are kept (stored ones older are pruned).
   * @param wakeLazy tells the store writer that changes or deletes wait that no output waits for (it commits them `LAZY_FLUSH` later).
   * @param releaseAcks queues held acknowledgements whose changes are stored, in order (`holdAck`).
   * @param refuseUnstored after a failed commit, refuses the send a held acknowledgement (`holdAck`) stands for
   *   instead, with the failure's `reason`: with `dropFor` (the session its mail is for, found by its pending row),
   *   only when that mail is still queued (the mail is dropped then, Router.refuseUnstored); true when it was refused.
   */
  constructor(
    wake: () => void,
    retentionMs: number,
    wakeLazy: () => void = () => {},
    releaseAcks: (ready: ReadonlyArray<HeldAck>) => void = () => {},
    refuseUnstored: (ack: HeldAck, reason: string, dropFor: string | undefined) => boolean = () => false
  ) {
    this.wake = wake
    this.wakeLazy = wakeLazy
    this.acks = new JournalAcks(this.storedMail, releaseAcks, refuseUnstored)
    this.retentionMs = retentionMs
  }

  /** Whether every change appended so far is stored. */
  get isStored(): boolean {
    return this.stored >= this.appended
  }

  /** Whether `peer` may write: the changes its queued output reveals are stored. */
  mayWrite(peer: Peer): boolean {
    return peer.storeMark <= this.stored
  }

  /**
   * Output just queued for `peer` reveals the changes made so far (an
   * acknowledgement, a delivery): its writer waits until they are stored.
   * Output that reveals nothing (a refusal, a list) is not held, so a
   * session with nothing waiting still hears at once that sends are refused.
   */
  mark(peer: Peer): void {
    peer.storeMark = this.appended
    this.commitSoon()
  }

  /**
   * A delivery was just queued for `peer`. It reveals the message's replay
   * record, so a base client's writer waits for the commit: a broker killed
   * before it would deliver the sender's retry a second time, and a base
   * client shows both. A client granted `received-v1` drops a (sender, id)
   * it has read already (`RecentMessages`), so its delivery goes at once and
   * only the sender's acknowledgement waits. An ask goes at once too: if the
   * broker is killed before its edge is stored, a reply after the restart
   * finds no ask (P62) until the asker, never acknowledged, sends it again,
   * and `IntercomClient` retries such a reply for `rejoinGraceMs` after it
   * reconnected (docs/store.md).
   */
  markDelivery(peer: Peer): void {
    if (peer.custody === undefined) this.mark(peer)
  }

  /**
   * An acknowledgement for `peer`, a client granted `received-v1`, that
   * reveals the changes made so far: instead of holding `peer`'s whole
   * outbox behind the commit (`mark`), it waits here and is queued once they
   * are stored (`releaseAcks`), after whatever the connection was sent
   * meanwhile. So a message to a session is not held behind the commit of
   * that session's own last send — an ask's answer behind the reply before
   * it. Such a client matches acknowledgements by message id, in any order
   * relative to the messages it receives (docs/protocol.md, `received-v1`).
   * A `notice` goes right behind it, released and refused with it
   * (HeldAckWithNotice: a replayed ask's `ask_answered_elsewhere`). `targetKey`: the session the send's mail is
   * for, when the answer knows it — a failed commit refuses the send by that session's row (JournalAcks.refuseHeld).
   */
  holdAck(peer: Peer, messageId: string, delivery: "socket_delivered" | "queued", notice?: OutFrame, targetKey?: string): void {
    this.acks.hold(peer, messageId, delivery, this.appended, notice, targetKey)
    // Everything it waits for is stored already (a same-id retry answered from its record on a quiet
    // broker): no commit will come to release it, so it goes now, behind the held ones before it.
    if (this.appended <= this.stored) this.acks.releaseStored(this.stored)
    else this.commitSoon()
  }

  /**
   * An acknowledgement for `peer`, a client granted `received-v1`, of a
   * message just written to another such client, held until a commit stores
   * the message's changes — no commit is hurried for it: its changes are
   * stored by the next commit anyone waits for, or `LAZY_FLUSH` after they
   * were made (StoreWriter.ts) — or, for a plain message or a reply
   * (`byReceipt`), until its recipient confirms it has read the message
   * (`mailGone`, from its `received`), whichever comes first. So such a
   * message is acknowledged only once it is read or stored, as the
   * durability promise asks. An ask (not `byReceipt`) is acknowledged once
   * stored (its edge with it) or once the reply that closes its edge is read
   * (`answered`): until then a crash leaves the asker unacknowledged, and it
   * sends the ask again.
   */
  holdAckUntilRead(peer: Peer, senderKey: string, messageId: string, byReceipt: boolean): void {
    this.acks.holdUntilRead(peer, senderKey, messageId, byReceipt, this.appended, this.lastPut)
  }

  /**
   * The reply (`replySender`, `replyId`) closed the edge of the ask
   * (`askSender`, `askId`): the ask's acknowledgement, if still held until a
   * read, is released with the reply's — when the asker confirms reading the
   * reply, or the commit that stores the reply (ReadAcks.ts).
   */
  answered(askSender: string, askId: string, replySender: string, replyId: string): void {
    this.acks.answered(askSender, askId, replySender, replyId, this.lastPut)
  }

  /** Mail stored or about to be (for diagnostics and tests). */
  get mailHeld(): number {
    return this.storedMail.size + this.chained
  }

  /** Continues numbering after what a restart found stored. */
  restoreSeq(nextSeq: number): void {
    if (nextSeq > this.nextSeq) this.nextSeq = nextSeq
  }

  /** Mail found stored at startup: it is in the store already, and deleted when written or dropped. */
  restoredMail(stored: StoredMail): void {
    const entry = new JournalMail(stored.seq, stored.mail, false)
    // Only its seq is needed from now on (the store has the mail), and a reply's edge (`answers`).
    entry.mail = undefined
    // Every row: one under an id another row holds for another session follows it (`sameId`), dropping neither.
    this.setEntry(entry)
    if (entry.answers !== undefined) this.silenced.replyStored(entry)
  }

  /**
   * Sets `entry` in the table: in place of the entry of its sender, id and session, returned, if there is one;
   * behind the entries of its sender and id for other sessions otherwise. One lookup when its id is new.
   */
  private setEntry(entry: JournalMail): JournalMail | undefined {
    const first = this.storedMail.set(entry)
    if (first === undefined) return undefined
    if (first.targetKey === entry.targetKey) {
      entry.sameId = first.sameId
      first.sameId = undefined
      return first
    }
    // Another session's message under the id: `entry` goes first, the rest behind it, but for one of its session.
    entry.sameId = first
    this.chained++
    for (let before = first; before.sameId !== undefined; before = before.sameId) {
      const next = before.sameId
      if (next.targetKey !== entry.targetKey) continue
      before.sameId = next.sameId
      next.sameId = undefined
      this.chained--
      return next
    }
    return undefined
  }

  /** The entry of `senderKey`'s message `messageId` for the session `targetKey`, if stored or about to be. */
  private entryOf(senderKey: string, messageId: string, targetKey: string): JournalMail | undefined {
    let entry = this.storedMail.get(senderKey, messageId)
    while (entry !== undefined && entry.targetKey !== targetKey) entry = entry.sameId
    return entry
  }

  /**
   * A change no output waits for yet: it is stored by the next commit, which
   * comes when output waits for it (`commitSoon`) or `LAZY_FLUSH` after the
   * first change since the last commit.
   */
  private changed(): void {
    this.appended++
    this.flushLater()
  }

  /** Signals the lazy flush once per batch taken. */
  private flushLater(): void {
    if (this.lazyWoken) return
    this.lazyWoken = true
    this.wakeLazy()
  }

  /** Output now waits for what is appended so far: the writer commits it as soon as it can. */
  private commitSoon(): void {
    if (this.woken || this.appended <= this.stored) return
    this.woken = true
    this.wake()
  }

  /** A replay record was set for a send: `record` is its outbound record (the fingerprint and who sent what). */
  recordSent(record: OutboundRecord, outcome: Outcome, at: number): void {
    this.records.push(new SentRecord(record, outcome, at))
    this.changed()
  }

  /** A replay record was set or rewritten. */
  record(sender: string, key: string, fingerprint: Fingerprint, outcome: Outcome, at: number): void {
    this.records.push({ key, sender, fingerprint, outcome, at })
    this.changed()
  }

  /** Mail was accepted: stored until it is written to its recipient or dropped. */
  putMail(mail: Mail): void {
    this.put(new JournalMail(this.nextSeq++, mail, true), mail)
  }

  /**
   * An ask dropped as answered is put back, its reply lost (MailDelivery.askAgain), `mail` the copy queued now: its
   * row is stored again under `seq`, the one it had (`storedSeq`, at its drop) — its acceptance's, so a restart gives
   * it its place in the acceptance order (RestoreOrder.acceptInSeqOrder), not one after mail accepted since (review
   * rvmk2 probe 1) — marked given back at now (`StoredMail.givenBack`), so the restart queues and dates it where it
   * was put back (RestoreOrder.restoreOrder), as a give-back's row. Its old row's delete, pending, in flight or
   * stored, goes first: a commit deletes before it puts (MailStore.ts), so the one batch that holds both, or a
   * failed one put back ahead of it (`failed`), leaves this row.
   */
  putAgain(mail: Mail, seq: number): void {
    const entry = new JournalMail(seq, mail, true)
    this.put(entry, mail)
    this.givenBack.set(entry, { mail, after: this.nextSeq })
  }

  /** The seq of the row of `senderKey`'s message `messageId` for the session `targetKey`, if stored or about to be. */
  storedSeq(senderKey: string, messageId: string, targetKey: string): number | undefined {
    return this.entryOf(senderKey, messageId, targetKey)?.seq
  }

  /** `entry`, just made pending with `mail`, joins the table and the puts. */
  private put(entry: JournalMail, mail: Mail): void {
    const previous = this.setEntry(entry)
    // Stored for its session under another seq already (never expected: a message is accepted once while stored;
    // another under its id for another session keeps its row, Mailbox.ts): that row goes,
    // and an acknowledgement waiting on it waits for a commit instead.
    if (previous !== undefined) {
      this.acks.unhookEntry(previous)
      // Its debt was that row's reply's: it must not pass to this message after a restart.
      if (previous.silenced && this.silenced.gone(mail.recordKey)) this.flushLater()
      this.forget(previous)
    }
    // A reply is found by the ask it answered (SilencedJournal.replyTo); a plain message pays this test.
    if (entry.answers !== undefined) this.silenced.replyStored(entry)
    this.lastPut = entry
    this.puts.push(entry)
    this.pendingPuts++
    this.changed()
  }

  /**
   * Mail stored or about to be went back to the mailbox (a closing connection gave it back, its recipient's client
   * never confirmed it: MailReturns.requeue), `mail` the copy queued there, dated when (`queuedAt`; the mailbox's
   * retention counts from it). Its row takes that date under its `seq`, marked given back (`StoredMail.givenBack`),
   * so a restart dates it so without taking the date, out of acceptance order, for a clock step back (Router.restore;
   * review mailbox S1: the row kept the acceptance's date, and the mail expired up to a retention early after a
   * restart). A put not taken yet carries it; a stored row is written again (`MailCommit.mailUpdates`) — and stays
   * stored meanwhile: not pending, so a failed commit's `refuseHeld` never takes it for mail never stored (review
   * revmailbox D2). Nothing when it is not stored. It wakes the writer at once, as output waiting for a commit
   * does: a give-back is a connection's close, not the per-frame path, and a broker killed before the rewrite is
   * stored would restart with the acceptance's date (review revs1 probe 2).
   */
  mailGivenBack(mail: Mail): void {
    const entry = this.entryOf(mail.senderKey, mail.message.id, mail.targetKey)
    if (entry === undefined) return
    if (entry.pending) entry.mail = mail
    this.givenBack.set(entry, { mail, after: this.nextSeq })
    this.changed()
    this.commitSoon()
  }

  /**
   * Mail reached its recipient (Custody.ts), or was dropped (its sender
   * told): it leaves the store. The delete gates no output and wakes no
   * commit of its own: it rides with the next commit, or is flushed
   * `LAZY_FLUSH` after the first of them when none comes (StoreWriter.ts). A
   * broker killed before then delivers that mail again after its restart,
   * which the recipient's client drops (RecentMessages).
   *
   * Which row: the message's for the session `targetKey`; another message's
   * under the id, for another session (Mailbox.ts), stays. One lookup when
   * one row is under the id, as nearly always.
   */
  mailGone(senderKey: string, messageId: string, targetKey: string): void {
    // Read (or dropped, its sender told): an acknowledgement held for that need not wait for the commit.
    this.acks.read(senderKey, messageId)
    const entry = this.storedMail.delete(senderKey, messageId)
    if (entry === undefined) return
    if (entry.sameId === undefined) {
      if (entry.targetKey === targetKey) this.gone(entry)
      else this.storedMail.set(entry)
      return
    }
    // Messages under the id for several sessions: those that stay, linked again, the first of them in the table.
    let kept: JournalMail | undefined
    let last: JournalMail | undefined
    for (let row: JournalMail | undefined = entry; row !== undefined;) {
      const next: JournalMail | undefined = row.sameId
      row.sameId = undefined
      if (row !== entry) this.chained--
      if (row.targetKey === targetKey) this.gone(row)
      else {
        if (last === undefined) kept = row
        else {
          last.sameId = row
          this.chained++
        }
        last = row
      }
      row = next
    }
    if (kept !== undefined) this.storedMail.set(kept)
  }

  /** The row of `entry`, taken out of the table, leaves the store (`mailGone`). */
  private gone(entry: JournalMail): void {
    if (entry.ack !== undefined) this.acks.releaseEntry(entry)
    // A reply that leaves the store ends the debt stored with it (none, nearly always: a flag on its entry).
    const debtDeleted = entry.silenced && this.silenced.gone(recordKeyOf(entry.senderKey, entry.id))
    if (this.forget(entry) || debtDeleted) this.flushLater()
  }

  /** `entry` leaves the store: a put not taken yet is dropped, anything else deleted. Whether a delete was added. */
  private forget(entry: JournalMail): boolean {
    if (entry.answers !== undefined) this.silenced.replyGone(entry)
    if (this.givenBack.size > 0) this.givenBack.delete(entry)
    if (entry.pending) {
      // Not stored yet: it never needs to be, and its mail need not wait in `puts` for the next take.
      entry.drop()
      this.pendingPuts--
      return false
    }
    this.mailDeletes.add(entry.seq)
    return true
  }

  /** An ask edge opened. */
  edgeOpened(edge: AskEdge): void {
    this.edges.opened(edge)
    this.changed()
  }

  /** An ask edge closed before its deadline (its reply came, or it was cancelled). */
  edgeClosed(messageKey: string): void {
    if (this.edges.closed(messageKey)) this.changed()
  }

  /**
   * The ask `messageKey` was withdrawn at `at` after a reply had closed its
   * edge (Asks.ts): stored, so that a restart does not forget it. A change
   * no output waits for (`cancel_ask` has no answer; a `cancel_message`'s
   * answer is marked by its own change): stored with the next commit.
   */
  askWithdrawn(messageKey: string, at: number): void {
    this.edges.withdrawn(messageKey, at)
    this.changed()
  }

  /** The withdrawal of `messageKey` was pushed out of the broker's bound: it leaves the store with the next commit. */
  withdrawalGone(messageKey: string): void {
    if (this.edges.withdrawalGone(messageKey)) this.flushLater()
  }

  /**
   * The ask `ask` went silently as answered by `reply`, dropped at `at`: its
   * asker is owed its `expired` should that reply be lost, and the store
   * keeps that debt until the reply leaves it (`mailGone`), flagged on the
   * reply's entry (JournalMail.silenced). A reply no longer stored (read by
   * its asker already, or lost) can be lost no more: no debt is stored for
   * it (review revu U1), nor a second one for a reply that has one (another
   * copy of the same ask). A change no output waits for: stored with the
   * next commit.
   */
  askSilenced(reply: Mail, ask: Mail, at: number): void {
    this.silence(this.entryOf(reply.senderKey, reply.message.id, reply.targetKey), ask, at)
  }

  /**
   * As `askSilenced`, the reply known only as the stored one that closed
   * the edge of `ask`, whose deadline was `deadline` (a copy no reply
   * marked, dropped before its deadline: StaleAsks.drop): found by the
   * ask's key for as long as that reply is stored (SilencedJournal.replyTo;
   * review revz Z4). None when no such reply is stored.
   */
  askSilencedFor(ask: Mail, deadline: number, at: number): void {
    this.silence(this.silenced.replyTo(ask.recordKey, deadline), ask, at)
  }

  /** The stored reply `entry` (none: nothing is stored) takes up `ask`'s debt, unless it has one already. */
  private silence(entry: JournalMail | undefined, ask: Mail, at: number): void {
    if (entry === undefined || entry.silenced) return
    entry.silenced = true
    this.silenced.put(recordKeyOf(entry.senderKey, entry.id), ask, at)
    this.changed()
  }

  /**
   * A debt found stored at startup (`askSilenced`) whose reply `reply` was
   * restored (`restoredMail`, before this): it ends when the reply leaves
   * the store. False when that reply is not stored (never expected).
   */
  restoredSilenced(reply: Mail): boolean {
    const entry = this.entryOf(reply.senderKey, reply.message.id, reply.targetKey)
    if (entry === undefined) return false
    entry.silenced = true
    return true
  }

  /** A debt found stored at startup whose reply was not: it leaves the store with the next commit. */
  silencedGone(replyKey: string): void {
    if (this.silenced.gone(replyKey)) this.flushLater()
  }

  /** Continues numbering failure notices after what a restart found stored. */
  restoreNoticeSeq(nextNoticeSeq: number): void {
    this.notices.restoreSeq(nextNoticeSeq)
  }

  /**
   * A failure notice was issued to `senderKey` (owed since `at`): stored with
   * the changes made so far, among them the drop of the message it is about,
   * so no commit stores the drop without it. A change like any other: output
   * marked after it (the notice, when its sender is connected) waits for it.
   * Returns the notice's number, by which `noticeGone` deletes it.
   */
  putNotice(senderKey: string, frame: string, at: number): number {
    const seq = this.notices.put(senderKey, frame, at)
    this.changed()
    return seq
  }

  /**
   * The notice `seq` was read by its sender's client (`received-v1`), written
   * to a base client, or given up (a day old, past its bounds): it leaves the
   * store with the next commit, waking none of its own (like `mailGone`).
   */
  noticeGone(seq: number): void {
    if (this.notices.gone(seq)) this.flushLater()
  }

  /**
   * At startup: the broker's `stamps`, whose highest goes with each commit once it moved past `stored`
   * (the store's, `Recovered.stampHigh`; -Infinity to store the next whatever it is).
   */
  restoreStamps(stamps: BrokerStamps, stored: number): void {
    this.stamps = stamps
    this.stampStored = stored
  }

  /** Takes what is pending for one commit (undefined when nothing is). */
  take(now: number): TakenBatch | undefined {
    this.woken = false
    this.lazyWoken = false
    const prune = now - this.lastPrune >= PRUNE_EVERY_MS
      ? { recordsBefore: now - this.retentionMs, edgesUntil: now }
      : undefined
    // With the commit that stores what it was given with (or the next, for output no commit holds: docs/store.md).
    const highest = this.stamps?.highest
    const stampHigh = highest !== undefined && highest > this.stampStored ? highest : undefined
    if (
      stampHigh === undefined &&
      this.records.length === 0 && this.pendingPuts === 0 && this.mailDeletes.size === 0 && this.givenBack.size === 0 &&
      this.edges.isEmpty && prune === undefined && this.notices.isEmpty && this.silenced.isEmpty
    ) {
      // Every change counted since the last commit cancelled out (mail dropped or written before it was
      // stored, an edge closed before it was): nothing to store, so output marked behind them may go now.
      this.puts = []
      if (!this.isStored) this.committed({ batch: EMPTY_COMMIT, upTo: this.appended })
      return undefined
    }
    if (prune !== undefined) this.lastPrune = now
    const acked: Array<JournalMail> = []
    const mailPuts = this.takePuts(acked)
    const batch: MailCommit = {
      records: this.records,
      mailPuts,
      mailDeletes: [...this.mailDeletes],
      mailUpdates: this.takeUpdates(),
      edgePuts: this.edges.takeEdgePuts(),
      edgeDeletes: this.edges.takeEdgeDeletes(),
      prune,
      stampHigh,
      ...this.notices.take(),
      ...this.edges.takeWithdrawals(),
      ...this.silenced.take()
    }
    this.records = []
    this.mailDeletes = new Set()
    return { batch, upTo: this.appended, acked }
  }

  /**
   * The puts still pending, no longer so: from now on they are the store's,
   * and deleted when they go. The batch holds their mail; the entries keep
   * only what a delete needs, and an acknowledgement waiting on them (those
   * entries go into `acked`, released when the batch is stored).
   */
  private takePuts(acked: Array<JournalMail>): ReadonlyArray<StoredMail> {
    const puts = this.puts
    this.puts = []
    const taken: Array<StoredMail> = []
    if (this.pendingPuts === 0) return taken
    for (let i = 0; i < puts.length; i++) {
      const entry = puts[i]!
      const mail = entry.mail
      if (!entry.pending || mail === undefined) continue
      entry.pending = false
      entry.mail = undefined
      // Given back before its put was taken: the put carries the mark, and no row is written again.
      const givenBack = this.givenBack.size > 0 ? this.givenBack.get(entry) : undefined
      if (givenBack === undefined) taken.push({ seq: entry.seq, mail })
      else {
        this.givenBack.delete(entry)
        taken.push({ seq: entry.seq, mail, givenBack: givenBack.after })
      }
      if (entry.ack !== undefined) acked.push(entry)
    }
    this.pendingPuts = 0
    return taken
  }

  /** The stored rows of mail given back since the last take (`mailGivenBack`), written again under their `seq`. */
  private takeUpdates(): ReadonlyArray<StoredMail> | undefined {
    if (this.givenBack.size === 0) return undefined
    const updates: Array<StoredMail> = []
    for (const [entry, { after, mail }] of this.givenBack) updates.push({ seq: entry.seq, mail, givenBack: after })
    this.givenBack.clear()
    return updates
  }

  /** `taken` is stored: output held behind it may go. */
  committed(taken: TakenBatch): void {
    this.failure = undefined
    const stamp = taken.batch.stampHigh
    if (stamp !== undefined && stamp > this.stampStored) this.stampStored = stamp
    if (taken.upTo > this.stored) this.stored = taken.upTo
    const waiting = this.nextCommit
    this.nextCommit = undefined
    if (waiting !== undefined) Deferred.doneUnsafe(waiting, Effect.void)
    if (taken.acked !== undefined && taken.acked.length > 0) this.acks.releaseTaken(taken.acked)
    this.acks.releaseStored(this.stored)
    // Changes that came while it was committing are the next commit's: output that waits for them
    // woke the writer again (`commitSoon`), and the first of them signalled the lazy flush.
  }

  /**
   * `taken` could not be stored: it goes back in front of what came since
   * (later changes to the same key win), output stays held, and new sends
   * are refused with `reason` until a commit succeeds.
   */
  failed(taken: TakenBatch, reason: string): void {
    this.failure = reason
    const { batch } = taken
    // In order: what came since is later, and a later record of a key wins.
    this.records = batch.records.length === 0 ? this.records : [...batch.records, ...this.records]
    const puts: Array<JournalMail> = []
    for (const put of batch.mailPuts) {
      // Written or dropped since it was taken: it need not be stored after all.
      if (this.mailDeletes.delete(put.seq)) continue
      const entry = this.entryOf(put.mail.senderKey, put.mail.message.id, put.mail.targetKey)
      // Still this journal's: pending again, with its mail.
      if (entry === undefined || entry.seq !== put.seq) continue
      // Given back since it was taken: the copy the mailbox holds now is put. Given back before: it keeps the mark.
      const since = this.givenBack.get(entry)
      entry.pending = true
      entry.mail = since?.mail ?? put.mail
      this.pendingPuts++
      puts.push(entry)
      if (since === undefined && put.givenBack !== undefined) this.givenBack.set(entry, { mail: put.mail, after: put.givenBack })
    }
    this.puts = puts.length === 0 ? this.puts : [...puts, ...this.puts]
    for (const update of batch.mailUpdates ?? []) {
      // Still stored under that seq (neither deleted nor replaced since), and not given back again since: written
      // again by the next commit. It stays stored, not pending (review revmailbox D2).
      const entry = this.entryOf(update.mail.senderKey, update.mail.message.id, update.mail.targetKey)
      if (entry !== undefined && entry.seq === update.seq && !this.givenBack.has(entry) && update.givenBack !== undefined) {
        this.givenBack.set(entry, { mail: update.mail, after: update.givenBack })
      }
    }
    for (const key of batch.mailDeletes) this.mailDeletes.add(key)
    this.edges.failed(batch)
    if (batch.prune !== undefined) this.lastPrune = 0
    this.notices.failed(batch)
    this.silenced.failed(batch)
    // The sends held whose mail was never stored are refused (JournalAcks.refuseHeld).
    this.acks.failed(reason)
  }

  /** Waits until the changes `peer`'s output reveals are stored (at once when they are). */
  awaitStored(peer: Peer): Effect.Effect<void> {
    const loop: Effect.Effect<void> = Effect.suspend(() => {
      if (peer.storeMark <= this.stored) return Effect.void
      this.nextCommit ??= Deferred.makeUnsafe<void>()
      return Effect.andThen(Deferred.await(this.nextCommit), loop)
    })
    return loop
  }
}
