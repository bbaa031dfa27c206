/**
 * A table of entries found by their message's sender and id, keyed by the
 * id alone: the durable journal's mail stored (StoreJournal.ts) and its
 * acknowledgements held until a read (ReadAcks.ts).
 *
 * Why the id alone: those tables were keyed by the record key
 * (`recordKeyOf(sender, id)`), a string built per message that only durable
 * mode hashed — its first lookup was most of `putMail`'s time
 * (docs/performance.md, "Durable, seventh stop" and "Durable, eighth stop").
 * The message id is a string the message already carries, and V8 keeps a
 * string's hash on the string once computed, so at most the entry's first
 * lookup here hashes it (`OutboundRecords` keys its table by an integer hash
 * of its own, not by the string) and the delete that drops it does not; the
 * sender's key is compared, not hashed. Ids are per sender: an entry whose
 * id another sender's entry holds already goes into a second map of arrays
 * (rare; empty otherwise).
 *
 * A floor (`floor` placeholders): V8 shrinks a `Map`'s table when a delete
 * leaves it under a quarter full, and grows it again as it refills, each a
 * new table and a rehash in the runtime. The journal's mail table fills with
 * a window's sends and drains with their reads, so without a floor it went
 * through that about eight times per 64 messages (docs/performance.md,
 * "Durable, tenth stop"). Placeholders keep it from shrinking: number keys,
 * which no message id (a string) equals, set first and never deleted, with
 * no entry, which `firsts` skips. A floor `f`, a power of two, holds the
 * capacity still while at most `f` entries are live: V8 grows a table to
 * `c` only when more than `c / 4` keys are in it, and shrinks it only when
 * fewer than `c / 4` are, so a table that flaps needs a power of two
 * strictly between `f` and `f` + the live entries.
 *
 * Owner: whoever holds the table (the Router's synchronous code only).
 */

/** What an entry must say: whose message, and its id. */
export interface MessageEntry {
  readonly senderKey: string
  readonly id: string
}

/** Entries by (sender, id); see the module header. At most one entry per (sender, id). */
export class ByMessage<V extends MessageEntry> {
  /** The first entry set for each id, in the order they were set, after `floor` placeholders (number keys, no entry). */
  private readonly first = new Map<string | number, V | undefined>()
  /** Entries of other senders whose id `first` held when they were set (two senders, one id). */
  private readonly others = new Map<string, Array<V>>()
  private count = 0

  /**
   * @param floor placeholders that keep the table of ids from shrinking below
   *   what that many entries need (see the module header); 0 for a table that
   *   is mostly empty.
   */
  constructor(floor = 0) {
    for (let i = 0; i < floor; i++) this.first.set(i, undefined)
  }

  /** Entries held. */
  get size(): number {
    return this.count
  }

  /** `senderKey`'s entry for its message `id`. */
  get(senderKey: string, id: string): V | undefined {
    const found = this.first.get(id)
    if (found !== undefined && found.senderKey === senderKey) return found
    if (this.others.size === 0) return undefined
    const more = this.others.get(id)
    if (more === undefined) return undefined
    for (let i = 0; i < more.length; i++) if (more[i]!.senderKey === senderKey) return more[i]
    return undefined
  }

  /**
   * Sets `entry` as its (sender, id)'s: the entry it replaces, if any, is
   * returned, and `entry` takes its place in the order (`remove` and set
   * again to put it at the end). Two lookups when its id is new.
   */
  set(entry: V): V | undefined {
    const id = entry.id
    const found = this.first.get(id)
    if (found === undefined && this.others.size === 0) {
      this.first.set(id, entry)
      this.count++
      return undefined
    }
    if (found !== undefined && found.senderKey === entry.senderKey) {
      this.first.set(id, entry)
      return found
    }
    const more = this.others.get(id)
    if (more !== undefined) {
      for (let i = 0; i < more.length; i++) {
        const other = more[i]!
        if (other.senderKey !== entry.senderKey) continue
        more[i] = entry
        return other
      }
    }
    this.count++
    if (found === undefined) this.first.set(id, entry)
    else if (more === undefined) this.others.set(id, [entry])
    else more.push(entry)
    return undefined
  }

  /** Takes out `entry`, which is in the table (one lookup while no id is shared). */
  remove(entry: V): void {
    if (this.others.size === 0 || this.first.get(entry.id) === entry) {
      this.first.delete(entry.id)
      this.count--
      return
    }
    this.delete(entry.senderKey, entry.id)
  }

  /** Takes out `senderKey`'s entry for `id`, and returns it. */
  delete(senderKey: string, id: string): V | undefined {
    const found = this.first.get(id)
    if (found !== undefined && found.senderKey === senderKey) {
      this.first.delete(id)
      this.count--
      return found
    }
    if (this.others.size === 0) return undefined
    const more = this.others.get(id)
    if (more === undefined) return undefined
    for (let i = 0; i < more.length; i++) {
      const entry = more[i]!
      if (entry.senderKey !== senderKey) continue
      if (more.length === 1) this.others.delete(id)
      else more.splice(i, 1)
      this.count--
      return entry
    }
    return undefined
  }

  /**
   * The entries set first for their id, in the order they were set (an
   * entry deleted and added again is at the end); deleting the one visited
   * while iterating is allowed.
   */
  *firsts(): Generator<V> {
    // Only placeholders hold no entry.
    for (const entry of this.first.values()) if (entry !== undefined) yield entry
  }

  /** The other entries (their id was another sender's too), in no promised order. */
  rest(): ReadonlyArray<V> {
    if (this.others.size === 0) return []
    const out: Array<V> = []
    for (const more of this.others.values()) out.push(...more)
    return out
  }
}
