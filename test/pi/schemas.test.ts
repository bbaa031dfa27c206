/**
 * The pi tools' parameter schemas as a model reads them: every string enum
 * offers real choices — no empty string, no blank or duplicate member — so
 * a model is never offered `""` as a value (it picks it, and the call means
 * nothing). A guard over the JSON Schema pi hands the model, for every tool
 * the extension registers with parameters.
 */
import { assert, describe, it } from "@effect/vitest"
import { ContactSupervisorParameters } from "../../src/pi/supervisorTool.ts"
import { IntercomParameters } from "../../src/pi/tool.ts"

/** Every `enum` in a JSON Schema, with where it is. */
const enumsOf = (schema: unknown, at: string): ReadonlyArray<readonly [string, ReadonlyArray<unknown>]> => {
  if (Array.isArray(schema)) return schema.flatMap((item, i) => enumsOf(item, `${at}[${i}]`))
  if (typeof schema !== "object" || schema === null) return []
  return Object.entries(schema).flatMap(([key, value]) =>
    key === "enum" && Array.isArray(value) ? [[at, value] as const] : enumsOf(value, `${at}.${key}`)
  )
}

describe("pi tool schemas", () => {
  for (const [tool, schema] of [["intercom", IntercomParameters], ["contact_supervisor", ContactSupervisorParameters]] as const) {
    it(`${tool}: every enum member is a distinct, non-blank string`, () => {
      const enums = enumsOf(JSON.parse(JSON.stringify(schema)), tool)
      assert.isAbove(enums.length, 0, "the walk found the tool's enums")
      for (const [at, members] of enums) {
        for (const member of members) assert.isTrue(typeof member === "string" && member.trim() !== "", `${at}: ${JSON.stringify(member)}`)
        assert.strictEqual(new Set(members).size, members.length, `${at}: duplicate members`)
      }
    })
  }
})
