/**
 * The store journal's part for failure notices owed to senders (issue 13,
 * known issue 5; OwedNotices.ts in the store): the notices issued and the
 * notices read or given up since the last commit, for `StoreJournal.take`
 * to put in its batch. Owned by the StoreJournal (and through it by the
 * Router's synchronous code); kept in a module of its own so the journal's
 * mail and record code stays apart from it. The pending rows themselves
 * are a PendingRows (PendingRows.ts).
 */
import type { MailCommit, StoredNotice } from "../store/MailStore.ts"
import { PendingRows } from "./PendingRows.ts"

/** A batch with no notice changes names none (shared: nothing is allocated per commit for them). */
const NO_CHANGES: Pick<MailCommit, "noticePuts" | "noticeDeletes"> = {}

/** Notice changes not yet stored; see the module header. */
export class NoticeJournal {
  private readonly rows = new PendingRows<number, StoredNotice>((row) => row.seq)
  private nextSeq = 1

  /** No notice change waits for a commit. */
  get isEmpty(): boolean {
    return this.rows.isEmpty
  }

  /** Continues numbering after what a restart found stored. */
  restoreSeq(nextSeq: number): void {
    if (nextSeq > this.nextSeq) this.nextSeq = nextSeq
  }

  /** A notice was issued to `senderKey`, owed since `at`: its number. */
  put(senderKey: string, frame: string, at: number): number {
    const seq = this.nextSeq++
    this.rows.put(seq, { seq, senderKey, frame, at })
    return seq
  }

  /** The notice `seq` leaves the store; false when it was never stored (nothing to commit). */
  gone(seq: number): boolean {
    return this.rows.gone(seq)
  }

  /** The changes for the batch being taken (none named when there are none). */
  take(): Pick<MailCommit, "noticePuts" | "noticeDeletes"> {
    const taken = this.rows.take()
    return taken === undefined ? NO_CHANGES : { noticePuts: taken.puts, noticeDeletes: taken.deletes }
  }

  /** A batch that failed gives its changes back, in front of what came since; a notice gone since is not put. */
  failed(batch: MailCommit): void {
    this.rows.failed(batch.noticePuts, batch.noticeDeletes)
  }
}
