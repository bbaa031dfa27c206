/**
 * src/broker/Questions.ts's `QuestionText` documents each refusal text it builds (review revqsize 2, helper fixqs):
 * the qsize merge put `replyTooLarge` with its JSDoc between `resultTooLarge` and the JSDoc that describes it, so
 * `replyTooLarge` carried two comment blocks (the first one about `QuestionTooLarge` with a one-character answer)
 * and `resultTooLarge` none. Reads the file as text; nothing runs.
 */
import { assert, describe, it } from "@effect/vitest"
import { readFileSync } from "node:fs"

const source = readFileSync(new URL("../../src/broker/Questions.ts", import.meta.url), "utf8")

/** The line number (from 1) of `index` in the source. */
const lineOf = (index: number): number => source.slice(0, index).split("\n").length

describe("src/broker/Questions.ts's JSDoc", () => {
  it("no JSDoc block directly follows another (one of the two would document nothing)", () => {
    const orphaned = /\*\/\s*\n\s*\/\*\*/.exec(source)
    assert.isNull(orphaned, `a JSDoc block directly followed by another at line ${orphaned === null ? 0 : lineOf(orphaned.index)}`)
  })

  it("each function of QuestionText (resultTooLarge and replyTooLarge among them) has a JSDoc block right above it", () => {
    const start = source.indexOf("export const QuestionText = {")
    const end = source.indexOf("} as const", start)
    assert.isAbove(start, -1, "setup: QuestionText is gone")
    const lines = source.slice(start, end).split("\n")
    const members = lines.flatMap((line, at) => {
      const name = /^ {2}(\w+): \(/.exec(line)?.[1]
      return name === undefined ? [] : [{ name, above: lines[at - 1]?.trim() ?? "" }]
    })
    assert.includeMembers(members.map((member) => member.name), ["replyTooLarge", "resultTooLarge"], "setup: the members are gone")
    for (const { above, name } of members) assert.isTrue(above.endsWith("*/"), `${name} has no JSDoc of its own: ${above}`)
  })
})
