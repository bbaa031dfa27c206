/**
 * A Map whose entries leave oldest-first — past a capacity, or past an age —
 * in O(1) amortised time.
 *
 * Why not just an insertion-ordered Map: V8 leaves deleted entries as holes
 * at the front of a Map's table until it is rehashed, so "look at the oldest"
 * (`map.values().next()`) walks every hole. At 65,536 entries that cost 36 µs
 * per call on the broker's per-message path (measured; see
 * docs/performance.md). Here the order lives in a separate queue of
 * (key, version) pairs; entries replaced or deleted since are skipped when
 * they reach the front.
 */

interface Aged<V> {
  readonly value: V
  readonly at: number
  readonly version: number
}

export class AgedMap<K, V> {
  private readonly entries = new Map<K, Aged<V>>()
  private keys: Array<K> = []
  private versions: Array<number> = []
  private head = 0
  private nextVersion = 0
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
  set(key: K, value: V, at: number): Array<V> {
    const version = ++this.nextVersion
    this.entries.set(key, { value, at, version })
    this.keys.push(key)
    this.versions.push(version)
    const evicted: Array<V> = []
    while (this.entries.size > this.capacity) {
      const oldest = this.shiftLive()
      if (oldest === undefined) break
      evicted.push(oldest.value)
    }
    this.compactIfSparse()
    return evicted
  }

  /** Replaces the value in place, keeping its age and position. */
  update(key: K, value: V): void {
    const entry = this.entries.get(key)
    if (entry !== undefined) this.entries.set(key, { value, at: entry.at, version: entry.version })
  }

  delete(key: K): V | undefined {
    const entry = this.entries.get(key)
    if (entry === undefined) return undefined
    this.entries.delete(key)
    return entry.value
  }

  /** Removes and returns the entries set at or before `cutoff`, oldest first. */
  expire(cutoff: number): Array<V> {
    const expired: Array<V> = []
    while (this.head < this.keys.length) {
      const key = this.keys[this.head]!
      const entry = this.entries.get(key)
      if (entry !== undefined && entry.version === this.versions[this.head]) {
        if (entry.at > cutoff) break
        this.entries.delete(key)
        expired.push(entry.value)
      }
      this.head++
    }
    this.compactIfSparse()
    return expired
  }

  values(): IterableIterator<V> {
    return this.valuesOf(this.entries.values())
  }

  private *valuesOf(entries: IterableIterator<Aged<V>>): IterableIterator<V> {
    for (const entry of entries) yield entry.value
  }

  /** Removes the oldest live entry. */
  private shiftLive(): Aged<V> | undefined {
    while (this.head < this.keys.length) {
      const key = this.keys[this.head]!
      const version = this.versions[this.head]!
      this.head++
      const entry = this.entries.get(key)
      if (entry !== undefined && entry.version === version) {
        this.entries.delete(key)
        return entry
      }
    }
    return undefined
  }

  /** Drops consumed and stale order slots once they outnumber live entries. */
  private compactIfSparse(): void {
    const slots = this.keys.length - this.head
    const consumedDominates = this.head > 1024 && this.head > slots
    const staleDominates = slots > 2 * this.entries.size + 1024
    if (!consumedDominates && !staleDominates) return
    const keys: Array<K> = []
    const versions: Array<number> = []
    for (let i = this.head; i < this.keys.length; i++) {
      const key = this.keys[i]!
      if (this.entries.get(key)?.version === this.versions[i]) {
        keys.push(key)
        versions.push(this.versions[i]!)
      }
    }
    this.keys = keys
    this.versions = versions
    this.head = 0
  }
}
