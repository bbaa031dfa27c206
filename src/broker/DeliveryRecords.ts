/**
 * Idempotent replay (P46): the outcome of each (sender, message id), so a
 * retried send gets the recorded answer instead of a second delivery. Kept for
 * an hour, at most `capacity` records, oldest evicted first.
 */
import type { DeliveryCode } from "../protocol/delivery.ts"
import type { Message } from "../protocol/frames.ts"
import { AgedMap } from "./AgedMap.ts"

/** What a send came to, as answered (and replayed to a retry). */
export type Outcome =
  | { readonly ok: true; readonly delivery: "socket_delivered" | "queued" }
  | { readonly ok: false; readonly code: DeliveryCode; readonly reason: string; readonly retryable: boolean }

interface DeliveryRecord {
  readonly fingerprint: string
  readonly outcome: Outcome
}

/**
 * 53-bit string hash (cyrb53). The fingerprint hashes message text instead of
 * keeping it: 4,096 records of 1 MiB texts would otherwise pin gigabytes.
 */
const hash = (text: string): string => {
  let h1 = 0xdeadbeef
  let h2 = 0x41c6ce57
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    h1 = Math.imul(h1 ^ c, 2654435761)
    h2 = Math.imul(h2 ^ c, 1597334677)
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909)
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909)
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(36)
}

/**
 * What identifies "the same send": target and authored content, not
 * timestamps or sequence numbers. Text and attachments are hashed (with their
 * lengths, so a collision also needs equal lengths).
 */
export const fingerprintOf = (targetId: string, message: Message): string => {
  const text = message.content.text
  const attachments = message.content.attachments === undefined ? "" : JSON.stringify(message.content.attachments)
  return `${targetId}\u0000${text.length}:${hash(text)}\u0000${attachments.length}:${hash(attachments)}\u0000${
    message.replyTo ?? ""
  }\u0000${message.expectsReply ?? ""}\u0000${message.supersedes ?? ""}\u0000${message.retryOf ?? ""}`
}

/** The key of a replay record: the sender and its message id. */
export const recordKeyOf = (senderKey: string, messageId: string): string => `${senderKey}\u0001${messageId}`

/** Replay records (P46): outcomes by record key, kept for a retention time, oldest evicted past capacity. */
export class DeliveryRecords {
  private readonly records: AgedMap<string, DeliveryRecord>
  private readonly retentionMs: number

  constructor(capacity: number, retentionMs: number) {
    this.records = new AgedMap(capacity)
    this.retentionMs = retentionMs
  }

  get(key: string, now: number): DeliveryRecord | undefined {
    const at = this.records.setAt(key)
    if (at === undefined || now - at > this.retentionMs) return undefined
    return this.records.get(key)
  }

  set(key: string, fingerprint: string, outcome: Outcome, now: number): void {
    this.records.set(key, { fingerprint, outcome }, now)
  }

  /** Later events rewrite an outcome (supersede, cancel, expiry, eviction, mailbox flush). */
  rewrite(key: string, outcome: Outcome): void {
    const record = this.records.get(key)
    if (record !== undefined) this.records.update(key, { fingerprint: record.fingerprint, outcome })
  }

  prune(now: number): void {
    this.records.expire(now - this.retentionMs - 1)
  }
}
