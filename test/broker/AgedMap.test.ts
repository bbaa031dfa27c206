import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { AgedMap } from "../../src/broker/AgedMap.ts"

type Op =
  | { readonly op: "set"; readonly key: number; readonly value: number; readonly dt: number }
  | { readonly op: "delete"; readonly key: number }
  | { readonly op: "update"; readonly key: number; readonly value: number }
  | { readonly op: "expire"; readonly back: number }

const ops = fc.array(
  fc.oneof(
    fc.record({ op: fc.constant("set" as const), key: fc.nat(20), value: fc.integer(), dt: fc.nat(5) }),
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
  it("behaves like an age-ordered list under any sequence of operations", () => {
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
            const cutoff = now - step.back
            const expired = model.filter((entry) => entry.at <= cutoff)
            // Entries leave strictly from the front, stopping at the first young one.
            const firstYoung = model.findIndex((entry) => entry.at > cutoff)
            const leaving = firstYoung === -1 ? model : model.slice(0, firstYoung)
            model = firstYoung === -1 ? [] : model.slice(firstYoung)
            expect(map.expire(cutoff)).toEqual(leaving.map((entry) => entry.value))
            expect(expired.length).toBeGreaterThanOrEqual(leaving.length)
            break
          }
        }
        expect(map.size).toBe(model.length)
        for (const entry of model) expect(map.get(entry.key)).toBe(entry.value)
      }
    }))
  })

  it("keeps the newest entries across many deletes, sets and expiries", () => {
    const map = new AgedMap<number, number>(65_536)
    for (let i = 0; i < 65_536; i++) map.set(i, i, i)
    for (let i = 0; i < 60_000; i++) map.delete(i)
    // Each further set evicts nothing until capacity; expire pops from the front in O(1) amortised.
    for (let i = 65_536; i < 200_000; i++) {
      map.set(i, i, i)
      map.expire(i - 65_536)
    }
    expect(map.size).toBeLessThanOrEqual(65_537)
    expect(map.get(199_999)).toBe(199_999)
  })
})
