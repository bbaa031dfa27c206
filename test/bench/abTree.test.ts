/**
 * bench/ab-tree.ts: the base tree of `bench/ab.ts`, built once per commit
 * under the temp dir. Two A/B runs with the same `--base` at once must not
 * clobber each other's build: each builds in a directory of its own and
 * renames it into place. The second run starting while the first is still
 * exporting is played by the first's build step starting the second.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { buildOnce } from "../../bench/ab-tree.ts"
import { BUNDLED_CLI } from "../../src/config/install.ts"

const withRoot = (body: (root: string) => void): void => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "ab-tree-test-"))
  try {
    body(root)
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
}

/** What an export and build leave: the sources (`who`), then the bundled CLI. */
const exportSources = (dir: string, who: string): void => fs.writeFileSync(path.join(dir, "exported-by"), who)
const finishBuild = (dir: string, who: string): void => {
  fs.mkdirSync(path.dirname(path.join(dir, BUNDLED_CLI)), { recursive: true })
  fs.writeFileSync(path.join(dir, BUNDLED_CLI), who)
}

const builtBy = (tree: string): string => fs.readFileSync(path.join(tree, BUNDLED_CLI), "utf8")

describe("buildOnce (bench/ab-tree.ts)", () => {
  it("lets two runs with the same base build at once without touching each other's build", () =>
    withRoot((root) => {
      const tree = path.join(root, "intercom-ab", "0123456789ab")
      const result = buildOnce(tree, (first) => {
        exportSources(first, "first")
        // The second run starts while the first is still building, and finishes first.
        const second = buildOnce(tree, (dir) => {
          exportSources(dir, "second")
          finishBuild(dir, "second")
        })
        assert.strictEqual(second, tree)
        assert.strictEqual(builtBy(tree), "second")
        // The first run's export is still whole: the second neither removed nor wrote into it.
        assert.strictEqual(fs.readFileSync(path.join(first, "exported-by"), "utf8"), "first")
        finishBuild(first, "first")
      })
      // The first run uses the build already in place, and its own is discarded.
      assert.strictEqual(result, tree)
      assert.strictEqual(builtBy(tree), "second")
      assert.deepStrictEqual(fs.readdirSync(path.dirname(tree)), ["0123456789ab"])
      // A later run reuses it without building.
      assert.strictEqual(buildOnce(tree, () => assert.fail("built again")), tree)
    }))

  it("refuses an unbuilt leftover with a clear message, and leaves nothing behind when the build fails", () =>
    withRoot((root) => {
      const tree = path.join(root, "intercom-ab", "0123456789ab")
      assert.throws(() => buildOnce(tree, (dir) => exportSources(dir, "no build")), /left no dist\/bin\/intercom\.mjs/)
      assert.throws(() => buildOnce(tree, () => { throw new Error("npm run build failed") }), /npm run build failed/)
      assert.deepStrictEqual(fs.readdirSync(path.dirname(tree)), [])
      // An export whose build failed, left by an older bench/ab.ts: only its owner may remove it.
      fs.mkdirSync(tree)
      exportSources(tree, "a build that failed")
      assert.throws(() => buildOnce(tree, (dir) => finishBuild(dir, "fresh")), /0123456789ab holds no build .*Remove it and run again/)
      assert.deepStrictEqual(fs.readdirSync(path.dirname(tree)), ["0123456789ab"])
      fs.rmSync(tree, { recursive: true })
      buildOnce(tree, (dir) => finishBuild(dir, "fresh"))
      assert.strictEqual(builtBy(tree), "fresh")
      assert.deepStrictEqual(fs.readdirSync(path.dirname(tree)), ["0123456789ab"])
    }))
})
