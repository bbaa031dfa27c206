/**
 * The executable's Node.js check (src/cli/nodeVersion.ts, run first by
 * main.ts): on a Node older than package.json's `engines`, every command
 * says what it needs, which Node this is and how to get one, and exits 1.
 * The rule as a function, and the built executable under an older system
 * Node when the machine has one (the test says so when it has none).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import { fileURLToPath } from "node:url"
import { MIN_NODE, nodeVersionProblem } from "../../src/cli/nodeVersion.ts"
import { runChild } from "../support/process.ts"
import { cleanEnv, main, tempDir } from "./support.ts"

describe("nodeVersionProblem", () => {
  it("accepts package.json's engines minimum and anything newer, and refuses anything older", () => {
    const pkg: unknown = JSON.parse(fs.readFileSync(fileURLToPath(new URL("../../package.json", import.meta.url)), "utf8"))
    const engines = typeof pkg === "object" && pkg !== null && "engines" in pkg ? pkg.engines : undefined
    assert.deepStrictEqual(engines, { node: `>=${MIN_NODE.major}.${MIN_NODE.minor}` })
    for (const version of ["22.19.0", "22.20.1", "23.0.0", "24.21.0", "30.1.2"]) {
      assert.isUndefined(nodeVersionProblem(version, "/usr/bin/node"), version)
    }
    for (const version of ["22.18.9", "22.5.0", "21.7.3", "20.20.2", "18.0.0"]) {
      assert.isString(nodeVersionProblem(version, "/usr/bin/node"), version)
    }
  })

  it("says what is needed, which Node this is, and how to get one", () => {
    const text = nodeVersionProblem("20.20.2", "/usr/bin/node") ?? ""
    assert.include(text, "intercom needs Node.js 22.19 or newer (its broker keeps its state in node:sqlite)")
    assert.include(text, "this is Node.js 20.20.2 (/usr/bin/node)")
    assert.include(text, "nvm install 22")
    assert.include(text, "node_modules/.bin/node dist/bin/intercom.mjs <command>")
  })
})

/** The system `node` when it is older than the minimum (this machine's is 20), else undefined. */
const olderNode = ((): string | undefined => {
  for (const candidate of ["/usr/bin/node", "/usr/local/bin/node"]) {
    const run = spawnSync(candidate, ["-p", "process.versions.node"], { encoding: "utf8" })
    if (run.status === 0 && nodeVersionProblem(run.stdout.trim(), candidate) !== undefined) return candidate
  }
  return undefined
})()

describe("the executable on an older Node.js", () => {
  it.live.skipIf(olderNode === undefined)("--version, list and broker each say what Node is needed and exit 1, nothing else", () =>
    Effect.gen(function*() {
      const node = olderNode ?? ""
      const root = yield* tempDir()
      for (const args of [["--version"], ["list", "--dir", root], ["broker", "--dir", root]]) {
        const result = yield* runChild(node, [main(), ...args], { env: cleanEnv(root) })
        const what = args.join(" ")
        assert.strictEqual(result.code, 1, `${what}: ${result.stderr}`)
        assert.strictEqual(result.stdout, "", what)
        assert.match(result.stderr, /^intercom needs Node\.js 22\.19 or newer .*\n$/, what)
      }
      assert.deepStrictEqual(fs.readdirSync(root), [], "nothing was created in the agent dir")
    }), 60_000)
})
