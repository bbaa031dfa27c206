import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { AgedMap } from "../../src/broker/AgedMap.ts"

type Op =
  | { readonly op: "set"; readonly key: number; readonly value: number; readonly dt: number }
  | { readonly op: "put"; readonly key: number; readonly value: number; readonly dt: number }
  | { readonly op: "setAged"; readonly key: number; readonly value: number; readonly back: number }
  | { readonly op: "delete"; readonly key: number }
  | { readonly op: "update"; readonly key: number; readonly value: number }
  | { readonly op: "expire"; readonly back: number }

const ops = fc.array(
  fc.oneof(
    fc.record({ op: fc.constant("set" as const), key: fc.nat(20), value: fc.integer(), dt: fc.nat(5) }),
    fc.record({ op: fc.constant("put" as const), key: fc.nat(20), value: fc.integer(), dt: fc.nat(5) }),
    fc.record({ op: fc.constant("setAged" as const), key: fc.nat(20), value: fc.integer(), back: fc.nat(30) }),
    fc.record({ op: fc.constant("delete" as const), key: fc.nat(20) }),
    fc.record({ op: fc.constant("update" as const), key: fc.nat(20), value: fc.integer() }),
    fc.record({ op: fc.constant("expire" as const), back: fc.nat(30) })
  ),
  { maxLength: 400 }
)

/** The obvious model: an array in age order. */
interface Entry {
  readonly key: number
  value: number
  readonly at: number
}

describe("AgedMap", () => {
  it("behaves like an age-ordered list under any sequence of operations: same entries, same order, same evictions, replacements and expiries", () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 12 }), ops, (capacity, sequence: ReadonlyArray<Op>) => {
      const map = new AgedMap<number, number>(capacity)
      let model: Array<Entry> = []
      let now = 0
      for (const step of sequence) {
        switch (step.op) {
          case "set": {
            now += step.dt
            model = model.filter((entry) => entry.key !== step.key)
            model.push({ key: step.key, value: step.value, at: now })
            const evicted = model.length > capacity ? model.splice(0, model.length - capacity) : []
            expect(map.set(step.key, step.value, now)).toEqual(evicted.map((entry) => entry.value))
            break
          }
          case "put": {
            // As `set`, but it answers the value it replaced (what capacity evicts goes unseen).
            now += step.dt
            const replaced = model.find((entry) => entry.key === step.key)
            model = model.filter((entry) => entry.key !== step.key)
            model.push({ key: step.key, value: step.value, at: now })
            if (model.length > capacity) model.splice(0, model.length - capacity)
            expect(map.put(step.key, step.value, now)).toBe(replaced?.value)
            break
          }
          case "setAged": {
            // As `set`, at an age up to 30 before now: placed after every entry as old or older.
            const at = now - step.back
            model = model.filter((entry) => entry.key !== step.key)
            const place = model.filter((entry) => entry.at <= at).length
            model.splice(place, 0, { key: step.key, value: step.value, at })
            const evicted = model.length > capacity ? model.splice(0, model.length - capacity) : []
            expect(map.setAged(step.key, step.value, at)).toEqual(evicted.map((entry) => entry.value))
            break
          }
          case "delete": {
            const index = model.findIndex((entry) => entry.key === step.key)
            const removed = index === -1 ? undefined : model.splice(index, 1)[0]
            expect(map.delete(step.key)).toBe(removed?.value)
            break
          }
          case "update": {
            const entry = model.find((candidate) => candidate.key === step.key)
            if (entry !== undefined) entry.value = step.value
            map.update(step.key, step.value)
            break
          }
          case "expire": {
            // Every entry set at or before the cutoff leaves, oldest first; the rest stay in order.
            const cutoff = now - step.back
            const leaving = model.filter((entry) => entry.at <= cutoff)
            model = model.filter((entry) => entry.at > cutoff)
            expect(map.expire(cutoff)).toEqual(leaving.map((entry) => entry.value))
            break
          }
        }
        expect(map.size).toBe(model.length)
        expect([...map.values()]).toEqual(model.map((entry) => entry.value))
        for (const entry of model) {
          expect(map.get(entry.key)).toBe(entry.value)
          expect(map.setAt(entry.key)).toBe(entry.at)
        }
        for (let key = 0; key <= 20; key++) {
          expect(map.has(key)).toBe(model.some((entry) => entry.key === key))
        }
      }
    }))
  })

  it("at scale: after deletes and expiries it holds exactly the newest entries, oldest first; past capacity it evicts the oldest, in order", () => {
    const capacity = 65_536
    const map = new AgedMap<number, number>(capacity)
    for (let i = 0; i < capacity; i++) map.set(i, i, i)
    for (let i = 0; i < 60_000; i++) map.delete(i)
    // Room for 60,000 more before capacity evicts; meanwhile expiry removes everything older than `capacity / 2`.
    let evicted = 0
    let expired = 0
    for (let i = capacity; i < 200_000; i++) {
      evicted += map.set(i, i, i).length
      expired += map.expire(i - capacity / 2).length
    }
    const oldest = 200_000 - capacity / 2
    expect(map.size).toBe(capacity / 2)
    expect([...map.values()]).toEqual(Array.from({ length: capacity / 2 }, (_, i) => oldest + i))
    expect(map.has(oldest - 1)).toBe(false)
    // Expiry kept the map below capacity, so nothing was ever evicted; everything else expired exactly once.
    expect(evicted).toBe(0)
    expect(expired).toBe(200_000 - 60_000 - capacity / 2)

    // No expiry now: a full capacity of new entries pushes out every older one, oldest first.
    const pushedOut: Array<number> = []
    for (let i = 200_000; i < 200_000 + capacity; i++) pushedOut.push(...map.set(i, i, i))
    expect(pushedOut).toEqual(Array.from({ length: capacity / 2 }, (_, i) => oldest + i))
    expect(map.size).toBe(capacity)
    expect([...map.values()]).toEqual(Array.from({ length: capacity }, (_, i) => 200_000 + i))
  })
})
