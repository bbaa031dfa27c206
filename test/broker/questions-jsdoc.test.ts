/**
 * The question refusal texts are each documented (review revqsize 2, helper fixqs): the qsize merge put
 * `replyTooLarge` with its JSDoc between `resultTooLarge` and the JSDoc that describes it, so `replyTooLarge` carried
 * two comment blocks (the first one about `QuestionTooLarge` with a one-character answer) and `resultTooLarge` none.
 * Since helper qs the texts live in two modules: src/broker/Questions.ts's `QuestionText` (`replyTooLarge` among them)
 * and src/broker/QuestionSize.ts's `QuestionSizeText` (`resultTooLarge`, `notificationTooLarge`). The same slip is checked in
 * every src file (helper tidy found three more): when two JSDoc blocks precede a declaration TypeScript documents it
 * with the last one only. A module header followed by a blank line and the first declaration's JSDoc is how effect's
 * own modules do it (node_modules/effect/src/Types.ts, Pipeable.ts) and is allowed. Reads the files as text;
 * nothing runs.
 */
import { assert, describe, it } from "@effect/vitest"
import { readdirSync, readFileSync } from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

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

const SRC = fileURLToPath(new URL("../../src/", import.meta.url))

/** Every `.ts` file under src/, relative to it. */
const srcFiles = (): ReadonlyArray<string> =>
  readdirSync(SRC, { recursive: true, encoding: "utf8" }).filter((file) => file.endsWith(".ts")).sort()

/**
 * Where in `text` a JSDoc block is directly followed by another (only white space between), as line numbers of the
 * first block's end; a module header (the file's opening block) followed by a blank line is not counted.
 */
const orphanedBlocks = (text: string): ReadonlyArray<number> => {
  const header = /^\/\*\*[\s\S]*?\*\/[ \t]*\n[ \t]*\n/.exec(text)?.[0].length ?? 0
  return [...text.matchAll(/\*\/\s*\n\s*\/\*\*/g)]
    .filter((match) => match.index >= header)
    .map((match) => text.slice(0, match.index).split("\n").length)
}

describe("every src file's JSDoc", () => {
  it("no JSDoc block directly follows another, bar a module header and a blank line", () => {
    const files = srcFiles()
    assert.isAbove(files.length, 100, "setup: src/ was not read")
    assert.include(files, path.join("broker", "Questions.ts"), "setup: src/ was not read")
    const found = files.flatMap((file) =>
      orphanedBlocks(readFileSync(path.join(SRC, file), "utf8")).map((line) => `src/${file}:${line}`)
    )
    assert.deepStrictEqual(found, [], "a JSDoc block directly followed by another documents nothing")
  })

  it("the check finds a block directly above another, and lets a module header and a blank line pass", () => {
    assert.deepStrictEqual(orphanedBlocks("/** header */\n\n/** a */\nexport const a = 1\n"), [])
    assert.deepStrictEqual(orphanedBlocks("/** header */\n/** a */\nexport const a = 1\n"), [1])
    assert.deepStrictEqual(orphanedBlocks("/** header */\n\nconst x = 1\n/** lost */\n\n/** b */\nconst b = 2\n"), [4])
  })
})
