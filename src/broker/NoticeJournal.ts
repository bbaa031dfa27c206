/**
 * The store journal's part for failure notices owed to senders (issue 13,
 * known issue 5; OwedNotices.ts in the store): the notices issued and the
 * notices read or given up since the last commit, for `StoreJournal.take`
 * to put in its batch. Owned by the StoreJournal (and through it by the
 * Router's synchronous code); kept in a module of its own so the journal's
 * mail and record code stays apart from it.
 */
import type { MailCommit, StoredNotice } from "../store/MailStore.ts"

/** A batch with no notice changes names none (shared: nothing is allocated per commit for them). */
const NO_CHANGES: Pick<MailCommit, "noticePuts" | "noticeDeletes"> = {}

/** Notice changes not yet stored; see the module header. */
export class NoticeJournal {
  /** Notices issued and not yet stored, by their number. */
  private puts = new Map<number, StoredNotice>()
  /** Stored notices to delete, by their number. */
  private deletes = new Set<number>()
  private nextSeq = 1

  /** No notice change waits for a commit. */
  get isEmpty(): boolean {
    return this.puts.size === 0 && this.deletes.size === 0
  }

  /** Continues numbering after what a restart found stored. */
  restoreSeq(nextSeq: number): void {
    if (nextSeq > this.nextSeq) this.nextSeq = nextSeq
  }

  /** A notice was issued to `senderKey`, owed since `at`: its number. */
  put(senderKey: string, frame: string, at: number): number {
    const seq = this.nextSeq++
    this.puts.set(seq, { seq, senderKey, frame, at })
    return seq
  }

  /** The notice `seq` leaves the store; false when it was never stored (nothing to commit). */
  gone(seq: number): boolean {
    if (this.puts.delete(seq)) return false
    this.deletes.add(seq)
    return true
  }

  /** The changes for the batch being taken (none named when there are none). */
  take(): Pick<MailCommit, "noticePuts" | "noticeDeletes"> {
    if (this.isEmpty) return NO_CHANGES
    const taken = { noticePuts: [...this.puts.values()], noticeDeletes: [...this.deletes] }
    this.puts = new Map()
    this.deletes = new Set()
    return taken
  }

  /** A batch that failed gives its changes back, in front of what came since; a notice gone since is not put. */
  failed(batch: MailCommit): void {
    if (batch.noticePuts === undefined && batch.noticeDeletes === undefined) return
    const puts = new Map<number, StoredNotice>()
    for (const put of batch.noticePuts ?? []) {
      if (this.deletes.delete(put.seq)) continue
      puts.set(put.seq, put)
    }
    for (const [seq, put] of this.puts) puts.set(seq, put)
    this.puts = puts
    for (const seq of batch.noticeDeletes ?? []) this.deletes.add(seq)
  }
}
