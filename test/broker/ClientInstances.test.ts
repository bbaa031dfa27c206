/**
 * ClientInstances (review revc L1, L2): which client instance a registration
 * of an id nobody holds live is, from the instances noted for the id since
 * the broker started, and the table's bounds.
 */
import { assert, describe, it } from "@effect/vitest"
import { ClientInstances, INSTANCES_PER_ID, MAX_BYTES, MAX_IDS } from "../../src/broker/ClientInstances.ts"
import { UNKNOWN_INSTANCE } from "../../src/broker/Registry.ts"

const NEW = undefined

describe("ClientInstances.returning", () => {
  it("is the unknown instance for an id nothing is known of, in its scope", () => {
    const instances = new ClientInstances()
    instances.noted("scope:a", "b", { instanceId: "b-1", instance: UNKNOWN_INSTANCE })
    assert.strictEqual(instances.returning("scope:a", "c", "c-1"), UNKNOWN_INSTANCE)
    assert.strictEqual(instances.returning("scope:other", "b", "b-2"), UNKNOWN_INSTANCE)
  })

  it("continues any kept instance with the same instanceId, not only the last", () => {
    const instances = new ClientInstances()
    instances.noted("scope:a", "b", { instanceId: "b-1", instance: UNKNOWN_INSTANCE })
    instances.noted("scope:a", "b", { instanceId: "b-2", instance: 3 })
    instances.noted("scope:a", "b", { instanceId: undefined, instance: 4 })
    assert.strictEqual(instances.returning("scope:a", "b", "b-1"), UNKNOWN_INSTANCE)
    assert.strictEqual(instances.returning("scope:a", "b", "b-2"), 3)
    assert.strictEqual(instances.returning("scope:a", "b", "b-3"), NEW)
    assert.strictEqual(instances.returning("scope:a", "b", undefined), NEW)
  })

  it("is the unknown instance only after a last holder that was it and gave no instanceId", () => {
    const instances = new ClientInstances()
    instances.noted("scope:a", "b", { instanceId: undefined, instance: UNKNOWN_INSTANCE })
    assert.strictEqual(instances.returning("scope:a", "b", undefined), UNKNOWN_INSTANCE)
    assert.strictEqual(instances.returning("scope:a", "b", "b-2"), UNKNOWN_INSTANCE)
    instances.noted("scope:a", "b", { instanceId: undefined, instance: 5 })
    assert.strictEqual(instances.returning("scope:a", "b", undefined), NEW)
  })
})

describe("ClientInstances bounds", () => {
  it(`keeps ${INSTANCES_PER_ID} instances per id, the most recent; a repeated instance is kept once`, () => {
    const instances = new ClientInstances()
    for (let i = 1; i <= INSTANCES_PER_ID + 1; i++) instances.noted("scope:a", "b", { instanceId: `b-${i}`, instance: i })
    instances.noted("scope:a", "b", { instanceId: `b-${INSTANCES_PER_ID + 1}`, instance: INSTANCES_PER_ID + 1 })
    assert.deepStrictEqual(instances.of("scope:a", "b").map((known) => known.instance), [5, 4, 3, 2])
    assert.strictEqual(instances.returning("scope:a", "b", "b-1"), NEW, "the instance pushed out returns as a new one")
  })

  it(`keeps at most ${MAX_IDS} ids, the least recently noted forgotten first`, () => {
    const instances = new ClientInstances()
    for (let i = 0; i <= MAX_IDS; i++) instances.noted("scope:a", `s${i}`, { instanceId: `i${i}`, instance: i })
    assert.strictEqual(instances.size, MAX_IDS)
    assert.deepStrictEqual(instances.of("scope:a", "s0"), [])
    assert.strictEqual(instances.of("scope:a", `s${MAX_IDS}`).length, 1)
  })

  it(`keeps about ${MAX_BYTES} bytes: ids with long instanceIds are fewer`, () => {
    const instances = new ClientInstances()
    // Four 256-character instanceIds: ~2.4 KB an id as counted, so 10,000 of them are past MAX_BYTES.
    const long = "i".repeat(256)
    const ids = 10_000
    for (let i = 0; i < ids; i++) {
      for (let j = 0; j < INSTANCES_PER_ID; j++) instances.noted("scope:a", `s${i}`, { instanceId: `${long}${j}`, instance: j })
    }
    assert.isBelow(instances.size, ids)
    assert.deepStrictEqual(instances.of("scope:a", "s0"), [])
    assert.strictEqual(instances.of("scope:a", `s${ids - 1}`).length, INSTANCES_PER_ID)
  })
})
