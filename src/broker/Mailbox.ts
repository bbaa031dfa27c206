/**
 * Mail for disconnected sessions (P49): global, capacity-bounded (oldest
 * evicted) and expiring. Evictions and expiries are reported to the caller, so
 * the sender is told rather than losing the message silently.
 */
import type { Mail } from "./Peer.ts"

export class Mailbox {
  private readonly mail = new Map<string, Mail>()
  private readonly capacity: number
  private readonly retentionMs: number

  constructor(capacity: number, retentionMs: number) {
    this.capacity = capacity
    this.retentionMs = retentionMs
  }

  get size(): number {
    return this.mail.size
  }

  get(messageKey: string): Mail | undefined {
    return this.mail.get(messageKey)
  }

  /** Queues `mail`; returns the entry evicted to make room, if any. */
  put(mail: Mail): Mail | undefined {
    this.mail.delete(mail.messageKey)
    this.mail.set(mail.messageKey, mail)
    if (this.mail.size <= this.capacity) return undefined
    const oldest = this.mail.values().next()
    if (oldest.done === true) return undefined
    this.mail.delete(oldest.value.messageKey)
    return oldest.value
  }

  delete(messageKey: string): Mail | undefined {
    const mail = this.mail.get(messageKey)
    if (mail !== undefined) this.mail.delete(messageKey)
    return mail
  }

  /** Removes and returns expired mail, oldest first. */
  expire(now: number): Array<Mail> {
    const expired: Array<Mail> = []
    for (const mail of this.mail.values()) {
      if (now - mail.queuedAt <= this.retentionMs) break
      expired.push(mail)
    }
    for (const mail of expired) this.mail.delete(mail.messageKey)
    return expired
  }

  /** Removes and returns, in queue order, the mail `accept` claims. */
  take(accept: (mail: Mail) => boolean): Array<Mail> {
    const taken: Array<Mail> = []
    for (const mail of this.mail.values()) if (accept(mail)) taken.push(mail)
    for (const mail of taken) this.mail.delete(mail.messageKey)
    return taken
  }
}
