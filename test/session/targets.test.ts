/** C-TGT-1…6 with the 004 rules (open question 4): resolution order, refusals, display targets. */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { displayTarget, displayTargets, resolutionFailure, resolveTarget, type TargetIdentity } from "../../src/session/targets.ts"

const planner = { id: "6332faab-1111-4222-8333-aaaaaaaaaaaa", name: "planner" }
const worker = { id: "6332fabc-2222-4222-8333-bbbbbbbbbbbb", name: "Worker" }
const other = { id: "20d43841-3333-4222-8333-cccccccccccc" }
const all = [planner, worker, other]

const found = (sessions: ReadonlyArray<TargetIdentity>, target: string) => {
  const resolution = resolveTarget(sessions, target)
  return resolution._tag === "Found" ? resolution.session.id : resolution._tag
}

const failureOf = (sessions: ReadonlyArray<TargetIdentity>, target: string): string => {
  const resolution = resolveTarget(sessions, target)
  if (resolution._tag === "Found" || resolution._tag === "NotFound") return resolution._tag
  return resolutionFailure(target, resolution, sessions)
}

describe("C-TGT-1 resolution order", () => {
  it("exact full id, then case-insensitive name, then a unique prefix of at least 8 characters", () => {
    assert.strictEqual(found(all, planner.id), planner.id)
    assert.strictEqual(found(all, "PLANNER"), planner.id)
    assert.strictEqual(found(all, "  worker "), worker.id)
    assert.strictEqual(found(all, "20d43841"), other.id)
    assert.strictEqual(found(all, "20d43841-3333"), other.id)
    assert.strictEqual(found(all, "nobody"), "NotFound")
    assert.strictEqual(found(all, ""), "NotFound")
  })

  it("an exact id wins over a session whose name equals that id", () => {
    const named = { id: "zzzzzzzz-0000", name: planner.id }
    assert.strictEqual(found([...all, named], planner.id), planner.id)
  })
})

describe("C-TGT-2 / C-TGT-3 ambiguity is an error, never a guess", () => {
  it("two sessions with one name", () => {
    const twins = [{ id: "aaaaaaaa-1", name: "dev" }, { id: "bbbbbbbb-2", name: "DEV" }]
    assert.strictEqual(failureOf(twins, "dev"), `Multiple sessions named "dev" are connected. Use the session ID instead.`)
  })

  it("a prefix matching several ids lists every match as name (id)", () => {
    assert.strictEqual(
      failureOf(all, "6332fa"),
      `Target "6332fa" is too short. Use the displayed target from intercom list, such as planner → 6332faab, Worker → 6332fabc.`
    )
    const close = [{ id: "abcdefgh-1", name: "one" }, { id: "abcdefgh-2" }]
    assert.strictEqual(
      failureOf(close, "abcdefgh"),
      `Target "abcdefgh" matches multiple sessions: one (abcdefgh-1), unnamed (abcdefgh-2). Use a longer session ID or an exact name.`
    )
  })
})

describe("C-TGT-5 short prefixes", () => {
  it("a prefix under 8 characters is refused with the displayed targets", () => {
    assert.strictEqual(
      failureOf(all, "20d4"),
      `Target "20d4" is too short. Use the displayed target from intercom list, such as 20d43841 → 20d43841.`
    )
  })

  it("a short string that is also a name merges name and prefix matches, which must be unique", () => {
    const sessions = [{ id: "abc-111111111", name: "zed" }, { id: "zed00000-1111" }]
    const resolution = resolveTarget(sessions, "zed")
    assert.strictEqual(resolution._tag, "AmbiguousPrefix")
    const alone = [{ id: "abc-111111111", name: "zed" }]
    assert.strictEqual(found(alone, "zed"), "abc-111111111")
  })

  it("an 8+ character prefix that is also another session's name is ambiguous", () => {
    const sessions = [{ id: "deadbeef-0001" }, { id: "x-1", name: "deadbeef" }]
    assert.strictEqual(resolveTarget(sessions, "deadbeef")._tag, "AmbiguousPrefix")
  })
})

describe("C-TGT-6 display targets", () => {
  it("the shortest unique prefix of at least 8 characters", () => {
    assert.strictEqual(displayTarget(planner, all), "6332faab")
    assert.strictEqual(displayTarget(other, all), "20d43841")
    const close = [{ id: "abcdefgh-1" }, { id: "abcdefgh-2" }]
    assert.strictEqual(displayTarget({ id: "abcdefgh-1" }, close), "abcdefgh-1")
  })

  it("a prefix equal to some session's name is skipped; the full id when nothing else works", () => {
    const sessions = [{ id: "deadbeef-0001" }, { id: "x", name: "deadbeef" }]
    assert.strictEqual(displayTarget({ id: "deadbeef-0001" }, sessions), "deadbeef-")
    const short = [{ id: "abc" }]
    assert.strictEqual(displayTarget({ id: "abc" }, short), "abc")
  })

  it("property: every display target resolves back to its own session", () => {
    const idArb = fc.stringMatching(/^[0-9a-f]{4,12}(-[0-9a-f]{1,6})?$/)
    const sessionsArb = fc.uniqueArray(
      fc.record({ id: idArb, name: fc.option(fc.constantFrom("a", "planner", "Worker", "dead", "0123abcd"), { nil: undefined }) }),
      { selector: (session) => session.id.toLowerCase(), minLength: 1, maxLength: 8 }
    )
    fc.assert(
      fc.property(sessionsArb, (sessions) => {
        for (const session of sessions) {
          const target = displayTarget(session, sessions)
          const resolution = resolveTarget(sessions, target)
          // A full id shorter than 8 characters that is a prefix of another id cannot be addressed
          // by prefix; it is still found by the exact-id rule.
          if (resolution._tag !== "Found" || resolution.session.id !== session.id) return false
        }
        return true
      })
    )
  })
})

describe("displayTargets (all at once)", () => {
  /** C-TGT-6 as written: per session, try every prefix length and count the ids it matches. */
  const naive = (session: { id: string }, all: ReadonlyArray<{ id: string; name?: string | undefined }>): string => {
    const ids = all.map((candidate) => candidate.id.toLowerCase())
    const names = new Set(all.flatMap((candidate) => {
      const name = candidate.name?.trim().toLowerCase()
      return name === undefined || name === "" ? [] : [name]
    }))
    const id = session.id.toLowerCase()
    for (let length = 8; length < session.id.length; length++) {
      const prefix = id.slice(0, length)
      if (ids.filter((candidate) => candidate.startsWith(prefix)).length === 1 && !names.has(prefix)) {
        return session.id.slice(0, length)
      }
    }
    return session.id
  }

  it("agrees with the rule applied one session at a time, for any ids and names", () => {
    // Ids from a small alphabet, so long shared prefixes, case-only differences and duplicates are common.
    const id = fc.string({ unit: fc.constantFrom("a", "b", "A", "1"), minLength: 6, maxLength: 14 })
    const session = fc.record({ id, name: fc.option(fc.oneof(id, fc.constantFrom("aaaaaaaa", " AAAAAAAAb ")), { nil: undefined }) })
    fc.assert(fc.property(fc.array(session, { maxLength: 30 }), (all) => {
      const targetOf = displayTargets(all)
      for (const each of all) assert.strictEqual(targetOf(each), naive(each, all))
    }), { numRuns: 500 })
  })
})
