/**
 * Registry.sessionKeyParts reverses
 * sessionKey(groupSpaceKey(spaceKeyOf(scope), groupOf(group)), id) exactly for
 * every scope, group and id the broker accepts (protocol/limits.ts refuses a
 * control character in each), unscoped and default group included: the scope
 * key, the group's space key and the id (Registration.mayReturn reads a kept
 * control's session key so).
 */
import { describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { groupOf, groupSpaceKey, sessionKey, sessionKeyParts, spaceKeyOf } from "../../src/broker/Registry.ts"
import { LABEL_CONTROL } from "../../src/protocol/limits.ts"

const label = fc.string({ unit: "binary", maxLength: 40 }).filter((text) => !LABEL_CONTROL.test(text))
const interesting = fc.constantFrom("", " ", "default", " default ", "scope:x", "group:y", "a:b", "\u2028", "\ud800", "é")
const part = fc.oneof(label, interesting)

describe("sessionKeyParts", () => {
  it("reverses sessionKey of groupSpaceKey for every accepted scope, group and id", () => {
    fc.assert(
      fc.property(fc.option(part, { nil: undefined }), fc.option(part, { nil: undefined }), part, (scope, group, id) => {
        const scopeKey = spaceKeyOf(scope)
        const key = sessionKey(groupSpaceKey(scopeKey, groupOf(group)), id)
        const parts = sessionKeyParts(key)
        if (parts.scopeKey !== scopeKey || parts.spaceKey !== groupSpaceKey(scopeKey, groupOf(group)) || parts.id !== id) throw new Error(`${JSON.stringify(key)} → ${JSON.stringify(parts)}`)
      }),
      { numRuns: 5_000 }
    )
  })
})
