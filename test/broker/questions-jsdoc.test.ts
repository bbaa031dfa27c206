/**
 * The question refusal texts are each documented (review revqsize 2, helper fixqs): the qsize merge put
 * `replyTooLarge` with its JSDoc between `resultTooLarge` and the JSDoc that describes it, so `replyTooLarge` carried
 * two comment blocks (the first one about `QuestionTooLarge` with a one-character answer) and `resultTooLarge` none.
 * Since helper qs the texts live in two modules: src/broker/Questions.ts's `QuestionText` (`replyTooLarge` among them)
 * and src/broker/QuestionSize.ts's `QuestionSizeText` (`resultTooLarge`, `notificationTooLarge`). Reads the files as
 * text; nothing runs.
 */
import { assert, describe, it } from "@effect/vitest"
import { readFileSync } from "node:fs"

const sourceOf = (file: string): string => readFileSync(new URL(`../../src/broker/${file}`, import.meta.url), "utf8")

/** The line number (from 1) of `index` in `source`. */
const lineOf = (source: string, index: number): number => source.slice(0, index).split("\n").length

/** Each module, the object of refusal texts it exports, and members it must still have. */
const TEXTS = [
  { file: "Questions.ts", object: "QuestionText", members: ["replyTooLarge", "idOfAsk"] },
  { file: "QuestionSize.ts", object: "QuestionSizeText", members: ["resultTooLarge", "notificationTooLarge"] }
] as const

describe("the question modules' JSDoc", () => {
  for (const { file, members, object } of TEXTS) {
    it(`${file}: no JSDoc block directly follows another (one of the two would document nothing)`, () => {
      const source = sourceOf(file)
      const orphaned = /\*\/\s*\n\s*\/\*\*/.exec(source)
      assert.isNull(orphaned, `a JSDoc block directly followed by another at line ${orphaned === null ? 0 : lineOf(source, orphaned.index)}`)
    })

    it(`${file}: each function of ${object} (${members.join(" and ")} among them) has a JSDoc block right above it`, () => {
      const source = sourceOf(file)
      const start = source.indexOf(`export const ${object} = {`)
      const end = source.indexOf("} as const", start)
      assert.isAbove(start, -1, `setup: ${object} is gone`)
      const lines = source.slice(start, end).split("\n")
      const found = lines.flatMap((line, at) => {
        const name = /^ {2}(\w+): \(/.exec(line)?.[1]
        return name === undefined ? [] : [{ name, above: lines[at - 1]?.trim() ?? "" }]
      })
      assert.includeMembers(found.map((member) => member.name), [...members], "setup: the members are gone")
      for (const { above, name } of found) assert.isTrue(above.endsWith("*/"), `${name} has no JSDoc of its own: ${above}`)
    })
  }
})
