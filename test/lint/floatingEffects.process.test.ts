/**
 * `npm run typecheck` (scripts/typecheck.ts with tsconfig.lint.json) fails on
 * an Effect that is built and never run: a check written without `yield*`
 * does nothing, so its test cannot fail (two such `expectNothing` checks hid
 * in label-controls.test.ts). The check is @effect/tsgo's Effect rules in the
 * compiler pass; this test runs that same script and configuration on two
 * fixtures: test/lint/fixtures/floating.ts, whose every line marked
 * `// floats: RULE` must be reported by that rule, and runs.ts, whose
 * yielded, returned, assigned and run Effects must not be. It runs where
 * package-lock.json carries the compiler (linux-x64, as CI): elsewhere the
 * script type-checks without the rules and says so, and this test is skipped.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { spawnNode } from "../support/process.ts"

const root = fileURLToPath(new URL("../..", import.meta.url))
const fixtures = path.join(root, "test", "lint", "fixtures")

/** `file:line rule` for each line of a fixture marked `// floats: RULE`. */
const marked = (file: string): Array<string> =>
  fs.readFileSync(path.join(fixtures, file), "utf8").split("\n").flatMap((line, index) => {
    const match = /\/\/ floats: (\w+)$/.exec(line)
    return match === null ? [] : [`${file}:${index + 1} ${match[1]}`]
  })

/** `file:line rule` for each Effect diagnostic the compiler printed on a fixture. */
const reported = (output: string): Array<string> =>
  output.split("\n").flatMap((line) => {
    const match = /fixtures\/(\w+\.ts)\((\d+),\d+\): error .*effect\((\w+)\)/.exec(line)
    return match === null ? [] : [`${match[1]}:${match[2]} ${match[3]}`]
  })

/** The platform whose @effect/tsgo compiler package-lock.json carries (scripts/typecheck.ts). */
const lockedPlatform = process.platform === "linux" && process.arch === "x64"

describe("the check for Effects that never run", () => {
  it.live.runIf(lockedPlatform)("reports every floating Effect of floating.ts by its rule, and nothing in runs.ts", () =>
    Effect.scoped(Effect.gen(function*() {
      const expected = marked("floating.ts")
      assert.isAbove(expected.length, 5, "the fixture marks its floating Effects")
      const check = yield* spawnNode(["scripts/typecheck.ts", "-p", "test/lint/fixtures/tsconfig.json"], { cwd: root })
      // A whole compiler run over effect's types: minutes on a loaded machine, not a barrier.
      const outcome = yield* check.waitExit("4 minutes")
      const output = check.stdout() + check.stderr()
      assert.deepStrictEqual(reported(output).sort(), expected.sort(), output)
      assert.notStrictEqual(outcome.code, 0, output)
    })), 300_000)
})
