/** HeldReceipts: receipts held for absent senders, per sender in order, bounded, for an hour. */
import { assert, describe, it } from "@effect/vitest"
import { HeldReceipts, MAX_HELD, MAX_HELD_CHARS, MAX_HELD_PER_SENDER } from "../../src/broker/HeldReceipts.ts"

const HOUR = 3_600_000

describe("HeldReceipts", () => {
  it("gives a sender its receipts once, in the order they were held, and nobody else's", () => {
    const held = new HeldReceipts()
    held.hold("a", "a1", 1)
    held.hold("b", "b1", 2)
    held.hold("a", "a2", 3)
    assert.deepStrictEqual(held.take("a", 10), ["a1", "a2"])
    assert.deepStrictEqual(held.take("a", 10), [])
    assert.strictEqual(held.size, 1)
    assert.deepStrictEqual(held.take("b", 10), ["b1"])
    assert.strictEqual(held.size, 0)
  })

  it("past MAX_HELD_PER_SENDER, that sender's oldest goes; other senders keep theirs", () => {
    const held = new HeldReceipts()
    held.hold("other", "kept", 0)
    for (let i = 0; i < MAX_HELD_PER_SENDER + 2; i++) held.hold("a", `a${i}`, 1)
    const taken = held.take("a", 1)
    assert.strictEqual(taken.length, MAX_HELD_PER_SENDER)
    assert.strictEqual(taken[0], "a2")
    assert.deepStrictEqual(held.take("other", 1), ["kept"])
  })

  it("past MAX_HELD overall, the oldest of all goes", () => {
    const held = new HeldReceipts()
    const senders = Math.ceil((MAX_HELD + 1) / MAX_HELD_PER_SENDER)
    let n = 0
    for (let s = 0; s < senders; s++) {
      for (let i = 0; i < MAX_HELD_PER_SENDER && n <= MAX_HELD; i++, n++) held.hold(`s${s}`, `s${s}-${i}`, n)
    }
    assert.strictEqual(held.size, MAX_HELD)
    assert.strictEqual(held.take("s0", n)[0], "s0-1", "the first receipt held went")
  })

  it("past MAX_HELD_CHARS overall, the oldest goes", () => {
    const held = new HeldReceipts()
    const big = "x".repeat(MAX_HELD_CHARS / 4)
    for (let i = 0; i < 5; i++) held.hold(`s${i}`, big, i)
    assert.strictEqual(held.size, 4)
    assert.deepStrictEqual(held.take("s0", 5), [])
    assert.strictEqual(held.take("s4", 5).length, 1)
  })

  it("a receipt held more than an hour is neither taken nor kept past expire", () => {
    const held = new HeldReceipts()
    held.hold("a", "old", 0)
    held.hold("a", "young", 1_000)
    assert.deepStrictEqual(held.take("a", HOUR + 1), ["young"])
    held.hold("b", "old", 0)
    held.hold("b", "young", 1_000)
    held.expire(HOUR + 1)
    assert.strictEqual(held.size, 1)
    held.expire(HOUR + 1_000)
    assert.strictEqual(held.size, 1, "an hour to the millisecond is still kept")
    held.expire(HOUR + 1_001)
    assert.strictEqual(held.size, 0)
    assert.deepStrictEqual(held.take("b", HOUR + 1_001), [])
  })
})
