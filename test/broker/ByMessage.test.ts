/**
 * `ByMessage` (the durable journal's tables by sender and id) over random
 * sets, deletes and removes, against a map keyed by both: senders share
 * message ids, and each (sender, id) finds its own entry, never another
 * sender's of the same id; a set returns the entry it replaced; every entry
 * is in `firsts` or `rest`, once. A table with a floor (placeholders that
 * keep V8 from shrinking its map) behaves the same: the placeholders are
 * never found, counted or listed, not even for ids that read as their keys.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { ByMessage } from "../../src/broker/ByMessage.ts"

interface Entry {
  readonly senderKey: string
  readonly id: string
  readonly n: number
}

const sender = fc.constantFrom("a", "b", "c")
const ids = ["m1", "m2", "0"]
const id = fc.constantFrom(...ids)
const op = fc.oneof(
  { weight: 3, arbitrary: fc.record({ op: fc.constant("set" as const), sender, id }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("delete" as const), sender, id }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("remove" as const), sender, id }) }
)

describe("ByMessage", () => {
  it.each([0, 3])("finds each (sender, id)'s own entry, ids shared by senders included (floor %d)", (floor) => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const table = new ByMessage<Entry>(floor)
        const model = new Map<string, Entry>()
        let n = 0
        for (const step of ops) {
          const key = `${step.sender}|${step.id}`
          if (step.op === "set") {
            const entry = { senderKey: step.sender, id: step.id, n: n++ }
            assert.strictEqual(table.set(entry), model.get(key))
            model.set(key, entry)
          } else if (step.op === "remove") {
            const entry = model.get(key)
            if (entry === undefined) continue
            table.remove(entry)
            model.delete(key)
          } else {
            assert.strictEqual(table.delete(step.sender, step.id), model.get(key))
            model.delete(key)
          }
          assert.strictEqual(table.size, model.size)
          for (const s of ["a", "b", "c"]) {
            for (const i of ids) assert.strictEqual(table.get(s, i), model.get(`${s}|${i}`))
          }
          const all = [...table.firsts(), ...table.rest()]
          assert.strictEqual(all.length, model.size)
          assert.strictEqual(new Set(all).size, model.size)
        }
      }),
      { numRuns: 1_000 }
    )
  })

  it.each([0, 3])("keeps the first entry of each id in the order set, one removed and set again at the end (floor %d)", (floor) => {
    const table = new ByMessage<Entry>(floor)
    table.set({ senderKey: "a", id: "m1", n: 1 })
    const second = { senderKey: "a", id: "m2", n: 2 }
    table.set(second)
    table.set({ senderKey: "b", id: "m1", n: 3 })
    table.set({ senderKey: "a", id: "m3", n: 4 })
    assert.deepStrictEqual([...table.firsts()].map((e) => e.n), [1, 2, 4])
    assert.deepStrictEqual(table.rest().map((e) => e.n), [3])
    table.remove(second)
    table.set({ senderKey: "a", id: "m2", n: 5 })
    assert.deepStrictEqual([...table.firsts()].map((e) => e.n), [1, 4, 5])
    // Replaced in place: its position is kept.
    table.set({ senderKey: "a", id: "m1", n: 6 })
    assert.deepStrictEqual([...table.firsts()].map((e) => e.n), [6, 4, 5])
  })
})
