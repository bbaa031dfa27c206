/**
 * `Fifo`: items leave from the head in arrival order, from the middle when
 * asked, and all at once; what stays is kept in order when the list drops
 * its empty front (past 1024 items taken from the head).
 */
import { assert, describe, it } from "@effect/vitest"
import { Fifo } from "../../src/client/Fifo.ts"

const item = (n: number) => ({ n })

describe("Fifo", () => {
  it("the head leaves first; an item leaves from the middle; takeAll empties it, oldest first", () => {
    const fifo = new Fifo<{ readonly n: number }>()
    const items = [1, 2, 3, 4].map(item)
    for (const each of items) fifo.push(each)
    assert.isTrue(fifo.remove(items[0]!))
    assert.strictEqual(fifo.peek(), items[1])
    assert.isTrue(fifo.remove(items[2]!))
    assert.isFalse(fifo.remove(items[2]!), "an item that left is not in the list")
    assert.strictEqual(fifo.size, 2)
    assert.deepStrictEqual(fifo.takeAll(), [items[1], items[3]])
    assert.strictEqual(fifo.size, 0)
    assert.isUndefined(fifo.peek())
  })

  it("items taken from the head past its compaction keep the rest in order", () => {
    const fifo = new Fifo<{ readonly n: number }>()
    const items = Array.from({ length: 5000 }, (_, n) => item(n))
    for (const each of items) fifo.push(each)
    for (let n = 0; n < 3000; n++) {
      assert.strictEqual(fifo.peek(), items[n])
      assert.isTrue(fifo.remove(items[n]!))
    }
    assert.strictEqual(fifo.size, 2000)
    assert.isTrue(fifo.remove(items[4000]!))
    fifo.push(items[4000]!)
    assert.deepStrictEqual(fifo.takeAll().map(({ n }) => n), [...items.slice(3000, 4000), ...items.slice(4001), items[4000]!].map(({ n }) => n))
  })
})
