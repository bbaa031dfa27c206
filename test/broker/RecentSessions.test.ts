import { assert, describe, it } from "@effect/vitest"
import { MAX_RECENT, RECENT_RETENTION_MS, RecentSessions, type RecentSession } from "../../src/broker/RecentSessions.ts"
import { groupSpaceKey, sessionKey } from "../../src/broker/Registry.ts"

const record = (scopeKey: string, group: string, id: string, released: boolean): RecentSession => {
  const spaceKey = groupSpaceKey(scopeKey, group)
  return { key: sessionKey(spaceKey, id), id, spaceKey, scopeKey, name: undefined, infoJson: "{}", identity: undefined, released, instanceId: undefined, instance: 0 }
}

describe("RecentSessions.lastDeparture", () => {
  it("is the departure remembered last, whatever the times say", () => {
    const recent = new RecentSessions()
    recent.remember(record("scope:a", "g1", "twin", true), 5)
    recent.remember(record("scope:a", "g2", "twin", false), 5)
    recent.remember(record("scope:a", "g3", "twin", true), 5)
    assert.deepStrictEqual(recent.lastDeparture("scope:a", "twin"), { recent: record("scope:a", "g3", "twin", true), at: 5 })
    // A clock stepped back does not reorder them.
    recent.remember(record("scope:a", "g1", "twin", false), 3)
    assert.strictEqual(recent.lastDeparture("scope:a", "twin")?.recent.released, false)
    assert.isUndefined(recent.lastDeparture("scope:b", "twin"))
  })

  it("leaves out a record remembered as no departure, and forgets one with its record", () => {
    const recent = new RecentSessions()
    recent.remember(record("scope:a", "g2", "twin", true), 1)
    recent.remember(record("scope:a", "g1", "twin", false), 2, false)
    assert.deepInclude(recent.lastDeparture("scope:a", "twin"), { at: 1 })
    assert.isDefined(recent.get(groupSpaceKey("scope:a", "g1"), "twin"))
    // Forgotten (the id registered again in g2): no departure is known, so it is not given up.
    recent.forget(groupSpaceKey("scope:a", "g2"), "twin")
    assert.isUndefined(recent.lastDeparture("scope:a", "twin"))
  })
})

describe("RecentSessions: the last client instance of a departed session", () => {
  const holder = (id: string, instanceId: string, name?: string): RecentSession => ({
    ...record("scope:a", "default", id, false),
    name,
    instanceId,
    instance: 7
  })

  it("goes with its record: when the id registers again, and once the record is a day old", () => {
    const recent = new RecentSessions()
    recent.remember(holder("b", "b-1"), 0)
    assert.deepInclude(recent.lastDeparture("scope:a", "b")?.recent, { instanceId: "b-1", instance: 7 })
    recent.forget(groupSpaceKey("scope:a", "default"), "b")
    assert.isUndefined(recent.lastDeparture("scope:a", "b"), "kept after the id registered again")
    recent.remember(holder("b", "b-1"), 0)
    recent.expire(RECENT_RETENTION_MS + 1)
    assert.isUndefined(recent.lastDeparture("scope:a", "b"), "kept past a day")
  })

  it("counts its instanceId against the byte bound: records with long ones are fewer", () => {
    const recent = new RecentSessions()
    // 256-character names and instanceIds: ~1.3 KB a record as counted, so 65,536 of them are past
    // MAX_RECENT_BYTES; counted without the instanceId (~0.8 KB) they would all fit.
    const name = "n".repeat(256)
    const instanceId = "i".repeat(256)
    for (let i = 0; i < MAX_RECENT; i++) recent.remember(holder(`s${String(i).padStart(6, "0")}`, instanceId, name), 0)
    assert.isBelow(recent.size, MAX_RECENT)
    // The oldest went first, its instance with it.
    assert.isUndefined(recent.lastDeparture("scope:a", "s000000"))
    assert.isDefined(recent.lastDeparture("scope:a", `s${String(MAX_RECENT - 1).padStart(6, "0")}`))
  })
})
