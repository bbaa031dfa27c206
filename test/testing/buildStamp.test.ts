/**
 * BuildStamp (src/testing/BuildStamp.ts): the id changes with any compiled
 * module's contents and nothing else; a source module modified after its
 * compiled module, or with none, is named stale; the CLI bundles under
 * dist/bin are not hashed. Files' times are set with `utimesSync`, never
 * waited for.
 */
import { afterEach, assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { formatBuildStamp, readBuildStamp } from "../../src/testing/BuildStamp.ts"

const made: Array<string> = []
afterEach(() => {
  for (const root of made.splice(0)) fs.rmSync(root, { recursive: true, force: true })
})

/** A project root with src/a.ts, src/sub/b.ts and their dist/ outputs, the outputs newer. */
const project = (): { readonly root: string; readonly dist: string; readonly src: string } => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "build-stamp-"))
  made.push(root)
  const dist = path.join(root, "dist")
  const src = path.join(root, "src")
  for (const dir of [path.join(dist, "sub"), path.join(dist, "bin"), path.join(src, "sub")]) fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(path.join(src, "a.ts"), "export const a = 1\n")
  fs.writeFileSync(path.join(src, "sub", "b.ts"), "export const b = 2\n")
  fs.writeFileSync(path.join(dist, "a.js"), "export const a = 1;\n")
  fs.writeFileSync(path.join(dist, "a.d.ts"), "export declare const a = 1;\n")
  fs.writeFileSync(path.join(dist, "sub", "b.js"), "export const b = 2;\n")
  fs.writeFileSync(path.join(dist, "bin", "cli.js"), "bundle\n")
  for (const file of ["a.ts", "sub/b.ts"]) fs.utimesSync(path.join(src, file), 1_000, 1_000)
  for (const file of ["a.js", "sub/b.js"]) fs.utimesSync(path.join(dist, file), 2_000, 2_000)
  return { root, dist, src }
}

describe("BuildStamp", () => {
  it("a current build: its compiled modules counted (not .d.ts, not dist/bin), nothing stale", () => {
    const { dist, src } = project()
    const stamp = readBuildStamp(dist, src)
    assert.strictEqual(stamp.modules, 2)
    assert.deepStrictEqual(stamp.stale, [])
    assert.match(stamp.id, /^[0-9a-f]{12}$/)
    assert.deepStrictEqual(formatBuildStamp(stamp), [`build ${stamp.id} (2 compiled modules)`])
  })

  it("the id follows a compiled module's contents, not the bundles under dist/bin", () => {
    const { dist, src } = project()
    const before = readBuildStamp(dist, src).id
    fs.writeFileSync(path.join(dist, "bin", "cli.js"), "another bundle\n")
    assert.strictEqual(readBuildStamp(dist, src).id, before)
    fs.writeFileSync(path.join(dist, "sub", "b.js"), "export const b = 3;\n")
    fs.utimesSync(path.join(dist, "sub", "b.js"), 2_000, 2_000)
    assert.notStrictEqual(readBuildStamp(dist, src).id, before)
  })

  it("a source modified after its compiled module, or with none, is stale and the warning names it", () => {
    const { dist, src } = project()
    fs.utimesSync(path.join(src, "sub", "b.ts"), 3_000, 3_000)
    fs.writeFileSync(path.join(src, "c.ts"), "export const c = 3\n")
    const stamp = readBuildStamp(dist, src)
    assert.deepStrictEqual(stamp.stale, ["src/c.ts", "src/sub/b.ts"])
    const lines = formatBuildStamp(stamp)
    assert.strictEqual(lines.length, 2)
    assert.include(lines[1], "stale build — src/c.ts, src/sub/b.ts changed after dist/ was built")
    assert.include(lines[1], "npm run build")
  })

  it("with no src/ beside dist/ (an installed package) nothing is stale", () => {
    const { root, dist } = project()
    fs.rmSync(path.join(root, "src"), { recursive: true })
    assert.deepStrictEqual(readBuildStamp(dist, path.join(root, "src")).stale, [])
  })
})
