/**
 * KeptShares' count buckets against a naive reference (review revbl) —
 * each receiver's kept items oldest first, its count, and the step at which
 * it last reached its count; the largest is the receiver with the most, on
 * a tie the one that reached that count LAST (the share whose join made the
 * tie, review revbl BL3); its oldest is the one dropped. Settled items (their give-back settled them) are
 * a second order per receiver, counted the same way, and one of them is dropped before any still waiting.
 * Random join / leave / drop / re-join of the item just left / settle, and a linkKept-like bound (small, so
 * it is reached).
 */
import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { KeptShares } from "../../src/broker/KeptShares.ts"

interface Item {
  readonly n: number
}

class Reference {
  readonly shares = new Map<string, { items: Array<Item>; reachedAt: number }>()
  private step = 0
  join(item: Item, key: string): void {
    const share = this.shares.get(key) ?? { items: [], reachedAt: 0 }
    share.items.push(item)
    share.reachedAt = this.step++
    this.shares.set(key, share)
  }
  leave(item: Item): void {
    for (const [key, share] of this.shares) {
      const at = share.items.indexOf(item)
      if (at < 0) continue
      share.items.splice(at, 1)
      share.reachedAt = this.step++
      if (share.items.length === 0) this.shares.delete(key)
      return
    }
  }
  largest(): [string, Item] | undefined {
    let best: [string, { items: Array<Item>; reachedAt: number }] | undefined
    for (const entry of this.shares) {
      if (
        best === undefined || entry[1].items.length > best[1].items.length ||
        (entry[1].items.length === best[1].items.length && entry[1].reachedAt > best[1].reachedAt)
      ) best = entry
    }
    return best === undefined ? undefined : [best[0], best[1].items[0]!]
  }
  all(): Array<Item> {
    return [...this.shares.values()].flatMap((share) => share.items)
  }
}

/**
 * The naive two orders: each receiver's waiting items and its settled ones, each order its own Reference; the
 * one dropped is the settled order's largest's oldest, else the waiting order's; a share counts both.
 */
class TwoOrders {
  readonly waiting = new Reference()
  readonly settled = new Reference()
  join(item: Item, key: string): void {
    this.waiting.join(item, key)
  }
  settle(item: Item): void {
    for (const [key, share] of this.waiting.shares) {
      if (!share.items.includes(item)) continue
      this.waiting.leave(item)
      this.settled.join(item, key)
      return
    }
  }
  leave(item: Item): void {
    this.waiting.leave(item)
    this.settled.leave(item)
  }
  largest(): [string, Item] | undefined {
    return this.settled.largest() ?? this.waiting.largest()
  }
  of(key: string): number {
    return (this.waiting.shares.get(key)?.items.length ?? 0) + (this.settled.shares.get(key)?.items.length ?? 0)
  }
  all(): Array<Item> {
    return [...this.waiting.all(), ...this.settled.all()]
  }
}

const op = fc.oneof(
  fc.record({ kind: fc.constant("join" as const), receiver: fc.integer({ min: 0, max: 3 }) }),
  fc.record({ kind: fc.constant("leave" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("dropLargest" as const) }),
  fc.record({ kind: fc.constant("settle" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("rejoin" as const), pick: fc.nat(), receiver: fc.integer({ min: 0, max: 3 }) })
)

describe("KeptShares against a naive reference", () => {
  it("after any join/leave/drop/re-join/settle sequence the counts, the largest receiver and its oldest (a settled one first) match the reference", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 300 }), fc.integer({ min: 1, max: 12 }), (ops, bound) => {
        const shares = new KeptShares<Item>()
        const reference = new TwoOrders()
        let next = 0
        let total = 0
        for (const o of ops) {
          if (o.kind === "join") {
            const item = { n: next++ }
            const key = `r${o.receiver}`
            shares.join(item, key)
            reference.join(item, key)
            total++
            // As linkKept: past the bound, the largest's oldest goes (the item that just joined, when its share made the tie).
            if (total > bound) {
              const victim = shares.largestOldest()
              expect(victim).toBe(reference.largest()?.[1])
              shares.leave(victim!)
              reference.leave(victim!)
              total--
            }
          } else if (o.kind === "settle") {
            // Its give-back settled it (OutboundRecords.settleKept): settled again, or on no share, nothing.
            const held = reference.all()
            if (held.length === 0) continue
            const item = held[o.pick % held.length]!
            shares.settle(item)
            reference.settle(item)
          } else {
            const held = reference.all()
            if (held.length === 0) continue
            const item = o.kind === "dropLargest" ? reference.largest()![1] : held[o.pick % held.length]!
            shares.leave(item)
            reference.leave(item)
            total--
            if (o.kind === "rejoin") {
              // The record that just left joins again (routed again, then aged once more).
              shares.join(item, `r${o.receiver}`)
              reference.join(item, `r${o.receiver}`)
              total++
            }
          }
          const expected = reference.largest()
          expect([shares.largestReceiver, shares.largestOldest()]).toEqual([expected?.[0], expected?.[1]])
          for (const r of [0, 1, 2, 3]) {
            expect(shares.of(`r${r}`)).toBe(reference.of(`r${r}`))
            expect(shares.settledOf(`r${r}`)).toBe(reference.settled.shares.get(`r${r}`)?.items.length ?? 0)
          }
        }
      }),
      { numRuns: 300 }
    )
  })

  it("a leave from the only share at the largest count steps the largest down to the next (3,1 → 2,1; 1 → none)", () => {
    const shares = new KeptShares<Item>()
    const a = [{ n: 0 }, { n: 1 }, { n: 2 }]
    const b = { n: 3 }
    for (const item of a) shares.join(item, "a")
    shares.join(b, "b")
    shares.leave(a[2]!)
    expect([shares.largestReceiver, shares.largestOldest()]).toEqual(["a", a[0]])
    shares.leave(a[0]!)
    shares.leave(a[1]!)
    expect([shares.largestReceiver, shares.largestOldest()]).toEqual(["b", b])
    shares.leave(b)
    expect([shares.largestReceiver, shares.largestOldest()]).toEqual([undefined, undefined])
    shares.leave(b)
    expect(shares.of("b")).toBe(0)
  })
})
