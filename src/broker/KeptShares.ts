/**
 * Each receiver's share of the withdrawals' list (OutboundRecords'
 * withdrawals kept past their routes, review revao AO2): the kept
 * withdrawals of messages to one receiver's session, oldest first, and how
 * many. A withdrawal is kept only while its message may still wait for its
 * receiver, unwritten or unconfirmed (Receipts' `mayStillWait`) — almost
 * always because of that receiver: it does not read its socket, or (with
 * `received-v1`) never confirms. Such a receiver makes every cancel of a
 * message to it a kept withdrawal; with one bound for all, 4,096 of them
 * pushed every other receiver's kept withdrawals off the list, and those
 * messages, given back later, went out live (review revay). With a share, a
 * receiver past it loses its own oldest kept withdrawal, no one else's.
 *
 * A receiver's list is made of small place objects, one per kept
 * withdrawal, found from the record by a `Map`: the outbound records stay
 * as small as they are (they are kept by the hundred thousand; a kept
 * withdrawal is rare). Each step is O(1): no scan of the list.
 *
 * Owner: OutboundRecords, which joins and leaves a record here in step with
 * its withdrawals' list, on the cancel, supersede and route-aging paths
 * only (never the plain send path).
 */

/** One kept withdrawal on its receiver's list. */
class Place<T> {
  readonly item: T
  readonly share: Share<T>
  older: Place<T> | undefined = undefined
  newer: Place<T> | undefined = undefined

  constructor(item: T, share: Share<T>) {
    this.item = item
    this.share = share
  }
}

/** One receiver's kept withdrawals, oldest first. */
class Share<T> {
  readonly receiverKey: string
  oldest: Place<T> | undefined = undefined
  newest: Place<T> | undefined = undefined
  count = 0
  /** Its overflow was reported (`KeptShares`' `full`) since the share last held none. */
  told = false

  constructor(receiverKey: string) {
    this.receiverKey = receiverKey
  }
}

/**
 * The receivers' shares of the withdrawals' list (see the module header),
 * each at most `capacity`. `full` is told a receiver's key the first time
 * its share overflows since it last held none: once per episode, not per
 * withdrawal dropped, so a receiver that never confirms writes one line,
 * not one per cancel.
 */
export class KeptShares<T extends object> {
  private readonly places = new Map<T, Place<T>>()
  private readonly shares = new Map<string, Share<T>>()
  private readonly capacity: number
  private readonly full: (receiverKey: string) => void
  private overflowTotal = 0

  /**
   * @param capacity the most kept withdrawals of one receiver.
   * @param full told a receiver's key when its share first overflows (see the class).
   */
  constructor(capacity: number, full: (receiverKey: string) => void) {
    this.capacity = capacity
    this.full = full
  }

  /** Kept withdrawals of messages to `receiverKey`'s session. */
  of(receiverKey: string): number {
    return this.shares.get(receiverKey)?.count ?? 0
  }

  /** Kept withdrawals dropped so far because their receiver's share overflowed (`join`). */
  get overflows(): number {
    return this.overflowTotal
  }

  /**
   * `item` joins `receiverKey`'s share as its newest. Past `capacity`, the
   * share's oldest is returned: the caller drops it from the withdrawals'
   * list (which calls `leave`), so the share is back at its bound.
   */
  join(item: T, receiverKey: string): T | undefined {
    let share = this.shares.get(receiverKey)
    if (share === undefined) {
      share = new Share<T>(receiverKey)
      this.shares.set(receiverKey, share)
    }
    const place = new Place(item, share)
    place.older = share.newest
    if (share.newest !== undefined) share.newest.newer = place
    else share.oldest = place
    share.newest = place
    share.count++
    this.places.set(item, place)
    if (share.count <= this.capacity) return undefined
    this.overflowTotal++
    if (!share.told) {
      share.told = true
      this.full(receiverKey)
    }
    return share.oldest?.item
  }

  /** `item` left the withdrawals' list (routed again, forgotten, its day, a bound): off its share, if on one. */
  leave(item: T): void {
    const place = this.places.get(item)
    if (place === undefined) return
    this.places.delete(item)
    const share = place.share
    if (place.older !== undefined) place.older.newer = place.newer
    else share.oldest = place.newer
    if (place.newer !== undefined) place.newer.older = place.older
    else share.newest = place.older
    share.count--
    if (share.count === 0) this.shares.delete(share.receiverKey)
  }
}
