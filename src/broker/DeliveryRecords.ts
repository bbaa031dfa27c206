/**
 * Idempotent replay (P46): the outcome of each (sender, message id), so a
 * retried send gets the recorded answer instead of a second delivery.
 * Insertion-ordered Map: the oldest entry is evicted first and expiry scans
 * only from the front.
 */
import type { DeliveryCode } from "../protocol/delivery.ts"
import type { Message } from "../protocol/frames.ts"

export type Outcome =
  | { readonly ok: true; readonly delivery: "socket_delivered" | "queued" }
  | { readonly ok: false; readonly code: DeliveryCode; readonly reason: string; readonly retryable: boolean }

interface DeliveryRecord {
  readonly fingerprint: string
  outcome: Outcome
  readonly at: number
}

/** What identifies "the same send": target and authored content, not timestamps or sequence numbers. */
export const fingerprintOf = (targetId: string, message: Message): string =>
  JSON.stringify([
    targetId,
    message.content.text,
    message.content.attachments ?? null,
    message.replyTo ?? null,
    message.expectsReply ?? null,
    message.supersedes ?? null,
    message.retryOf ?? null
  ])

export const recordKeyOf = (senderKey: string, messageId: string): string => `${senderKey}\u0001${messageId}`

export class DeliveryRecords {
  private readonly records = new Map<string, DeliveryRecord>()
  private readonly capacity: number
  private readonly retentionMs: number

  constructor(capacity: number, retentionMs: number) {
    this.capacity = capacity
    this.retentionMs = retentionMs
  }

  get(key: string, now: number): DeliveryRecord | undefined {
    const record = this.records.get(key)
    if (record === undefined) return undefined
    if (now - record.at > this.retentionMs) {
      this.records.delete(key)
      return undefined
    }
    return record
  }

  set(key: string, fingerprint: string, outcome: Outcome, now: number): void {
    this.records.delete(key)
    this.records.set(key, { fingerprint, outcome, at: now })
    if (this.records.size > this.capacity) {
      const oldest = this.records.keys().next()
      if (oldest.done !== true) this.records.delete(oldest.value)
    }
  }

  /** Later events rewrite an outcome (supersede, cancel, expiry, eviction, mailbox flush). */
  rewrite(key: string, outcome: Outcome): void {
    const record = this.records.get(key)
    if (record !== undefined) record.outcome = outcome
  }

  prune(now: number): void {
    for (const [key, record] of this.records) {
      if (now - record.at <= this.retentionMs) break
      this.records.delete(key)
    }
  }
}
