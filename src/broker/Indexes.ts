/**
 * Indexes the registry keeps so that no per-frame lookup grows with the
 * number or size of other sessions' records (a target by id prefix, a page
 * of `list` by registration order). Plain data structures, owned by the
 * registry's owner (Registry.ts, RecentSessions.ts).
 */

/** What the order index needs of a record: its registration order number. */
interface Ordered {
  readonly order: number
}

/**
 * Live sessions in registration order, searchable by order number, so a paged
 * `list` starts its page in O(log n) wherever the previous page ended. A
 * session that leaves leaves a hole, and the holes are squeezed out once they
 * outnumber the sessions (amortised O(1) per leave).
 */
export class RegistrationOrder<S extends Ordered> {
  private slots: Array<S | undefined> = []
  /** `orders[i]` is the order number of `slots[i]`, kept for holes too, so the search stays a plain bisection. */
  private orders: Array<number> = []
  private holes = 0

  add(session: S): void {
    this.slots.push(session)
    this.orders.push(session.order)
  }

  /** A takeover: the new record takes the old one's place. */
  replace(previous: S, next: S): void {
    const index = this.indexOf(previous.order)
    if (index !== undefined) this.slots[index] = next
  }

  remove(session: S): void {
    const index = this.indexOf(session.order)
    if (index === undefined || this.slots[index] !== session) return
    this.slots[index] = undefined
    this.holes++
    if (this.holes > 64 && this.holes * 2 > this.slots.length) this.compact()
  }

  /** Live sessions registered after `afterOrder`, oldest first. */
  *after(afterOrder: number): Generator<S> {
    for (let i = this.firstAfter(afterOrder); i < this.slots.length; i++) {
      const session = this.slots[i]
      if (session !== undefined) yield session
    }
  }

  /** The index of the first slot whose order is above `order`. */
  private firstAfter(order: number): number {
    let low = 0
    let high = this.orders.length
    while (low < high) {
      const mid = (low + high) >>> 1
      if (this.orders[mid]! <= order) low = mid + 1
      else high = mid
    }
    return low
  }

  private indexOf(order: number): number | undefined {
    const index = this.firstAfter(order - 1)
    return this.orders[index] === order ? index : undefined
  }

  private compact(): void {
    const slots: Array<S | undefined> = []
    const orders: Array<number> = []
    for (let i = 0; i < this.slots.length; i++) {
      const session = this.slots[i]
      if (session === undefined) continue
      slots.push(session)
      orders.push(this.orders[i]!)
    }
    this.slots = slots
    this.orders = orders
    this.holes = 0
  }
}


/**
 * Strings in sorted order, for prefix search in O(log n): the ids starting
 * with a prefix are adjacent. Insert and remove are a binary search and an
 * array splice (a memory move, fast even at tens of thousands of ids).
 */
export class SortedIds {
  private readonly ids: Array<string> = []

  get size(): number {
    return this.ids.length
  }

  add(id: string): void {
    const index = this.lowerBound(id)
    if (this.ids[index] !== id) this.ids.splice(index, 0, id)
  }

  remove(id: string): void {
    const index = this.lowerBound(id)
    if (this.ids[index] === id) this.ids.splice(index, 1)
  }

  /** The ids starting with `prefix`, at most `max` of them (enough to tell one from several). */
  startingWith(prefix: string, max: number): Array<string> {
    const found: Array<string> = []
    for (let i = this.lowerBound(prefix); i < this.ids.length && found.length < max; i++) {
      const id = this.ids[i]!
      if (!id.startsWith(prefix)) break
      found.push(id)
    }
    return found
  }

  /** The index of the first id not below `value`. */
  private lowerBound(value: string): number {
    let low = 0
    let high = this.ids.length
    while (low < high) {
      const mid = (low + high) >>> 1
      if (this.ids[mid]! < value) low = mid + 1
      else high = mid
    }
    return low
  }
}

/** Values under one key up to which a SetIndex keeps them in a small array rather than a Set. */
const SMALL_BUCKET = 8

/**
 * A multimap from a key to a set of values; empty keys are removed. Most keys
 * hold one value (a session's name, its identity, its id across groups), so a
 * key's values are a small array until they outnumber SMALL_BUCKET, and a Set
 * after: an idle session costs a one-element array per index, not a Set's
 * hash table (issue 16: about 140 bytes each), and a key shared by thousands
 * still adds and removes in O(1).
 */
export class SetIndex<K, V> {
  private readonly buckets = new Map<K, Array<V> | Set<V>>()

  add(key: K, value: V): void {
    const bucket = this.buckets.get(key)
    if (bucket === undefined) {
      this.buckets.set(key, [value])
    } else if (!Array.isArray(bucket)) {
      bucket.add(value)
    } else if (!bucket.includes(value)) {
      if (bucket.length < SMALL_BUCKET) bucket.push(value)
      else this.buckets.set(key, new Set([...bucket, value]))
    }
  }

  delete(key: K, value: V): void {
    const bucket = this.buckets.get(key)
    if (bucket === undefined) return
    if (Array.isArray(bucket)) {
      const index = bucket.indexOf(value)
      if (index >= 0) bucket.splice(index, 1)
    } else {
      bucket.delete(value)
    }
    if (sizeOf(bucket) === 0) this.buckets.delete(key)
  }

  /** The values under `key` (do not change them). */
  get(key: K): ReadonlySet<V> | ReadonlyArray<V> | undefined {
    return this.buckets.get(key)
  }

  /** How many values are under `key`. */
  count(key: K): number {
    const bucket = this.buckets.get(key)
    return bucket === undefined ? 0 : sizeOf(bucket)
  }
}

const sizeOf = <V>(bucket: Array<V> | Set<V>): number => Array.isArray(bucket) ? bucket.length : bucket.size
