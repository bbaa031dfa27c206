/**
 * Rows of one store table changed since the last commit: the rows to put and
 * the keys to delete, taken together into the next batch and given back, in
 * front of what came since, when that batch's commit fails. A row ended
 * before it was stored is never stored (its put is dropped, no delete is
 * added); a row put again after its delete was queued cancels the delete.
 * The journals of owed notices (NoticeJournal.ts) and of silenced asks'
 * debts (SilencedJournal.ts) each keep one; owned by the StoreJournal and
 * through it by the Router's synchronous code.
 */

/** What a batch takes of one table: its rows to put and its keys to delete. */
export interface RowChanges<K, Row> {
  readonly puts: ReadonlyArray<Row>
  readonly deletes: ReadonlyArray<K>
}

/**
 * A table's changes not yet stored.
 *
 * @example
 * ```ts
 * const rows = new PendingRows<number, StoredNotice>((row) => row.seq)
 * rows.put(notice.seq, notice)
 * const taken = rows.take() // into the batch; on a failed commit:
 * if (taken !== undefined) rows.failed(taken.puts, taken.deletes)
 * ```
 */
export class PendingRows<K, Row> {
  private readonly keyOf: (row: Row) => K
  /** Rows recorded and not yet stored, by key. */
  private puts = new Map<K, Row>()
  /** Stored rows to delete, by key. */
  private deletes = new Set<K>()

  /** @param keyOf a row's key (the table's primary key). */
  constructor(keyOf: (row: Row) => K) {
    this.keyOf = keyOf
  }

  /** No change waits for a commit. */
  get isEmpty(): boolean {
    return this.puts.size === 0 && this.deletes.size === 0
  }

  /** `row` is to be stored under `key` (a delete of the key queued before is dropped). */
  put(key: K, row: Row): void {
    this.deletes.delete(key)
    this.puts.set(key, row)
  }

  /** The row `key` ends: a put not yet taken is dropped, a stored row deleted. Whether a delete was added. */
  gone(key: K): boolean {
    if (this.puts.delete(key)) return false
    this.deletes.add(key)
    return true
  }

  /** The changes for the batch being taken, undefined when there are none; they leave this list. */
  take(): RowChanges<K, Row> | undefined {
    if (this.isEmpty) return undefined
    const taken = { puts: [...this.puts.values()], deletes: [...this.deletes] }
    this.puts = new Map()
    this.deletes = new Set()
    return taken
  }

  /** A batch that failed gives its changes back, in front of what came since; a row ended since is not put. */
  failed(puts: ReadonlyArray<Row> | undefined, deletes: ReadonlyArray<K> | undefined): void {
    if (puts === undefined && deletes === undefined) return
    const merged = new Map<K, Row>()
    for (const row of puts ?? []) {
      const key = this.keyOf(row)
      if (this.deletes.delete(key)) continue
      merged.set(key, row)
    }
    for (const [key, row] of this.puts) merged.set(key, row)
    this.puts = merged
    for (const key of deletes ?? []) if (!this.puts.has(key)) this.deletes.add(key)
  }
}
