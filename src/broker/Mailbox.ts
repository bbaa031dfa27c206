/**
 * Mail for disconnected sessions (P49): global, capacity-bounded (oldest
 * evicted) and expiring. Evictions and expiries are returned to the caller, so
 * the sender is told rather than losing the message silently.
 */
import { AgedMap } from "./AgedMap.ts"
import type { Mail } from "./Peer.ts"

/** The mail itself: keyed by message, bounded, expiring; MailDelivery decides what goes in and out. */
export class Mailbox {
  private readonly mail: AgedMap<string, Mail>
  private readonly retentionMs: number

  constructor(capacity: number, retentionMs: number) {
    this.mail = new AgedMap(capacity)
    this.retentionMs = retentionMs
  }

  get size(): number {
    return this.mail.size
  }

  get(messageKey: string): Mail | undefined {
    return this.mail.get(messageKey)
  }

  /** Queues `mail`; returns the entries evicted to make room. */
  put(mail: Mail): ReadonlyArray<Mail> {
    return this.mail.set(mail.recordKey, mail, mail.queuedAt)
  }

  delete(messageKey: string): Mail | undefined {
    return this.mail.delete(messageKey)
  }

  /** Removes and returns expired mail, oldest first. */
  expire(now: number): ReadonlyArray<Mail> {
    return this.mail.expire(now - this.retentionMs - 1)
  }

  /** Removes and returns, in queue order, the mail `accept` claims. */
  take(accept: (mail: Mail) => boolean): Array<Mail> {
    const taken: Array<Mail> = []
    for (const mail of this.mail.values()) if (accept(mail)) taken.push(mail)
    for (const mail of taken) this.mail.delete(mail.recordKey)
    return taken
  }
}
