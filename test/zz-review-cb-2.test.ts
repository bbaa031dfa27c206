/**
 * Review revcb, probe 2 (LOW, rules): src/broker/Asks.ts grew from 599 to 614 lines with the stampq merge, but its
 * header's Size note still says "about 600 lines"; the lead's size check (/work/notes/sizecheck.sh) allows 5 lines
 * either way and reports it OFF. Reads the file; no broker runs.
 */
import { assert, describe, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

const ALLOWED_DRIFT = 5

describe("revcb probe 2: Asks.ts's Size note", () => {
  it("states a line count within 5 of the file's", () => {
    const text = readFileSync(fileURLToPath(new URL("../src/broker/Asks.ts", import.meta.url)), "utf8")
    const lines = text.split("\n").length - (text.endsWith("\n") ? 1 : 0)
    const stated = /Size: about ([0-9,]+) lines/.exec(text)?.[1]
    assert.isDefined(stated, "setup: no Size note")
    const count = Number((stated ?? "").replace(",", ""))
    assert.isAtMost(Math.abs(lines - count), ALLOWED_DRIFT, `Size note says about ${count} lines; the file has ${lines}`)
  })
})
