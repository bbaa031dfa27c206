/**
 * Rules about the test files themselves that the type checker cannot see.
 *
 * `@effect/vitest`'s plain `it.skipIf(condition)` and `it.runIf(condition)`
 * are vitest's own: given a body that returns an Effect, they never run the
 * Effect, so the test passes whatever its body says — a test that cannot
 * fail. `it.effect.skipIf`, `it.live.skipIf` (and `runIf`) run it; so does
 * a plain body inside `describe.skipIf`.
 *
 * A test that makes a directory with `mkdtempSync` must remove it: hundreds
 * of `ei-handled-*` dirs piled up in /tmp from tests that did not. The check
 * is by file (a file that calls `mkdtempSync` also calls `rmSync`); the
 * scoped `tempDir` of test/support/broker.ts does both.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const thisFile = fileURLToPath(import.meta.url)
const testRoot = path.dirname(thisFile)

/** Every `*.test.ts` below `dir`, relative to the test root. */
const testFiles = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name)
    if (entry.isDirectory()) return entry.name === "node_modules" ? [] : testFiles(file)
    return entry.name.endsWith(".test.ts") ? [path.relative(testRoot, file)] : []
  })

/** `it.skipIf(` or `it.runIf(` with nothing between `it` and the condition. */
const plainConditional = /\bit\.(?:skipIf|runIf)\(/

/** The `file:line` of each use of `plainConditional` in `text`. */
const plainConditionalsIn = (file: string, text: string): Array<string> =>
  text.split("\n").flatMap((line, index) => plainConditional.test(line) ? [`${file}:${index + 1}`] : [])

describe("test hygiene", () => {
  it("no test uses plain it.skipIf or it.runIf, which would not run an Effect body", () => {
    // This file spells the rule out, in its header and its own test.
    const others = testFiles(testRoot).filter((file) => path.join(testRoot, file) !== thisFile)
    const found = others.flatMap((file) =>
      plainConditionalsIn(file, fs.readFileSync(path.join(testRoot, file), "utf8"))
    )
    assert.deepStrictEqual(found, [], "use it.effect.skipIf / it.live.skipIf (or runIf) instead")
  })

  it("the rule finds a plain it.skipIf and passes over it.live.skipIf and describe.skipIf", () => {
    const text = [
      `it.live.skipIf(x)("a", () => Effect.void)`,
      `describe.skipIf(x)("b", () => {})`,
      `it.skipIf(x)("c", () => Effect.void)`,
      `  it.runIf(y)("d", () => Effect.void)`
    ].join("\n")
    assert.deepStrictEqual(plainConditionalsIn("f.test.ts", text), ["f.test.ts:3", "f.test.ts:4"])
  })

  it("every test file that calls mkdtempSync also calls rmSync (or uses tempDir, which does both)", () => {
    const others = testFiles(testRoot).filter((file) => path.join(testRoot, file) !== thisFile)
    const leaking = others.filter((file) => {
      const text = fs.readFileSync(path.join(testRoot, file), "utf8")
      return text.includes("mkdtempSync(") && !text.includes("rmSync(")
    })
    assert.deepStrictEqual(leaking, [], "remove what the test made, or use tempDir (test/support/broker.ts), which removes it with the Scope")
  })
})
