/**
 * A Map whose entries leave oldest-first — past a capacity, or past an age —
 * in O(1) time: a hash map whose entries are also linked in age order.
 *
 * Why not just an insertion-ordered Map: V8 leaves deleted entries as holes
 * at the front of a Map's table until it is rehashed, so "look at the oldest"
 * (`map.values().next()`) walks every hole. At 65,536 entries that cost 36 µs
 * per call on the broker's per-message path (measured; see
 * docs/performance.md).
 *
 * After the clock steps back, an entry set (`set`, `put`) at a reading below
 * the newest entry's re-dates the entries dated past that reading to it, so
 * the list stays in age order and `expire`, walking from the oldest, reaches
 * every entry past its cutoff: those set before the step count from it.
 * `redate` applies the same rule for an owner that learns the clock's
 * reading without setting an entry (a value that holds dated items of its
 * own: it is told of each re-dated entry, `onRedate`). And no entry is
 * dated past the newest reading the list was given (`reading`): one put
 * back at its place (`setAged`) with an age from before a step back goes at
 * that reading, as its siblings were re-dated, instead of undoing their
 * re-dating (review revdf DF2, DF4). Clamped to the reading rather than to
 * the newest entry's time, which may be far older once the newest entries
 * left: the clamp never dates an entry earlier than the step, so it is
 * never kept less than its time. One comparison per set; the walk, over the
 * entries past the reading only, once per step back. OutboundRecords.ts
 * applies the same rule to its lists.
 */

interface Aged<K, V> {
  readonly key: K
  value: V
  /** When it was set, or the reading the clock stepped back to below it since (`append`). */
  at: number
  older: Aged<K, V> | undefined
  newer: Aged<K, V> | undefined
}

/** A Map whose entries leave oldest-first, past a capacity or an age, in O(1); see the module header. */
export class AgedMap<K, V> {
  private readonly table = new Map<K, Aged<K, V>>()
  private oldest: Aged<K, V> | undefined
  private newest: Aged<K, V> | undefined
  private readonly capacity: number
  private readonly onRedate: ((value: V, at: number) => void) | undefined
  /** The newest clock reading the list was given (`append`, `redate`); +∞ before the first. */
  private latest = Number.POSITIVE_INFINITY

  /**
   * @param onRedate told of each entry the clock's step back re-dates (module header), with its new date: for
   * values holding dated items of their own, which re-date theirs past it too.
   */
  constructor(capacity: number = Number.POSITIVE_INFINITY, onRedate?: (value: V, at: number) => void) {
    this.capacity = capacity
    this.onRedate = onRedate
  }

  get size(): number {
    return this.table.size
  }

  /** The newest clock reading the list was given (`set`, `put`, `redate`): no entry is dated past it; +∞ before the first. */
  get reading(): number {
    return this.latest
  }

  /** When the oldest entry was set (the next `expire` can take nothing set after it), or undefined when empty. */
  get oldestAt(): number | undefined {
    return this.oldest?.at
  }

  get(key: K): V | undefined {
    return this.table.get(key)?.value
  }

  /** `key`'s value and when it was (last) set, in one lookup; undefined when absent. */
  lookup(key: K): { readonly value: V; readonly at: number } | undefined {
    return this.table.get(key)
  }

  /** When `key` was (last) set, or undefined. */
  setAt(key: K): number | undefined {
    return this.table.get(key)?.at
  }

  has(key: K): boolean {
    return this.table.has(key)
  }

  /**
   * Sets `key` as the newest entry (a replaced entry moves to the back) and
   * returns the entries evicted to stay within capacity, oldest first. `at`
   * is the clock's reading now, or an order that goes back only where the
   * clock did (entries restored oldest first): one below the newest reading
   * is taken for a clock step back and re-dates the entries past it to it
   * (module header), so an entry with an age of its own older than the
   * newest (handed back at its place) goes through `setAged` instead.
   */
  set(key: K, value: V, at: number): ReadonlyArray<V> {
    this.append(key, value, at)
    return this.evictOverCapacity()
  }

  /** Removes the oldest entries past the capacity, and returns them, oldest first. */
  private evictOverCapacity(): ReadonlyArray<V> {
    if (this.table.size <= this.capacity) return NONE
    const evicted: Array<V> = []
    while (this.table.size > this.capacity && this.oldest !== undefined) {
      const first = this.oldest
      this.table.delete(first.key)
      this.unlink(first)
      evicted.push(first.value)
    }
    return evicted
  }

  /**
   * Sets `key` as the newest entry, like `set` (`at` the clock's reading
   * now, as there), and returns the value it replaced rather than what it
   * evicted: for maps without a capacity (in one with a capacity, what it
   * evicts is dropped unseen).
   */
  put(key: K, value: V, at: number): V | undefined {
    const previous = this.append(key, value, at)
    while (this.table.size > this.capacity) this.expireOldest(Number.POSITIVE_INFINITY)
    return previous?.value
  }

  /**
   * Sets `key` as `set` does, but at its place in age order rather than as
   * the newest: for an entry whose age is older than the newest entry's (one
   * restored, or handed back with the age it had). Costs a step per entry
   * newer than it, and with `aheadOf` one more per entry of its age it
   * passes. An age past the newest reading the list was given (one from
   * before a clock step back) is taken as that reading, and `value` told so
   * (`onRedate`), as `redate` re-dated the entries past it (module header).
   * Among entries of the same age it goes behind them all, unless `aheadOf`
   * says it goes ahead of one: walking from the newest, it passes tied
   * entries while `aheadOf` holds and stops at the first for which it does
   * not (the mailbox's queue order: exact while ties lie in that order; after
   * two step backs they need not).
   */
  setAged(key: K, value: V, at: number, aheadOf?: (tied: V) => boolean): ReadonlyArray<V> {
    const previous = this.table.get(key)
    if (previous !== undefined) this.unlink(previous)
    if (at > this.latest) {
      at = this.latest
      this.onRedate?.(value, at)
    }
    let before = this.newest
    while (before !== undefined && (before.at > at || (before.at === at && aheadOf?.(before.value) === true))) before = before.older
    const after = before === undefined ? this.oldest : before.newer
    const entry: Aged<K, V> = { key, value, at, older: before, newer: after }
    if (before !== undefined) before.newer = entry
    else this.oldest = entry
    if (after !== undefined) after.older = entry
    else this.newest = entry
    this.table.set(key, entry)
    return this.evictOverCapacity()
  }

  /** Makes `key` the newest entry, unlinking the one it replaces (returned). */
  private append(key: K, value: V, at: number): Aged<K, V> | undefined {
    const previous = this.table.get(key)
    if (previous !== undefined) this.unlink(previous)
    this.redate(at)
    const entry: Aged<K, V> = { key, value, at, older: this.newest, newer: undefined }
    if (this.newest !== undefined) this.newest.newer = entry
    else this.oldest = entry
    this.newest = entry
    this.table.set(key, entry)
    return previous
  }

  /**
   * The clock reads `now`: the newest reading the list was given. After a
   * step back below the newest entry's date, the entries dated past `now`
   * are re-dated to it (module header), each told to `onRedate`; otherwise
   * one comparison.
   */
  redate(now: number): void {
    this.latest = now
    if (this.newest === undefined || this.newest.at <= now) return
    for (let later: Aged<K, V> | undefined = this.newest; later !== undefined && later.at > now; later = later.older) {
      later.at = now
      this.onRedate?.(later.value, now)
    }
  }

  /** Replaces the value in place, keeping its age and position. */
  update(key: K, value: V): void {
    const entry = this.table.get(key)
    if (entry !== undefined) entry.value = value
  }

  delete(key: K): V | undefined {
    const entry = this.table.get(key)
    if (entry === undefined) return undefined
    this.table.delete(key)
    this.unlink(entry)
    return entry.value
  }

  /** Removes and returns the entries set at or before `cutoff`, oldest first. */
  expire(cutoff: number): ReadonlyArray<V> {
    if (this.oldest === undefined || this.oldest.at > cutoff) return NONE
    const expired: Array<V> = []
    while (this.oldest !== undefined && this.oldest.at <= cutoff) {
      const first = this.oldest
      this.table.delete(first.key)
      this.unlink(first)
      expired.push(first.value)
    }
    return expired
  }

  /** Removes and returns the oldest entry if it was set at or before `cutoff`. */
  expireOldest(cutoff: number): V | undefined {
    const first = this.oldest
    if (first === undefined || first.at > cutoff) return undefined
    this.table.delete(first.key)
    this.unlink(first)
    return first.value
  }

  /** Values, oldest first. */
  *values(): IterableIterator<V> {
    for (let entry = this.oldest; entry !== undefined; entry = entry.newer) yield entry.value
  }

  private unlink(entry: Aged<K, V>): void {
    if (entry.older !== undefined) entry.older.newer = entry.newer
    else this.oldest = entry.newer
    if (entry.newer !== undefined) entry.newer.older = entry.older
    else this.newest = entry.older
    entry.older = entry.newer = undefined
  }
}

/** The common answer "nothing left": shared, so the per-message path allocates nothing. */
const NONE: ReadonlyArray<never> = []
