/**
 * A Map whose entries leave oldest-first — past a capacity, or past an age —
 * in O(1) time: a hash map whose entries are also linked in age order.
 *
 * Why not just an insertion-ordered Map: V8 leaves deleted entries as holes
 * at the front of a Map's table until it is rehashed, so "look at the oldest"
 * (`map.values().next()`) walks every hole. At 65,536 entries that cost 36 µs
 * per call on the broker's per-message path (measured; see
 * docs/performance.md).
 */

interface Aged<K, V> {
  readonly key: K
  value: V
  readonly at: number
  older: Aged<K, V> | undefined
  newer: Aged<K, V> | undefined
}

/** A Map whose entries leave oldest-first, past a capacity or an age, in O(1); see the module header. */
export class AgedMap<K, V> {
  private readonly entries = new Map<K, Aged<K, V>>()
  private oldest: Aged<K, V> | undefined
  private newest: Aged<K, V> | undefined
  private readonly capacity: number

  constructor(capacity: number = Number.POSITIVE_INFINITY) {
    this.capacity = capacity
  }

  get size(): number {
    return this.entries.size
  }

  get(key: K): V | undefined {
    return this.entries.get(key)?.value
  }

  /** When `key` was (last) set, or undefined. */
  setAt(key: K): number | undefined {
    return this.entries.get(key)?.at
  }

  has(key: K): boolean {
    return this.entries.has(key)
  }

  /**
   * Sets `key` as the newest entry (a replaced entry moves to the back) and
   * returns the entries evicted to stay within capacity, oldest first.
   */
  set(key: K, value: V, at: number): ReadonlyArray<V> {
    const previous = this.entries.get(key)
    if (previous !== undefined) this.unlink(previous)
    const entry: Aged<K, V> = { key, value, at, older: this.newest, newer: undefined }
    if (this.newest !== undefined) this.newest.newer = entry
    else this.oldest = entry
    this.newest = entry
    this.entries.set(key, entry)
    if (this.entries.size <= this.capacity) return NONE
    const evicted: Array<V> = []
    while (this.entries.size > this.capacity && this.oldest !== undefined) {
      const first = this.oldest
      this.entries.delete(first.key)
      this.unlink(first)
      evicted.push(first.value)
    }
    return evicted
  }

  /** Replaces the value in place, keeping its age and position. */
  update(key: K, value: V): void {
    const entry = this.entries.get(key)
    if (entry !== undefined) entry.value = value
  }

  delete(key: K): V | undefined {
    const entry = this.entries.get(key)
    if (entry === undefined) return undefined
    this.entries.delete(key)
    this.unlink(entry)
    return entry.value
  }

  /** Removes and returns the entries set at or before `cutoff`, oldest first. */
  expire(cutoff: number): ReadonlyArray<V> {
    if (this.oldest === undefined || this.oldest.at > cutoff) return NONE
    const expired: Array<V> = []
    while (this.oldest !== undefined && this.oldest.at <= cutoff) {
      const first = this.oldest
      this.entries.delete(first.key)
      this.unlink(first)
      expired.push(first.value)
    }
    return expired
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
