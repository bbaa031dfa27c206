/**
 * Review revqsize, probe 2 (LOW, tidiness): the merge put `QuestionText.replyTooLarge` and its JSDoc between
 * `resultTooLarge` and the JSDoc that describes it (src/broker/Questions.ts), so `replyTooLarge` carries two comment
 * blocks — the first one about `QuestionTooLarge` with a one-character answer, the other's — and `resultTooLarge`
 * none. Read as text: no JSDoc block may directly follow another (one of them documents nothing), and
 * `resultTooLarge` is documented.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import { fileURLToPath } from "node:url"

const source = fs.readFileSync(fileURLToPath(new URL("../src/broker/Questions.ts", import.meta.url)), "utf8")

describe("review revqsize 2: QuestionText's JSDoc", () => {
  it("no orphaned JSDoc block, and resultTooLarge carries its own", () => {
    const orphaned = /\*\/\s*\n\s*\/\*\*/.exec(source)
    assert.isNull(orphaned, `a JSDoc block directly followed by another at line ${orphaned === null ? 0 : source.slice(0, orphaned.index).split("\n").length}`)
    assert.match(source, /\*\/\n\s*resultTooLarge:/, "resultTooLarge has no JSDoc of its own")
  })
})
