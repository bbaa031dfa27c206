/**
 * The store journal's part for the `expired` receipts owed for asks that
 * went silently as answered (SilencedAsks.ts in the store; review revs S1):
 * the debts recorded and ended since the last commit, for
 * `StoreJournal.take` to put in its batch. Which replies have a debt stored
 * or about to be is not kept here: it is a flag on the reply's own journal
 * entry (JournalMail.silenced), so that the lookup that drops a reply from
 * the store finds it, and a reply no longer stored is never given one
 * (review revu U1). Owned by the StoreJournal (and through it by the
 * Router's synchronous code), as NoticeJournal.ts is; the pending rows
 * themselves are a PendingRows (PendingRows.ts), as NoticeJournal's are.
 */
import type { Mail } from "./Peer.ts"
import type { MailCommit, StoredSilenced } from "../store/MailStore.ts"
import { PendingRows } from "./PendingRows.ts"

/** A batch with no changes here names none (shared: nothing is allocated per commit for them). */
const NO_CHANGES: Pick<MailCommit, "silencedPuts" | "silencedDeletes"> = {}

/** Debt changes not yet stored; see the module header. */
export class SilencedJournal {
  private readonly rows = new PendingRows<string, StoredSilenced>((row) => row.replyKey)

  /** No change waits for a commit. */
  get isEmpty(): boolean {
    return this.rows.isEmpty
  }

  /** The reply `replyKey`'s asker is owed `ask`'s `expired` should it be lost (the ask dropped at `at`). */
  put(replyKey: string, ask: Mail, at: number): void {
    this.rows.put(replyKey, { replyKey, at, ask })
  }

  /**
   * The debt of the reply `replyKey`, stored or about to be, ends (its reply
   * left the store, or was not restored): a put not yet taken is dropped, a
   * stored row deleted. Whether a delete was added (false: it was never stored).
   */
  gone(replyKey: string): boolean {
    return this.rows.gone(replyKey)
  }

  /** The changes for the batch being taken (none named when there are none). */
  take(): Pick<MailCommit, "silencedPuts" | "silencedDeletes"> {
    const taken = this.rows.take()
    return taken === undefined ? NO_CHANGES : { silencedPuts: taken.puts, silencedDeletes: taken.deletes }
  }

  /** A batch that failed gives its changes back, in front of what came since; a debt ended since is not put. */
  failed(batch: MailCommit): void {
    this.rows.failed(batch.silencedPuts, batch.silencedDeletes)
  }
}
