/**
 * Idempotent replay (P46): the outcome of each (sender, message id), so a
 * retried send gets the recorded answer instead of a second delivery.
 *
 * The promise a client can rely on is a time, per sender: a record is kept
 * at least `windowMs` (REPLAY_WINDOW_MS, 2 minutes — longer than a client's
 * send timeout plus its reconnect backoff), and up to `retentionMs` (an hour)
 * while there is room. Room is bounded in records and in bytes, overall:
 * past the bound, records older than the window go first (oldest first); if
 * every record is younger, the sender holding the most records loses its
 * oldest — one flooding sender never costs the others their window.
 */
import type { DeliveryCode } from "../protocol/delivery.ts"
import type { Message } from "../protocol/frames.ts"
import { AgedMap } from "./AgedMap.ts"

/** What a send came to, as answered (and replayed to a retry). */
export type Outcome =
  | { readonly ok: true; readonly delivery: "socket_delivered" | "queued" }
  | { readonly ok: false; readonly code: DeliveryCode; readonly reason: string; readonly retryable: boolean }

/** The answer to a send delivered to a live session's connection. */
export const DELIVERED: Outcome = { ok: true, delivery: "socket_delivered" }

/** The answer to a send queued in the mailbox. */
export const QUEUED: Outcome = { ok: true, delivery: "queued" }

interface DeliveryRecord {
  readonly fingerprint: Fingerprint
  readonly outcome: Outcome
}

/**
 * 53-bit string hash (cyrb53). The fingerprint hashes message text instead of
 * keeping it: 4,096 records of 1 MiB texts would otherwise pin gigabytes.
 */
const hash = (text: string): number => {
  let h1 = 0xdeadbeef
  let h2 = 0x41c6ce57
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    h1 = Math.imul(h1 ^ c, 2654435761)
    h2 = Math.imul(h2 ^ c, 1597334677)
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909)
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909)
  return 4294967296 * (2097151 & h2) + (h1 >>> 0)
}

const NO_ATTACHMENTS_HASH = hash("")

/**
 * What identifies "the same send": target and authored content, not
 * timestamps or sequence numbers. Text and attachments are hashed (with their
 * lengths, so a collision also needs equal lengths), and so is a failure
 * reply's `replyError` (C-BRK-8), when there is one. One small object, not a
 * string built per message: records are kept by the hundred thousand, and
 * every object they hold is work for the garbage collector.
 */
export interface Fingerprint {
  readonly targetId: string
  readonly textLength: number
  readonly textHash: number
  readonly attachmentsLength: number
  readonly attachmentsHash: number
  readonly replyTo: string | undefined
  readonly expectsReply: boolean | undefined
  readonly supersedes: string | undefined
  readonly retryOf: string | undefined
  /** A failure reply's `replyError` (`reply-error-v1`): its length, or -1 without one. */
  readonly replyErrorLength: number
  /** Its hash; 0 without one. */
  readonly replyErrorHash: number
}

/** The fingerprint of `message` sent to `targetId`; see `Fingerprint`. */
export const fingerprintOf = (targetId: string, message: Message, replyError?: string): Fingerprint => {
  const text = message.content.text
  const attachments = message.content.attachments === undefined ? undefined : JSON.stringify(message.content.attachments)
  return {
    targetId,
    textLength: text.length,
    textHash: hash(text),
    attachmentsLength: attachments === undefined ? 0 : attachments.length,
    attachmentsHash: attachments === undefined ? NO_ATTACHMENTS_HASH : hash(attachments),
    replyTo: message.replyTo,
    expectsReply: message.expectsReply,
    supersedes: message.supersedes,
    retryOf: message.retryOf,
    replyErrorLength: replyError === undefined ? -1 : replyError.length,
    replyErrorHash: replyError === undefined ? 0 : hash(replyError)
  }
}

/** Whether two fingerprints name the same send. */
export const sameFingerprint = (a: Fingerprint, b: Fingerprint): boolean =>
  a.targetId === b.targetId && a.textLength === b.textLength && a.textHash === b.textHash &&
  a.attachmentsLength === b.attachmentsLength && a.attachmentsHash === b.attachmentsHash &&
  (a.replyTo ?? "") === (b.replyTo ?? "") && (a.expectsReply ?? "") === (b.expectsReply ?? "") &&
  (a.supersedes ?? "") === (b.supersedes ?? "") && (a.retryOf ?? "") === (b.retryOf ?? "") &&
  a.replyErrorLength === b.replyErrorLength && a.replyErrorHash === b.replyErrorHash

/** The key of a replay record: the sender and its message id. */
export const recordKeyOf = (senderKey: string, messageId: string): string => `${senderKey}\u0001${messageId}`

interface Entry extends DeliveryRecord {
  readonly sender: string
  readonly bytes: number
}

/** Bounds and times of the replay records. */
export interface ReplayLimits {
  /** Every record is kept at least this long (the promise). */
  readonly windowMs: number
  /** No record is kept longer. */
  readonly retentionMs: number
  /** Records kept at most, overall. */
  readonly maxRecords: number
  /** Approximate bytes the records may take, overall. */
  readonly maxBytes: number
}

/** Estimated memory of one record: its strings (UTF-16) and the objects and map entry around them. */
const entryBytes = (key: string, fingerprint: Fingerprint, outcome: Outcome): number =>
  2 * (key.length + fingerprint.targetId.length + (fingerprint.replyTo?.length ?? 0) +
      (fingerprint.supersedes?.length ?? 0) + (fingerprint.retryOf?.length ?? 0) +
      (outcome.ok ? 0 : outcome.reason.length)) + 240

/** Told of every record set or rewritten (the store journal, when the broker is durable). */
export interface RecordObserver {
  readonly set: (sender: string, key: string, fingerprint: Fingerprint, outcome: Outcome, at: number) => void
  /** A rewrite; `record` is undefined when the record itself was no longer kept (its message may still be). */
  readonly rewrite: (key: string, outcome: Outcome, record: { readonly sender: string; readonly fingerprint: Fingerprint; readonly at: number } | undefined) => void
}

/** Replay records (P46); see the module header for what is kept how long. */
export class DeliveryRecords {
  private readonly records = new AgedMap<string, Entry>()
  /** Records per sender, to find the heaviest when everything is inside the window. */
  private readonly perSender = new Map<string, number>()
  private bytes = 0
  private readonly limits: ReplayLimits
  private readonly observer: RecordObserver | undefined

  constructor(limits: ReplayLimits, observer?: RecordObserver) {
    this.limits = limits
    this.observer = observer
  }

  /** Records held. */
  get size(): number {
    return this.records.size
  }

  /** The record of `key`, if it is still kept. */
  get(key: string, now: number): DeliveryRecord | undefined {
    const found = this.records.lookup(key)
    if (found === undefined || now - found.at > this.limits.retentionMs) return undefined
    return found.value
  }

  /** Records `sender`'s send under `key` (replacing an earlier record of the same key). */
  set(sender: string, key: string, fingerprint: Fingerprint, outcome: Outcome, now: number): void {
    this.observer?.set(sender, key, fingerprint, outcome, now)
    this.keep(sender, key, fingerprint, outcome, now)
  }

  /** A record found stored at startup: kept again, not stored again. */
  restore(sender: string, key: string, fingerprint: Fingerprint, outcome: Outcome, at: number): void {
    this.keep(sender, key, fingerprint, outcome, at)
  }

  private keep(sender: string, key: string, fingerprint: Fingerprint, outcome: Outcome, now: number): void {
    const bytes = entryBytes(key, fingerprint, outcome)
    const replaced = this.records.put(key, { sender, fingerprint, outcome, bytes }, now)
    if (replaced !== undefined) this.uncount(replaced)
    this.perSender.set(sender, (this.perSender.get(sender) ?? 0) + 1)
    this.bytes += bytes
    if (this.records.size > this.limits.maxRecords || this.bytes > this.limits.maxBytes) this.makeRoom(now)
  }

  /** Later events rewrite an outcome (supersede, cancel, expiry, eviction, mailbox flush). */
  rewrite(key: string, outcome: Outcome): void {
    if (this.observer === undefined) {
      const record = this.records.get(key)
      if (record !== undefined) this.records.update(key, { ...record, outcome })
      return
    }
    const found = this.records.lookup(key)
    if (found !== undefined) this.records.update(key, { ...found.value, outcome })
    this.observer.rewrite(
      key,
      outcome,
      found === undefined ? undefined : { sender: found.value.sender, fingerprint: found.value.fingerprint, at: found.at }
    )
  }

  /** Drops records past the retention time. */
  prune(now: number): void {
    for (const entry of this.records.expire(now - this.limits.retentionMs - 1)) this.uncount(entry)
  }

  private forget(key: string): void {
    const entry = this.records.delete(key)
    if (entry !== undefined) this.uncount(entry)
  }

  private uncount(entry: Entry): void {
    this.bytes -= entry.bytes
    const count = (this.perSender.get(entry.sender) ?? 1) - 1
    if (count <= 0) this.perSender.delete(entry.sender)
    else this.perSender.set(entry.sender, count)
  }

  private overBound(): boolean {
    return this.records.size > this.limits.maxRecords || this.bytes > this.limits.maxBytes
  }

  /** Back within bounds: first records past the window, then the heaviest sender's oldest. */
  private makeRoom(now: number): void {
    const cutoff = now - this.limits.windowMs - 1
    for (let entry = this.records.expireOldest(cutoff); entry !== undefined; entry = this.records.expireOldest(cutoff)) {
      this.uncount(entry)
      if (!this.overBound()) return
    }
    while (this.overBound()) {
      let heaviest: string | undefined
      let most = 0
      for (const [sender, count] of this.perSender) {
        if (count > most) {
          heaviest = sender
          most = count
        }
      }
      if (heaviest === undefined) return
      // Rare (every record is inside the window): drop a sixteenth of that sender's records per scan.
      let toDrop = Math.max(1, most >> 4)
      const victims: Array<string> = []
      for (const [key, entry] of this.records.entries()) {
        if (entry.sender !== heaviest) continue
        victims.push(key)
        if (--toDrop === 0) break
      }
      for (const key of victims) this.forget(key)
    }
  }
}
