/**
 * Review revcb item 3: src/broker/Asks.ts's header Size note said "about 600 lines" after the stampq merge made the
 * file 614 lines (the lead's size check allows 5 either way), and stood at the header's end, not within its first 5
 * lines as the project's rules ask. Reads the file; no broker runs. (Was the reviewer's probe
 * test/zz-review-cb-2.test.ts.)
 */
import { assert, describe, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

const ALLOWED_DRIFT = 5

describe("Asks.ts's Size note", () => {
  it("is within the header's first 5 lines and states a line count within 5 of the file's", () => {
    const text = readFileSync(fileURLToPath(new URL("../../src/broker/Asks.ts", import.meta.url)), "utf8")
    const lines = text.split("\n")
    const count = lines.length - (text.endsWith("\n") ? 1 : 0)
    const at = lines.findIndex((line) => /Size: about [0-9,]+ lines/.test(line))
    assert.isAtLeast(at, 0, "no Size note")
    assert.isAtMost(at, 5, "the Size note is not within the header's first 5 lines")
    const stated = Number((/Size: about ([0-9,]+) lines/.exec(lines[at] ?? "")?.[1] ?? "").replace(",", ""))
    assert.isAtMost(Math.abs(count - stated), ALLOWED_DRIFT, `Size note says about ${stated} lines; the file has ${count}`)
  })
})
