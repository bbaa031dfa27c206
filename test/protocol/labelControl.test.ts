/**
 * `LABEL_CONTROL` (limits.ts) over random strings: a name or id is refused
 * exactly when it holds a C0, DEL or C1 character, naming the first; an
 * attachment's name and language likewise, its content only for a control
 * other than TAB, LF and CR; `clampName` always makes a name the broker takes.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import {
  attachmentControlOf,
  clampName,
  MAX_NAME_LENGTH,
  presenceRefusal,
  registrationRefusal
} from "../../src/protocol/limits.ts"

/** The oracle, by code: C0, DEL, C1. */
const isLabelControl = (code: number): boolean => code <= 0x1f || (code >= 0x7f && code <= 0x9f)
const isTextControl = (code: number): boolean => isLabelControl(code) && code !== 0x09 && code !== 0x0a && code !== 0x0d

/** The first unit of `value` that `forbidden` says is a control, as `U+001B`. */
const firstCode = (value: string, forbidden: (code: number) => boolean): string | undefined => {
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i)
    if (forbidden(code)) return `U+${code.toString(16).toUpperCase().padStart(4, "0")}`
  }
  return undefined
}

/** Strings that often hold controls: each unit a control, a printable ASCII letter or any Unicode. */
const mixed = (maxLength: number) =>
  fc.string({
    unit: fc.oneof(
      fc.integer({ min: 0, max: 0x1f }).map((code) => String.fromCharCode(code)),
      fc.integer({ min: 0x7f, max: 0xa0 }).map((code) => String.fromCharCode(code)),
      fc.constantFrom("a", "Z", " ", "-", "é", "👩‍💻"),
      fc.string({ unit: "grapheme", minLength: 1, maxLength: 1 })
    ),
    maxLength
  })

const register = (fields: { readonly name?: string; readonly sessionId?: string }) =>
  registrationRefusal({ sessionId: fields.sessionId ?? "s", session: { cwd: "/w", model: "m", ...(fields.name === undefined ? {} : { name: fields.name }) } })

describe("LABEL_CONTROL", () => {
  it("a register's name is refused exactly when it holds a control character, naming the first", () => {
    fc.assert(fc.property(mixed(64), (name) => {
      const code = firstCode(name, isLabelControl)
      const refusal = register({ name })
      if (code === undefined) assert.isUndefined(refusal, JSON.stringify(name))
      else assert.include(refusal ?? "", `"name" contains the control character ${code}`, JSON.stringify(name))
    }), { numRuns: 2000 })
  })

  it("a register's sessionId and a presence's name follow the same rule", () => {
    fc.assert(fc.property(mixed(64), (value) => {
      const code = firstCode(value, isLabelControl)
      assert.strictEqual(register({ sessionId: value }) === undefined, code === undefined, JSON.stringify(value))
      const presence = presenceRefusal({ name: value })
      assert.strictEqual(presence === undefined, code === undefined, JSON.stringify(value))
    }), { numRuns: 1000 })
  })

  it("an attachment's name and language hold no control, its content none but TAB, LF and CR", () => {
    const attachment = fc.record({ name: mixed(16), content: mixed(32), language: fc.option(mixed(8), { nil: undefined }) })
    fc.assert(fc.property(fc.array(attachment, { maxLength: 3 }), (attachments) => {
      const expected = attachments.flatMap((item, index) => {
        const name = firstCode(item.name, isLabelControl)
        const language = item.language === undefined ? undefined : firstCode(item.language, isLabelControl)
        const content = firstCode(item.content, isTextControl)
        const field = `message.content.attachments[${index}]`
        return name !== undefined
          ? [{ field: `${field}.name`, code: name }]
          : language !== undefined
          ? [{ field: `${field}.language`, code: language }]
          : content !== undefined
          ? [{ field: `${field}.content`, code: content }]
          : []
      })[0]
      const found = attachmentControlOf(attachments.map(({ language, ...rest }) => language === undefined ? rest : { ...rest, language }))
      assert.deepStrictEqual(found === undefined ? undefined : { field: found.field, code: found.code }, expected)
    }), { numRuns: 2000 })
  })

  it("clampName makes any name one the broker takes: controls replaced one for one, cut to the limit", () => {
    fc.assert(fc.property(mixed(300), (name) => {
      const clamped = clampName(name)
      assert.isUndefined(register({ name: clamped }), JSON.stringify(name))
      assert.isAtMost(clamped.length, MAX_NAME_LENGTH)
      if (name.length <= MAX_NAME_LENGTH) assert.strictEqual(clamped.length, name.length)
    }), { numRuns: 1000 })
  })
})
