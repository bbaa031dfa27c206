/**
 * The store journal's part for ask edges and withdrawn asks: the edges
 * opened and closed, and the asks withdrawn after their reply closed them
 * (Asks.ts) or pushed out of the broker's bound, since the last commit, for
 * `StoreJournal.take` to put in its batch and `StoreJournal.failed` to put
 * back. Changes to one key coalesce until they are taken: an edge closed
 * before it was stored never reaches the disk. Owned by the StoreJournal
 * (and through it by the Router's synchronous code); kept in a module of its
 * own so the journal's mail and acknowledgement code stays apart from it.
 * The journal counts the changes and wakes the writer; this module only
 * says whether there was one to count.
 */
import type { MailCommit, StoredWithdrawal } from "../store/MailStore.ts"
import type { AskEdge } from "./AskEdges.ts"

/** Ask edge and withdrawal changes not yet stored; see the module header. */
export class EdgeJournal {
  private edgePuts = new Map<string, AskEdge>()
  private edgeDeletes = new Set<string>()
  /** Asks withdrawn after their reply closed them (Asks.ts): when, by ask key; and those pushed out of its bound. */
  private withdrawalPuts = new Map<string, number>()
  private withdrawalDeletes = new Set<string>()

  /** No edge or withdrawal change waits for a commit. */
  get isEmpty(): boolean {
    return this.edgePuts.size === 0 && this.edgeDeletes.size === 0 &&
      this.withdrawalPuts.size === 0 && this.withdrawalDeletes.size === 0
  }

  /** An ask edge opened (a change for the journal to count). */
  opened(edge: AskEdge): void {
    this.edgeDeletes.delete(edge.messageKey)
    this.edgePuts.set(edge.messageKey, edge)
  }

  /**
   * An ask edge closed before its deadline: true when its delete must be
   * stored (a change to count); false when the edge was never stored, so
   * its put is dropped and nothing changes.
   */
  closed(messageKey: string): boolean {
    if (this.edgePuts.delete(messageKey)) return false
    this.edgeDeletes.add(messageKey)
    return true
  }

  /** The ask `messageKey` was withdrawn at `at` after a reply had closed its edge (a change to count). */
  withdrawn(messageKey: string, at: number): void {
    this.withdrawalDeletes.delete(messageKey)
    this.withdrawalPuts.set(messageKey, at)
  }

  /**
   * The withdrawal of `messageKey` leaves the store: true when a delete was
   * added (for the lazy flush), false when it was never stored.
   */
  withdrawalGone(messageKey: string): boolean {
    if (this.withdrawalPuts.delete(messageKey)) return false
    this.withdrawalDeletes.add(messageKey)
    return true
  }

  /** The edge puts for a batch, no longer pending. */
  takeEdgePuts(): ReadonlyArray<AskEdge> {
    const puts = [...this.edgePuts.values()]
    this.edgePuts = new Map()
    return puts
  }

  /** The edge deletes for a batch, no longer pending. */
  takeEdgeDeletes(): ReadonlyArray<string> {
    const deletes = [...this.edgeDeletes]
    this.edgeDeletes = new Set()
    return deletes
  }

  /** The withdrawal changes for a batch (none named when there are none), no longer pending. */
  takeWithdrawals(): { withdrawalPuts?: ReadonlyArray<StoredWithdrawal>; withdrawalDeletes?: ReadonlyArray<string> } {
    if (this.withdrawalPuts.size === 0 && this.withdrawalDeletes.size === 0) return {}
    const withdrawalPuts = [...this.withdrawalPuts].map(([messageKey, at]) => ({ messageKey, at }))
    const withdrawalDeletes = [...this.withdrawalDeletes]
    this.withdrawalPuts = new Map()
    this.withdrawalDeletes = new Set()
    return { withdrawalPuts, withdrawalDeletes }
  }

  /** `batch` could not be stored: its edge and withdrawal changes go back in front of what came since, the later winning. */
  failed(batch: MailCommit): void {
    const edgePuts = new Map<string, AskEdge>()
    for (const edge of batch.edgePuts) {
      if (this.edgeDeletes.delete(edge.messageKey)) continue
      edgePuts.set(edge.messageKey, edge)
    }
    for (const [key, edge] of this.edgePuts) edgePuts.set(key, edge)
    this.edgePuts = edgePuts
    for (const key of batch.edgeDeletes) if (!this.edgePuts.has(key)) this.edgeDeletes.add(key)
    // Withdrawals as edges: what came since is later and wins.
    const withdrawalPuts = new Map<string, number>()
    for (const put of batch.withdrawalPuts ?? []) {
      if (!this.withdrawalDeletes.has(put.messageKey)) withdrawalPuts.set(put.messageKey, put.at)
    }
    for (const [key, at] of this.withdrawalPuts) withdrawalPuts.set(key, at)
    this.withdrawalPuts = withdrawalPuts
    for (const key of batch.withdrawalDeletes ?? []) {
      if (!this.withdrawalPuts.has(key)) this.withdrawalDeletes.add(key)
    }
  }
}
