/**
 * Each receiver's share of the withdrawals' list (KeptWithdrawals.ts:
 * OutboundRecords' withdrawals kept past their routes, review revao AO2):
 * the kept withdrawals of messages to one receiver's session, oldest
 * first, how many, and which receiver holds the most. A withdrawal is kept only while
 * its message may still wait for its receiver, unwritten or unconfirmed
 * (MayStillWait.ts's `mayStillWait`) — almost always because of that receiver: it
 * does not read its socket, or (with `received-v1`) never confirms. Such a
 * receiver makes every cancel of a message to it a kept withdrawal. When
 * the list is full, the one dropped is the oldest of the receiver holding
 * the most (`largestOldest`), not the list's oldest: receivers that never
 * confirm — even several sessions of one client — lose their own, and of
 * the withdrawals still waiting a receiver holding fewer than they do loses
 * none (review revbh BH1). A settled one goes before any still waiting,
 * whoever holds it (below): a receiver's one settled withdrawal goes while
 * another holds thousands still waiting. That is the trade-off: a settled
 * one only guards a late control about a message the mailbox dropped
 * already, a waiting one a message a give-back could still deliver live
 * (review revbx BX2). While the list has room nobody loses any, however
 * many one receiver holds (BH4).
 *
 * The largest is found in O(1) by count buckets: every share with `n` kept
 * is on bucket `n`'s list, in the order it reached `n` (a tie goes against
 * the share that reached that count last: the one whose join made it,
 * review revbl BL3), and a count moves by one at a time,
 * so the largest count moves by at most one per step. A receiver's list is
 * made of small place objects, one per kept withdrawal, found from the
 * record by a `Map`: the outbound records stay as small as they are (they
 * are kept by the hundred thousand; a kept withdrawal is rare). Each step is
 * O(1): no scan of the list.
 *
 * A kept withdrawal whose message's give-back settled it (the mailbox
 * dropped the message: OutboundRecords.settleKept) guards nothing that can
 * still be delivered live; it stays for a late control about that message
 * (MailReturns.aboutUngiven). Each receiver's settled ones are a second
 * order of their own, in the order they SETTLED (`settle` moves one there
 * as its newest: O(1), where keeping them by when each was kept would mean
 * a sorted insert; review revbx BX1), with count buckets of their own, and
 * when the list is full a settled one goes before any still waiting: the
 * earliest settled of the receiver holding the most settled, and only with
 * none settled anywhere the oldest waiting of the receiver holding the
 * most waiting (`largestOldest`). A receiver's share (`of`) counts both.
 *
 * Owner: KeptWithdrawals, which joins and leaves a record here in step with
 * the withdrawals' list: only a record whose withdrawal is kept past its
 * route (never a plain send's record).
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

/** One receiver's kept withdrawals, oldest first, and its links on its count's bucket. */
class Share<T> {
  readonly receiverKey: string
  oldest: Place<T> | undefined = undefined
  newest: Place<T> | undefined = undefined
  count = 0
  /** The share before and after it on bucket `count`'s list. */
  before: Share<T> | undefined = undefined
  after: Share<T> | undefined = undefined

  constructor(receiverKey: string) {
    this.receiverKey = receiverKey
  }
}

/** The shares holding one count, in the order they reached it. */
class Bucket<T> {
  first: Share<T> | undefined = undefined
  last: Share<T> | undefined = undefined
}

/** One order of the receivers' shares (waiting, or settled): count buckets over receivers' lists. */
class CountShares<T extends object> {
  private readonly places = new Map<T, Place<T>>()
  private readonly shares = new Map<string, Share<T>>()
  /** Bucket `n`: the shares holding `n` (index 0 unused); grows to the list's bound, plus one. */
  private readonly buckets: Array<Bucket<T>> = []
  /** The largest count of any share; 0 when none holds any. */
  private largest = 0

  /** Kept withdrawals of messages to `receiverKey`'s session. */
  of(receiverKey: string): number {
    return this.shares.get(receiverKey)?.count ?? 0
  }

  /**
   * The receiver holding the most, if any holds one; of several holding as
   * many, the LAST to reach that count — the one whose join made the tie,
   * so a tie costs the share that just grew, not an older one (review
   * revbl BL3: with every share at one, the receiver that joined last loses
   * the withdrawal it just joined, not a bystander's).
   */
  get largestReceiver(): string | undefined {
    return this.buckets[this.largest]?.last?.receiverKey
  }

  /** The first in this order (oldest kept, or earliest settled) of the receiver holding the most (`largestReceiver`), if any. */
  largestOldest(): T | undefined {
    return this.buckets[this.largest]?.last?.oldest?.item
  }

  /** `item` joins `receiverKey`'s share as its newest. */
  join(item: T, receiverKey: string): void {
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
    this.places.set(item, place)
    this.move(share, share.count + 1)
    if (share.count > this.largest) this.largest = share.count
  }

  /** The receiver whose share holds `item`, if one does. */
  receiverOf(item: T): string | undefined {
    return this.places.get(item)?.share.receiverKey
  }

  /** `item` left this order: off its share, if on one; whether it was on one. */
  leave(item: T): boolean {
    const place = this.places.get(item)
    if (place === undefined) return false
    this.places.delete(item)
    const share = place.share
    if (place.older !== undefined) place.older.newer = place.newer
    else share.oldest = place.newer
    if (place.newer !== undefined) place.newer.older = place.older
    else share.newest = place.older
    this.move(share, share.count - 1)
    if (share.count === 0) this.shares.delete(share.receiverKey)
    // A count falls by one: the largest falls by at most one.
    if (this.buckets[this.largest]?.first === undefined) this.largest--
    return true
  }

  /** `share` leaves its count's bucket and joins the last of `count`'s (none for 0). */
  private move(share: Share<T>, count: number): void {
    if (share.count > 0) {
      const from = this.bucketOf(share.count)
      if (share.before !== undefined) share.before.after = share.after
      else from.first = share.after
      if (share.after !== undefined) share.after.before = share.before
      else from.last = share.before
      share.before = share.after = undefined
    }
    share.count = count
    if (count === 0) return
    const to = this.bucketOf(count)
    share.before = to.last
    if (to.last !== undefined) to.last.after = share
    else to.first = share
    to.last = share
  }

  private bucketOf(count: number): Bucket<T> {
    let bucket = this.buckets[count]
    if (bucket === undefined) {
      bucket = new Bucket<T>()
      this.buckets[count] = bucket
    }
    return bucket
  }
}

/**
 * The receivers' shares of the withdrawals' list (see the module header):
 * how many each holds, settled or waiting, and the one to drop when the
 * list is past its bound (`largestOldest`): a settled one before any still
 * waiting, each order fair by count buckets.
 */
export class KeptShares<T extends object> {
  private readonly waiting = new CountShares<T>()
  private readonly settled = new CountShares<T>()

  /** Kept withdrawals of messages to `receiverKey`'s session, settled or waiting. */
  of(receiverKey: string): number {
    return this.waiting.of(receiverKey) + this.settled.of(receiverKey)
  }

  /** Of those, the ones whose give-back settled them (`settle`). */
  settledOf(receiverKey: string): number {
    return this.settled.of(receiverKey)
  }

  /**
   * The receiver whose withdrawal `largestOldest` names: the one holding the
   * most settled, if any is settled; else the one holding the most waiting.
   * Of several holding as many, the LAST to reach that count — the one
   * whose join (or settle) made the tie, so a tie costs the share that just
   * grew, not an older one (review revbl BL3).
   */
  get largestReceiver(): string | undefined {
    return this.settled.largestReceiver ?? this.waiting.largestReceiver
  }

  /**
   * The one to drop when the list is full: the earliest settled (by when
   * `settle` moved it, not when it was kept) of the receiver holding the
   * most settled, or, with none settled, the oldest kept of the receiver
   * holding the most still waiting; none: undefined.
   */
  largestOldest(): T | undefined {
    return this.settled.largestOldest() ?? this.waiting.largestOldest()
  }

  /** `item` joins `receiverKey`'s share as its newest, still waiting. */
  join(item: T, receiverKey: string): void {
    this.waiting.join(item, receiverKey)
  }

  /**
   * `item`'s give-back settled it: it leaves its receiver's waiting order
   * and joins that receiver's settled one as its newest. Settled already,
   * or on no share: nothing.
   */
  settle(item: T): void {
    const receiverKey = this.waiting.receiverOf(item)
    if (receiverKey === undefined) return
    this.waiting.leave(item)
    this.settled.join(item, receiverKey)
  }

  /** `item` left the withdrawals' list (routed again, forgotten, its day, the bound): off its share, if on one. */
  leave(item: T): void {
    if (!this.waiting.leave(item)) this.settled.leave(item)
  }
}
