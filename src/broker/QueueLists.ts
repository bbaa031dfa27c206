/**
 * Lists of values by key, each kept in queue order (a number each value carries, `seqOf`): the Mailbox's mail by
 * recipient and by sender. What it owns: the lists' links. Why a module of its own: the mailbox's bounds evict a
 * recipient's or a sender's oldest mail first, and finding it by a scan of every entry held under the key made a
 * restore past a recipient's byte bound quadratic (one scan per eviction: 150–400 µs at ~18,600 held; review rrsq,
 * docs/performance.md "Restore past a recipient's bound, seventy-first stop"). Here the oldest is a list's head, O(1).
 *
 * A value added with the highest number yet (as mail is queued, nearly always) is appended, one comparison; one
 * below every other is put at the head. One in between (mail put back at its place) is found its place by a walk from
 * both ends at once, so it costs the distance to the nearer end. Removal is O(1) by the link `add` returned.
 */

/** A value's place in its list: what `QueueLists.remove` takes. */
export interface QueueLink<V> {
  readonly value: V
  prev: QueueLink<V> | undefined
  next: QueueLink<V> | undefined
}

/** One key's list: never empty (a key whose last value goes is dropped). */
interface List<V> {
  head: QueueLink<V>
  tail: QueueLink<V>
  size: number
}

/** Values by key, each key's in ascending `seqOf` order (ties: in the order added); see the module header. */
export class QueueLists<K, V> {
  private readonly lists = new Map<K, List<V>>()
  private readonly seqOf: (value: V) => number

  /** @param seqOf the value's place in queue order; it must not change while the value is listed. */
  constructor(seqOf: (value: V) => number) {
    this.seqOf = seqOf
  }

  /** Lists `value` under `key` at its place in queue order (after any value of the same number); its link. */
  add(key: K, value: V): QueueLink<V> {
    const link: QueueLink<V> = { value, prev: undefined, next: undefined }
    const list = this.lists.get(key)
    if (list === undefined) {
      this.lists.set(key, { head: link, tail: link, size: 1 })
      return link
    }
    list.size++
    const seq = this.seqOf(value)
    if (seq >= this.seqOf(list.tail.value)) {
      link.prev = list.tail
      list.tail.next = link
      list.tail = link
      return link
    }
    if (seq < this.seqOf(list.head.value)) {
      link.next = list.head
      list.head.prev = link
      list.head = link
      return link
    }
    // Between the head (at or before it) and the tail (after it): the last link at or before `seq`, from both ends.
    let front = list.head
    let back = list.tail
    let after: QueueLink<V> | undefined
    while (after === undefined) {
      const next = front.next
      if (next === undefined || this.seqOf(next.value) > seq) after = front
      else front = next
      const prev = back.prev
      if (after === undefined && (prev === undefined || this.seqOf(prev.value) <= seq)) after = prev ?? list.head
      else if (prev !== undefined) back = prev
    }
    link.prev = after
    link.next = after.next
    if (after.next !== undefined) after.next.prev = link
    after.next = link
    return link
  }

  /** Takes `link` (what `add` returned for `key`) out of `key`'s list. */
  remove(key: K, link: QueueLink<V>): void {
    const list = this.lists.get(key)
    if (list === undefined) return
    if (--list.size === 0) {
      this.lists.delete(key)
      return
    }
    if (link.prev === undefined) list.head = link.next ?? list.head
    else link.prev.next = link.next
    if (link.next === undefined) list.tail = link.prev ?? list.tail
    else link.next.prev = link.prev
    link.prev = undefined
    link.next = undefined
  }

  /** The first value of `key`'s list in queue order (the lowest number), or undefined when none is listed. */
  head(key: K): V | undefined {
    return this.lists.get(key)?.head.value
  }

  /** How many values are listed under `key`. */
  count(key: K): number {
    return this.lists.get(key)?.size ?? 0
  }

  /** Whether any value is listed under `key`. */
  has(key: K): boolean {
    return this.lists.has(key)
  }

  /** The values listed under `key`, in queue order (a copy). */
  values(key: K): Array<V> {
    const values: Array<V> = []
    for (let link = this.lists.get(key)?.head; link !== undefined; link = link.next) values.push(link.value)
    return values
  }
}
