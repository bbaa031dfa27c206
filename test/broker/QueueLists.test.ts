/**
 * QueueLists keeps each key's values in queue order whatever order they are added in — appended, put at the head,
 * or put back between (the walk from both ends) — and its head is the lowest number: the oldest the mailbox's bounds
 * evict (Mailbox.ts; review rrsq). Plain values, no clock.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { type QueueLink, QueueLists } from "../../src/broker/QueueLists.ts"

interface Item {
  readonly seq: number
}

const lists = () => new QueueLists<string, Item>((item) => item.seq)
const seqs = (queue: QueueLists<string, Item>, key: string) => queue.values(key).map((item) => item.seq)

describe("QueueLists", () => {
  it("keeps a key's values in queue order, added in any order, its head the lowest", () => {
    const queue = lists()
    const order = [5, 9, 1, 7, 3, 8, 2, 6, 4, 10, 0]
    for (const seq of order) queue.add("t", { seq })
    assert.deepStrictEqual(seqs(queue, "t"), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    assert.strictEqual(queue.head("t")?.seq, 0)
    assert.strictEqual(queue.count("t"), order.length)
  })

  it("puts a value of a number already listed after it, and keeps the keys apart", () => {
    const queue = lists()
    const first = { seq: 2 }
    const tied = { seq: 2 }
    for (const item of [{ seq: 1 }, first, { seq: 3 }, tied]) queue.add("t", item)
    queue.add("u", { seq: 0 })
    const listed = queue.values("t")
    assert.deepStrictEqual(listed.map((item) => item.seq), [1, 2, 2, 3])
    assert.strictEqual(listed[1], first)
    assert.strictEqual(listed[2], tied)
    assert.deepStrictEqual(seqs(queue, "u"), [0])
  })

  it("removes by link from the head, the tail and between; the head moves on, and an emptied key is gone", () => {
    const queue = lists()
    const links = [1, 2, 3, 4].map((seq) => queue.add("t", { seq }))
    queue.remove("t", links[0]!)
    assert.strictEqual(queue.head("t")?.seq, 2)
    queue.remove("t", links[2]!)
    queue.remove("t", links[3]!)
    assert.deepStrictEqual(seqs(queue, "t"), [2])
    queue.add("t", { seq: 0 })
    queue.add("t", { seq: 9 })
    assert.deepStrictEqual(seqs(queue, "t"), [0, 2, 9])
    queue.remove("t", links[1]!)
    assert.deepStrictEqual(seqs(queue, "t"), [0, 9])
    const rest = lists()
    const only = rest.add("v", { seq: 1 })
    rest.remove("v", only)
    assert.isFalse(rest.has("v"))
    assert.strictEqual(rest.head("v"), undefined)
    assert.deepStrictEqual(seqs(rest, "v"), [])
  })

  it("matches a model (every value listed, sorted by number, ties in the order added) under random adds and removes", () => {
    const op = fc.oneof(
      fc.record({ add: fc.constant(true), key: fc.constantFrom("t", "u"), seq: fc.nat(40) }),
      fc.record({ add: fc.constant(false), pick: fc.nat(1000) })
    )
    fc.assert(fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
      const queue = lists()
      const listed: Array<{ readonly key: string; readonly item: Item; readonly link: QueueLink<Item>; readonly n: number }> = []
      let n = 0
      for (const step of ops) {
        if ("seq" in step) {
          const item = { seq: step.seq }
          listed.push({ key: step.key, item, link: queue.add(step.key, item), n: n++ })
        } else if (listed.length > 0) {
          const [gone] = listed.splice(step.pick % listed.length, 1)
          if (gone !== undefined) queue.remove(gone.key, gone.link)
        }
        for (const key of ["t", "u"]) {
          const model = listed.filter((entry) => entry.key === key).sort((a, b) => a.item.seq - b.item.seq || a.n - b.n)
          assert.deepStrictEqual(queue.values(key), model.map((entry) => entry.item))
          assert.strictEqual(queue.head(key), model[0]?.item)
          assert.strictEqual(queue.count(key), model.length)
        }
      }
    }))
  })
})
