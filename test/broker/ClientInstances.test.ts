/**
 * ClientInstances (review revc L1, L2): which client instance a registration
 * of an id nobody holds live is, from the instances noted for the id since
 * the broker started, and the table's bounds.
 */
import { assert, describe, it } from "@effect/vitest"
import { ClientInstances, INSTANCES_PER_ID, MAX_BYTES, MAX_IDS, NOTHING_KNOWN } from "../../src/broker/ClientInstances.ts"

const NEW = undefined

/** A noted instance: `instance` by `instanceId`, registered with something known of the id unless `beforeStart`. */
const known = (instanceId: string | undefined, instance: number, beforeStart = false) => ({
  instanceId,
  instance,
  mayBeBeforeStart: beforeStart
})

describe("ClientInstances.returning", () => {
  it("is NOTHING_KNOWN for an id nothing is known of, in its scope", () => {
    const instances = new ClientInstances()
    instances.noted("scope:a", "b", known("b-1", 1, true))
    assert.strictEqual(instances.returning("scope:a", "c", "c-1"), NOTHING_KNOWN)
    assert.strictEqual(instances.returning("scope:other", "b", "b-2"), NOTHING_KNOWN)
  })

  it("continues any kept instance with the same instanceId, not only the last", () => {
    const instances = new ClientInstances()
    instances.noted("scope:a", "b", known("b-1", 1, true))
    instances.noted("scope:a", "b", known("b-2", 3))
    instances.noted("scope:a", "b", known(undefined, 4))
    assert.deepStrictEqual(instances.returning("scope:a", "b", "b-1"), known("b-1", 1, true))
    assert.deepStrictEqual(instances.returning("scope:a", "b", "b-2"), known("b-2", 3))
    assert.strictEqual(instances.returning("scope:a", "b", "b-3"), NEW)
    assert.strictEqual(instances.returning("scope:a", "b", undefined), NEW)
  })

  it("continues a base last holder only for a base client, and only one registered with nothing known", () => {
    const instances = new ClientInstances()
    instances.noted("scope:a", "b", known(undefined, 1, true))
    assert.deepStrictEqual(instances.returning("scope:a", "b", undefined), known(undefined, 1, true))
    // Review reve R2: a client that gives an instanceId cannot be that base client.
    assert.strictEqual(instances.returning("scope:a", "b", "b-2"), NEW)
    instances.noted("scope:a", "b", known(undefined, 5))
    assert.strictEqual(instances.returning("scope:a", "b", undefined), NEW)
  })
})

describe("ClientInstances bounds", () => {
  it(`keeps ${INSTANCES_PER_ID} instances per id, the most recent; a repeated instance is kept once`, () => {
    const instances = new ClientInstances()
    for (let i = 1; i <= INSTANCES_PER_ID + 1; i++) instances.noted("scope:a", "b", known(`b-${i}`, i))
    instances.noted("scope:a", "b", known(`b-${INSTANCES_PER_ID + 1}`, INSTANCES_PER_ID + 1))
    assert.deepStrictEqual(instances.of("scope:a", "b").map((one) => one.instance), [5, 4, 3, 2])
    assert.strictEqual(instances.returning("scope:a", "b", "b-1"), NEW, "the instance pushed out returns as a new one")
  })

  it(`keeps at most ${MAX_IDS} ids, the least recently noted forgotten first`, () => {
    const instances = new ClientInstances()
    // The smallest entries (no scope, no instanceId), so that MAX_IDS binds before MAX_BYTES.
    for (let i = 0; i <= MAX_IDS; i++) instances.noted("", `s${i}`, known(undefined, i))
    assert.strictEqual(instances.size, MAX_IDS)
    assert.deepStrictEqual(instances.of("", "s0"), [])
    assert.strictEqual(instances.of("", `s${MAX_IDS}`).length, 1)
  })

  it("keeps at most the ids it is given (the broker option clientInstanceIds), the least recently noted forgotten first", () => {
    const instances = new ClientInstances(3)
    for (let i = 0; i <= 3; i++) instances.noted("", `s${i}`, known(undefined, i))
    assert.strictEqual(instances.size, 3)
    assert.deepStrictEqual(instances.of("", "s0"), [])
    assert.strictEqual(instances.of("", "s1").length, 1)
  })

  it(`keeps about ${MAX_BYTES} bytes: ids with long instanceIds are fewer`, () => {
    const instances = new ClientInstances()
    // Four 256-character instanceIds: ~2.4 KB an id as counted, so 10,000 of them are past MAX_BYTES.
    const long = "i".repeat(256)
    const ids = 10_000
    for (let i = 0; i < ids; i++) {
      for (let j = 0; j < INSTANCES_PER_ID; j++) instances.noted("scope:a", `s${i}`, known(`${long}${j}`, j))
    }
    assert.isBelow(instances.size, ids)
    assert.deepStrictEqual(instances.of("scope:a", "s0"), [])
    assert.strictEqual(instances.of("scope:a", `s${ids - 1}`).length, INSTANCES_PER_ID)
  })
})
