/**
 * The store journal's entries per message (StoreJournal.ts owns them): a
 * replay record set for a send, and mail stored or about to be. Plain
 * classes, one object per message each, made and read by the Router's
 * synchronous code only.
 */
import type { StoredMail, StoredRecord } from "../store/MailStore.ts"
import { type Outcome, recordKeyOf } from "./DeliveryRecords.ts"
import type { OutboundRecord } from "./OutboundRecords.ts"
import type { Mail } from "./Peer.ts"

/**
 * A replay record set for a send (`recordSent`): its key is built only if
 * something asks for it (the memory store does; the replay block writes the
 * id, replayBlock.ts), so a durable message costs no key string of its own
 * (docs/performance.md, "Durable, seventh stop").
 */
export class SentRecord implements StoredRecord {
  readonly sender: string
  readonly id: string
  readonly fingerprint: OutboundRecord
  readonly outcome: Outcome
  readonly at: number
  constructor(record: OutboundRecord, outcome: Outcome, at: number) {
    this.sender = record.senderKey
    this.id = record.id
    this.fingerprint = record
    this.outcome = outcome
    this.at = at
  }

  get key(): string {
    return recordKeyOf(this.sender, this.id)
  }
}

/**
 * Mail stored or about to be: `pending` while it is put by the next commit
 * (in `puts`, not yet taken). One entry per message serves both the put and
 * the delete that follows it, so accepting and forgetting a message costs one
 * map entry, not two (docs/performance.md, "Durable, seventh stop").
 */
export class JournalMail implements StoredMail {
  readonly seq: number
  readonly mail: Mail
  pending: boolean
  constructor(seq: number, mail: Mail, pending: boolean) {
    this.seq = seq
    this.mail = mail
    this.pending = pending
  }
}
