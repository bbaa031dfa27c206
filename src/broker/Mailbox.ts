/**
 * Mail for disconnected sessions (P49), as storage: keyed by message and
 * recipient (its sender, id and target session: `mailKeyOf`), so two messages
 * under one id waiting at once for two sessions — given back by two sessions,
 * or one given back while another is queued — are both kept, expiring, and bounded — in messages and in bytes overall,
 * and in bytes per recipient, so one absent session cannot take the room of
 * all others. Over a recipient's bound its oldest mail goes first; over the
 * overall bounds, the oldest mail of the heaviest sender (most messages, or
 * most bytes, whichever bound is exceeded), so one session flooding absent
 * sessions evicts its own mail, not everybody's. What is evicted or expired
 * is returned, with the bound that evicted it, so MailDelivery can tell its
 * sender which limit it met rather than lose it silently. A message bigger
 * than a bytes bound on its own is not put at all (it would empty its
 * recipient's mail, or everybody's, and then go itself): `put` returns it as
 * its only eviction, and nothing else moves.
 *
 * Indexed by recipient and by mailbox identity, so a registration collects
 * its mail without scanning everyone's, and by record key (sender and id,
 * `under`), for the look-ups by id (a cancel, a supersede, an ask's close),
 * each of which picks its message among them by its own rule (MailDelivery.ts).
 * By recipient and by sender the entries are listed in queue order
 * (QueueLists.ts), so the oldest a bound evicts is a list's head, not a scan
 * of everything held for that recipient or sender (review rrsq: a restore
 * past a recipient's byte bound was quadratic).
 */
import type { MailboxBoundName } from "../protocol/delivery.ts"
import { AgedMap } from "./AgedMap.ts"
import { SetIndex } from "./Indexes.ts"
import type { Mail } from "./Peer.ts"
import { type QueueLink, QueueLists } from "./QueueLists.ts"

/**
 * The mailbox's key of `mail`: its record key (sender and id) and its target session's key. Two messages under one
 * id for one session still share it (their client drops the second as a duplicate within its hour, docs/client.md).
 */
export const mailKeyOf = (mail: Mail): string => mailKeyFor(mail.recordKey, mail.targetKey)

/** The mailbox's key of a message under the record key `recordKey` (its sender and id) for the session `targetKey`. */
export const mailKeyFor = (recordKey: string, targetKey: string): string => `${recordKey}\u0003${targetKey}`

/** `Mailbox.under`'s answer when nothing waits under a record key (one array, never changed). */
const NONE: ReadonlyArray<Mail> = []

/** The mailbox's bounds. */
export interface MailboxLimits {
  /** Messages held at most, overall (P49's 256 by default). */
  readonly capacity: number
  /** About this many bytes of mail at most, overall. */
  readonly maxBytes: number
  /** About this many bytes of mail at most for one recipient. */
  readonly maxBytesPerTarget: number
  /** How long mail is kept. */
  readonly retentionMs: number
}

/** Which of the mailbox's bounds evicted a message: messages overall, bytes overall, or bytes for its recipient. */
export type MailboxBound = MailboxBoundName

/** A message the mailbox dropped to keep within its bounds. */
export interface Eviction {
  readonly mail: Mail
  /** The bound that was exceeded. */
  readonly bound: MailboxBound
  /** That bound's value: messages for `capacity`, bytes otherwise. */
  readonly limit: number
  /** The message's estimated size in the mailbox, in bytes. */
  readonly bytes: number
}

/** Estimated memory of one message: its text, attachments and sender info (UTF-16), plus overhead. */
const bytesOf = (mail: Mail): number => {
  let chars = mail.fromJson.length + mail.message.content.text.length + mail.recordKey.length
  for (const attachment of mail.message.content.attachments ?? []) chars += attachment.content.length + attachment.name.length
  return 2 * chars + 512
}

/** Mail taken from the mailbox, with its queue place (to put it back there: `put`'s `seq`). */
export interface Queued {
  readonly mail: Mail
  readonly seq: number
}

/** A queued message with its place in the queue and its size. */
interface Entry {
  readonly mail: Mail
  /** Its mailbox key (`mailKeyOf`). */
  readonly key: string
  /**
   * Queue order (arrival), also among mail queued at the same millisecond;
   * renumbered only when mail is put back behind mail that comes back older
   * (`toBack`).
   */
  seq: number
  readonly bytes: number
  /** Its places in its recipient's and its sender's lists (`byTarget`, `bySender`), while indexed. */
  target: QueueLink<Entry> | undefined
  sender: QueueLink<Entry> | undefined
}

/** Mail taken out to make room for a message, with the age it had in the list (`Mailbox.putBack`). */
interface Removed {
  readonly entry: Entry
  readonly at: number
}

/**
 * Whether mail put back at its place goes ahead of `tied`, of the same age (AgedMap.setAged): when it came first in
 * queue order, so it expires (its sender told) before the mail of its age queued after it — not before mail of an
 * older age, which may have been queued after it just after a clock step back.
 */
const aheadOf = (entry: Entry) => (tied: Entry): boolean => entry.seq < tied.seq

/** An entry's queue place: the order of the recipient's and the sender's lists. */
const seqOfEntry = (entry: Entry): number => entry.seq

/** The mail itself: keyed by message and recipient, bounded, expiring; MailDelivery decides what goes in and out. */
export class Mailbox {
  private readonly entries = new AgedMap<string, Entry>()
  /** By recipient, in queue order: its oldest is the head (the per-recipient bound evicts it; review rrsq). */
  private readonly byTarget = new QueueLists<string, Entry>(seqOfEntry)
  private readonly byIdentity = new SetIndex<string, Entry>()
  /** Entries by record key (sender and id): several when messages under one id wait for several sessions. */
  private readonly byRecord = new SetIndex<string, Entry>()
  private readonly targetBytes = new Map<string, number>()
  /** By sender, in queue order: its oldest is the head (the overall bounds evict it from the heaviest sender). */
  private readonly bySender = new QueueLists<string, Entry>(seqOfEntry)
  private readonly senderBytes = new Map<string, number>()
  private bytes = 0
  private seq = 0
  private readonly limits: MailboxLimits

  constructor(limits: MailboxLimits) {
    this.limits = limits
  }

  /** Messages held. */
  get size(): number {
    return this.entries.size
  }

  /** When the oldest message held was queued (it expires first), or undefined when none is. */
  get oldestQueuedAt(): number | undefined {
    return this.entries.oldestAt
  }

  /** When `expire` lets go of mail queued at `queuedAt`: the first millisecond past its retention. */
  expiresAt(queuedAt: number): number {
    return queuedAt + this.limits.retentionMs + 1
  }

  /** The mail queued under the mailbox key `key` (`mailKeyOf`). */
  get(key: string): Mail | undefined {
    return this.entries.get(key)?.mail
  }

  /**
   * The mail queued under the record key `recordKey` (its sender and id), for every target session, in queue
   * order (a copy: the caller may take some out). Empty when none is.
   */
  under(recordKey: string): ReadonlyArray<Mail> {
    const entries = this.byRecord.get(recordKey)
    if (entries === undefined) return NONE
    const found = [...entries]
    if (found.length > 1) found.sort((a, b) => a.seq - b.seq)
    return found.map((entry) => entry.mail)
  }

  /** The queue place of the mail under the mailbox key `key` (for `put`'s `seq`, to put it back there), or undefined when it is not queued. */
  seqOf(key: string): number | undefined {
    return this.entries.get(key)?.seq
  }

  /**
   * Queues `mail`; returns the mail evicted to make room, each with the bound
   * that evicted it — possibly `mail` itself, and then alone: when it is
   * bigger than a bytes bound, or when the overall bounds find its sender the
   * heaviest and it is that sender's oldest. In that second case the mail
   * the bounds pushed out before reaching `mail` is put back where it was —
   * its queue place and the age it had, `putBack` — so a message that is not
   * kept never costs anyone else theirs, nor gives anyone a longer stay.
   *
   * With `seq` (a queue place `seqOf` or `take` gave), `mail` goes back at
   * its place in age (by its `queuedAt`) and queue order, as mail taken out
   * and put back: a cancelled copy given to some of its readers and kept for
   * the others expires at its own retention, not behind younger mail (review
   * revr R2) — unless its `queuedAt` is past the newest reading the mailbox
   * was given (queued before a clock step back, its siblings re-dated since):
   * then it goes at that reading, as they did (AgedMap.setAged; review revdf
   * DF2); among mail of that same age, ahead of the mail queued after it
   * that lies newest (`aheadOf`: it stops at the first tied mail queued
   * before it). Without, it is the newest in queue order and in age: mail dated
   * past its `queuedAt` (queued before a clock step back) is re-dated to it
   * (AgedMap.ts).
   */
  put(mail: Mail, seq?: number): ReadonlyArray<Eviction> {
    const key = mailKeyOf(mail)
    this.delete(key)
    const bytes = bytesOf(mail)
    const limits = this.limits
    if (bytes > limits.maxBytesPerTarget) return [{ mail, bound: "bytesPerTarget", limit: limits.maxBytesPerTarget, bytes }]
    if (bytes > limits.maxBytes) return [{ mail, bound: "bytes", limit: limits.maxBytes, bytes }]
    const entry: Entry = { mail, key, seq: seq ?? ++this.seq, bytes, target: undefined, sender: undefined }
    if (seq === undefined) this.entries.set(key, entry, mail.queuedAt)
    else this.entries.setAged(key, entry, mail.queuedAt, aheadOf(entry))
    this.index(entry)
    const evicted: Array<Eviction> = []
    const removed: Array<Removed> = []
    // The recipient's own bound first: its oldest mail makes room.
    while ((this.targetBytes.get(mail.targetKey) ?? 0) > limits.maxBytesPerTarget) {
      const oldest = this.byTarget.head(mail.targetKey)
      if (oldest === undefined) break
      evicted.push({ mail: oldest.mail, bound: "bytesPerTarget", limit: limits.maxBytesPerTarget, bytes: oldest.bytes })
      removed.push(this.remove(oldest))
    }
    while (this.entries.size > limits.capacity || this.bytes > limits.maxBytes) {
      const byCount = this.entries.size > limits.capacity
      const sender = this.heaviestSender(byCount)
      const oldest = sender === undefined ? undefined : this.bySender.head(sender)
      if (oldest === undefined) break
      const eviction: Eviction = byCount
        ? { mail: oldest.mail, bound: "capacity", limit: limits.capacity, bytes: oldest.bytes }
        : { mail: oldest.mail, bound: "bytes", limit: limits.maxBytes, bytes: oldest.bytes }
      if (oldest === entry) {
        this.delete(oldest.key)
        // `mail` goes after all: what made room for it comes back, as it was.
        this.putBack(removed)
        return [eviction]
      }
      evicted.push(eviction)
      removed.push(this.remove(oldest))
    }
    return evicted
  }

  /** Takes `entry` out to make room, with the age it had (`putBack` puts it back at that age). */
  private remove(entry: Entry): Removed {
    const at = this.entries.setAt(entry.key) ?? entry.mail.queuedAt
    this.delete(entry.key)
    return { entry, at }
  }

  /**
   * Puts `removed` back at their places in age and queue order, as they were: their `seq` kept, and the age each
   * had in the list — not its `queuedAt`, which a clock step back since may have re-dated to an earlier reading
   * (AgedMap.ts): put back at `queuedAt`, clamped only to the newest reading, such mail was kept longer than it
   * would have been had nothing made room (review mailbox S2; a durable broker's restore into smaller bounds
   * takes this path too). Among mail of one age, ahead of what was queued after it (`aheadOf`).
   */
  private putBack(removed: ReadonlyArray<Removed>): void {
    for (const { entry, at } of removed) {
      this.entries.setAged(entry.key, entry, at, aheadOf(entry))
      this.index(entry)
    }
  }

  /** Takes the mail under the mailbox key `key` (`mailKeyOf`) out, and returns it. */
  delete(key: string): Mail | undefined {
    const entry = this.entries.delete(key)
    if (entry === undefined) return undefined
    this.unindex(entry)
    return entry.mail
  }

  /** Removes and returns expired mail, oldest first. */
  expire(now: number): ReadonlyArray<Mail> {
    const expired = this.entries.expire(now - this.limits.retentionMs - 1)
    for (const entry of expired) this.unindex(entry)
    return expired.map((entry) => entry.mail)
  }

  /**
   * Removes and returns, in queue order, the mail for the session `targetKey`
   * and, when `identity` is given, the mail for that identity (P49) that
   * `accept` lets through, each with its queue place (`put`'s `seq`).
   */
  take(targetKey: string, identity: string | undefined, accept: (mail: Mail) => boolean): Array<Queued> {
    const found = new Set<Entry>(this.byTarget.values(targetKey))
    if (identity !== undefined) for (const entry of this.byIdentity.get(identity) ?? []) found.add(entry)
    const taken = [...found].filter((entry) => accept(entry.mail)).sort((a, b) => a.seq - b.seq)
    for (const entry of taken) this.delete(entry.key)
    return taken.map((entry) => ({ mail: entry.mail, seq: entry.seq }))
  }

  /**
   * The mailbox keys of the mail queued for the session `targetKey` that
   * `accept` lets through, in queue order (a look-up by recipient: mail
   * held behind a takeover's custody, at that hold's end only).
   */
  keysFor(targetKey: string, accept: (mail: Mail) => boolean): Array<string> {
    const found: Array<string> = []
    for (const entry of this.byTarget.values(targetKey)) if (accept(entry.mail)) found.push(entry.key)
    return found
  }

  /**
   * The mail of the mailbox keys `keys` still queued goes behind everything queued so
   * far, in the order given: flushed after it, and evicted after it by the
   * bounds that evict the oldest first. Its age (for expiry) is kept.
   */
  toBack(keys: ReadonlyArray<string>): void {
    for (const key of keys) {
      const entry = this.entries.get(key)
      if (entry === undefined) continue
      // Out of its lists and in again at their tails: the lists stay in queue order.
      this.unlist(entry)
      entry.seq = ++this.seq
      this.list(entry)
    }
  }

  /** The sender with the most messages queued (`byCount`), else with the most bytes. */
  private heaviestSender(byCount: boolean): string | undefined {
    let heaviest: string | undefined
    let weight = 0
    for (const [sender, bytes] of this.senderBytes) {
      const w = byCount ? this.bySender.count(sender) : bytes
      if (w > weight) {
        heaviest = sender
        weight = w
      }
    }
    return heaviest
  }

  /** Lists `entry` under its recipient and its sender, at its queue place. */
  private list(entry: Entry): void {
    entry.target = this.byTarget.add(entry.mail.targetKey, entry)
    entry.sender = this.bySender.add(entry.mail.senderKey, entry)
  }

  /** Takes `entry` out of its recipient's and its sender's lists. */
  private unlist(entry: Entry): void {
    if (entry.target !== undefined) this.byTarget.remove(entry.mail.targetKey, entry.target)
    if (entry.sender !== undefined) this.bySender.remove(entry.mail.senderKey, entry.sender)
    entry.target = undefined
    entry.sender = undefined
  }

  private index(entry: Entry): void {
    const mail = entry.mail
    this.list(entry)
    this.byRecord.add(mail.recordKey, entry)
    if (mail.targetIdentity !== undefined) this.byIdentity.add(mail.targetIdentity, entry)
    this.bytes += entry.bytes
    this.targetBytes.set(mail.targetKey, (this.targetBytes.get(mail.targetKey) ?? 0) + entry.bytes)
    this.senderBytes.set(mail.senderKey, (this.senderBytes.get(mail.senderKey) ?? 0) + entry.bytes)
  }

  private unindex(entry: Entry): void {
    const mail = entry.mail
    this.unlist(entry)
    this.byRecord.delete(mail.recordKey, entry)
    if (mail.targetIdentity !== undefined) this.byIdentity.delete(mail.targetIdentity, entry)
    this.bytes -= entry.bytes
    const left = (this.targetBytes.get(mail.targetKey) ?? entry.bytes) - entry.bytes
    if (left <= 0) this.targetBytes.delete(mail.targetKey)
    else this.targetBytes.set(mail.targetKey, left)
    const sent = (this.senderBytes.get(mail.senderKey) ?? entry.bytes) - entry.bytes
    if (sent <= 0 || !this.bySender.has(mail.senderKey)) this.senderBytes.delete(mail.senderKey)
    else this.senderBytes.set(mail.senderKey, sent)
  }
}
