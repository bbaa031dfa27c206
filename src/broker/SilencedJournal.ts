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
 *
 * It also keeps the stored replies by the ask each answered (`replyTo`): a
 * question dropped before its deadline that no reply marked (a copy deeper
 * than Asks' scan, StaleAsks.drop) has its debt stored with the reply that
 * closed its edge, found by the question's key for as long as that reply
 * is stored — not only while AnsweredAsks remembers it (an hour; review
 * revz Z4). The entries are the journal's own (JournalMail, whose `answers`
 * names the edge), restored ones too, so a restart rebuilds the same index.
 * Cost: one map entry per stored reply (none for plain mail), dropped as
 * the reply leaves the store.
 */
import type { JournalMail } from "./JournalEntries.ts"
import type { Mail } from "./Peer.ts"
import type { MailCommit, StoredSilenced } from "../store/MailStore.ts"
import { PendingRows } from "./PendingRows.ts"

/** A batch with no changes here names none (shared: nothing is allocated per commit for them). */
const NO_CHANGES: Pick<MailCommit, "silencedPuts" | "silencedDeletes"> = {}

/** An ask's edge as the `replies` index keys it: the ask's record key and the edge's deadline. */
const edgeKey = (askKey: string, deadline: number): string => `${askKey}\u0000${deadline}`

/** Debt changes not yet stored; see the module header. */
export class SilencedJournal {
  private readonly rows = new PendingRows<string, StoredSilenced>((row) => row.replyKey)
  /** The journal entries of stored replies (or about to be) by the key of the ask each answered (`replyTo`). */
  private readonly replies = new Map<string, JournalMail>()

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

  /** `entry`, a reply (`answers` set), is stored or about to be: found by its ask's edge (`replyTo`). */
  replyStored(entry: JournalMail): void {
    if (entry.answers !== undefined) this.replies.set(edgeKey(entry.answers.messageKey, entry.answers.deadline), entry)
  }

  /** `entry` left the store (or will never reach it): no longer found by its ask's edge, unless a later reply took it over. */
  replyGone(entry: JournalMail): void {
    if (entry.answers === undefined) return
    const key = edgeKey(entry.answers.messageKey, entry.answers.deadline)
    if (this.replies.get(key) === entry) this.replies.delete(key)
  }

  /**
   * The stored reply that closed the edge of the ask `askKey` whose deadline
   * was `deadline`; undefined when none is stored. By edge, not by key: an
   * ask that reused the id (past the replay window) has an edge of its own,
   * so neither its reply nor that reply's going hides this one's (review
   * revz Z3, revac AC1).
   */
  replyTo(askKey: string, deadline: number): JournalMail | undefined {
    if (this.replies.size === 0) return undefined
    return this.replies.get(edgeKey(askKey, deadline))
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
