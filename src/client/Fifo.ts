/**
 * A first-in, first-out list whose head leaves in constant time.
 *
 * The client's unhandled messages and a session's hand-off queue are FIFOs
 * whose items nearly always leave from the head, and that a receive burst
 * fills with thousands of items: an array's `shift` or `splice(0, 1)` moves
 * every item behind the head each time (docs/performance.md, "The client's
 * receive path, eleventh stop"). This one only moves the head's index, and
 * drops the empty front of its array once it is as long as what follows it.
 * An item may still leave from the middle (`remove`), at an array's cost.
 * Owned by whoever made it; plain synchronous code.
 */

/** The list (see the module header). */
export class Fifo<A extends object> {
  private items: Array<A | undefined> = []
  private head = 0

  /** How many items are in the list. */
  get size(): number {
    return this.items.length - this.head
  }

  /** The oldest item, if any. */
  peek(): A | undefined {
    return this.items[this.head]
  }

  /** Adds `item` behind every other. */
  push(item: A): void {
    this.items.push(item)
  }

  /** Takes `item` out, wherever it is (the head in constant time); false when it is not in the list. */
  remove(item: A): boolean {
    const items = this.items
    if (this.head < items.length && items[this.head] === item) {
      items[this.head] = undefined
      this.head++
      this.compact()
      return true
    }
    const at = items.indexOf(item, this.head)
    if (at < 0) return false
    items.splice(at, 1)
    return true
  }

  /** Takes every item out, oldest first. */
  takeAll(): Array<A> {
    const taken: Array<A> = []
    for (let i = this.head; i < this.items.length; i++) {
      const item = this.items[i]
      if (item !== undefined) taken.push(item)
    }
    this.items = []
    this.head = 0
    return taken
  }

  private compact(): void {
    const items = this.items
    if (this.head === items.length) {
      this.items = []
      this.head = 0
    } else if (this.head >= 1024 && this.head * 2 >= items.length) {
      this.items = items.slice(this.head)
      this.head = 0
    }
  }
}
