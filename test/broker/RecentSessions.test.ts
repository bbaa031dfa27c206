import { assert, describe, it } from "@effect/vitest"
import { RecentSessions, type RecentSession } from "../../src/broker/RecentSessions.ts"
import { groupSpaceKey, sessionKey } from "../../src/broker/Registry.ts"

const record = (scopeKey: string, group: string, id: string, released: boolean): RecentSession => {
  const spaceKey = groupSpaceKey(scopeKey, group)
  return { key: sessionKey(spaceKey, id), id, spaceKey, scopeKey, name: undefined, infoJson: "{}", identity: undefined, released }
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
