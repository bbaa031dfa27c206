/**
 * FeatureSets (Registration's granted-extension sets, `Peer.features`):
 * connections granted the same extensions, in any order, share one set —
 * an idle fleet otherwise held a hash table per connection — while every
 * set holds exactly what was granted, also past the bound on shared sets.
 */
import { assert, describe, it } from "@effect/vitest"
import { FeatureSets, MAX_SHARED } from "../../src/broker/FeatureSets.ts"

describe("FeatureSets", () => {
  it("the same extensions in any order give one shared set holding exactly them", () => {
    const sets = new FeatureSets()
    const first = sets.of(["exact-send-v1", "received-v1"])
    const second = sets.of(["received-v1", "exact-send-v1"])
    assert.strictEqual(first, second)
    assert.deepStrictEqual([...first].sort(), ["exact-send-v1", "received-v1"])
    assert.strictEqual(sets.of(["exact-send-v1"]), sets.of(["exact-send-v1"]))
    assert.notStrictEqual(sets.of(["exact-send-v1"]), first)
    assert.strictEqual(sets.of([]).size, 0)
    assert.strictEqual(sets.of([]), sets.of([]))
  })

  it("past MAX_SHARED distinct sets, a new combination gets a set of its own with exactly its extensions", () => {
    const sets = new FeatureSets()
    for (let i = 0; i < MAX_SHARED; i++) sets.of(["exact-send-v1", `x-${i}`])
    assert.strictEqual(sets.size, MAX_SHARED)
    const late = sets.of(["exact-send-v1", "late"])
    assert.notStrictEqual(sets.of(["exact-send-v1", "late"]), late)
    assert.deepStrictEqual([...late].sort(), ["exact-send-v1", "late"])
    assert.strictEqual(sets.size, MAX_SHARED)
    // Those kept before the bound are still shared.
    assert.strictEqual(sets.of(["x-3", "exact-send-v1"]), sets.of(["exact-send-v1", "x-3"]))
  })
})
