/**
 * The store journal's part for the `expired` receipts owed for asks that
 * went silently as answered (SilencedAsks.ts in the store; review revs S1):
 * the debts recorded and ended since the last commit, for
 * `StoreJournal.take` to put in its batch. Which replies have a debt stored
 * or about to be is not kept here: it is a flag on the reply's own journal
 * entry (JournalMail.silenced), so that the lookup that drops a reply from
 * the store finds it, and a reply no longer stored is never given one
 * (review revu U1). Owned by the StoreJournal (and through it by the
 * Router's synchronous code), as NoticeJournal.ts is.
 */
import type { Mail } from "./Peer.ts"
import type { MailCommit, StoredSilenced } from "../store/MailStore.ts"

/** A batch with no changes here names none (shared: nothing is allocated per commit for them). */
const NO_CHANGES: Pick<MailCommit, "silencedPuts" | "silencedDeletes"> = {}

/** Debt changes not yet stored; see the module header. */
export class SilencedJournal {
  /** Debts recorded and not yet stored, by reply key. */
  private puts = new Map<string, StoredSilenced>()
  /** Stored debts to delete, by reply key. */
  private deletes = new Set<string>()

  /** No change waits for a commit. */
  get isEmpty(): boolean {
    return this.puts.size === 0 && this.deletes.size === 0
  }

  /** The reply `replyKey`'s asker is owed `ask`'s `expired` should it be lost (the ask dropped at `at`). */
  put(replyKey: string, ask: Mail, at: number): void {
    this.deletes.delete(replyKey)
    this.puts.set(replyKey, { replyKey, at, ask })
  }

  /**
   * The debt of the reply `replyKey`, stored or about to be, ends (its reply
   * left the store, or was not restored): a put not yet taken is dropped, a
   * stored row deleted. Whether a delete was added (false: it was never stored).
   */
  gone(replyKey: string): boolean {
    if (this.puts.delete(replyKey)) return false
    this.deletes.add(replyKey)
    return true
  }

  /** The changes for the batch being taken (none named when there are none). */
  take(): Pick<MailCommit, "silencedPuts" | "silencedDeletes"> {
    if (this.isEmpty) return NO_CHANGES
    const taken = { silencedPuts: [...this.puts.values()], silencedDeletes: [...this.deletes] }
    this.puts = new Map()
    this.deletes = new Set()
    return taken
  }

  /** A batch that failed gives its changes back, in front of what came since; a debt ended since is not put. */
  failed(batch: MailCommit): void {
    if (batch.silencedPuts === undefined && batch.silencedDeletes === undefined) return
    const puts = new Map<string, StoredSilenced>()
    for (const put of batch.silencedPuts ?? []) {
      if (this.deletes.delete(put.replyKey)) continue
      puts.set(put.replyKey, put)
    }
    for (const [key, put] of this.puts) puts.set(key, put)
    this.puts = puts
    for (const key of batch.silencedDeletes ?? []) if (!this.puts.has(key)) this.deletes.add(key)
  }
}
