/**
 * SetIndex (Indexes.ts) keeps a key's values in a small array, and in a Set
 * once they outnumber 8: whatever the representation, it answers exactly as
 * a map of sets would, through adds, repeated adds, deletes and keys emptied.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { SetIndex } from "../../src/broker/Indexes.ts"

type Op = { readonly add: boolean; readonly key: number; readonly value: number }

describe("SetIndex", () => {
  it("answers like a map of sets, below and above the small-array bound", () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ add: fc.boolean(), key: fc.integer({ min: 0, max: 2 }), value: fc.integer({ min: 0, max: 20 }) }), { maxLength: 300 }),
        (ops: ReadonlyArray<Op>) => {
          const index = new SetIndex<number, number>()
          const model = new Map<number, Set<number>>()
          for (const { add, key, value } of ops) {
            if (add) {
              index.add(key, value)
              const set = model.get(key) ?? new Set()
              set.add(value)
              model.set(key, set)
            } else {
              index.delete(key, value)
              model.get(key)?.delete(value)
              if (model.get(key)?.size === 0) model.delete(key)
            }
            for (let k = 0; k <= 2; k++) {
              const expected = [...(model.get(k) ?? [])].sort((a, b) => a - b)
              const got = index.get(k)
              if (expected.length === 0) assert.isUndefined(got)
              else assert.deepStrictEqual([...(got ?? [])].sort((a, b) => a - b), expected)
              assert.strictEqual(index.count(k), expected.length)
            }
          }
        }
      ),
      { numRuns: 300 }
    )
  })
})
