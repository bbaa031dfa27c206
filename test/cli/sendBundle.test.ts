/**
 * The `send` bundle's loader (src/cli/sendBundle.ts) over small stand-in
 * bundles: it runs the script as CommonJS, keeps a V8 code cache made after
 * the run, uses a cache only for the exact text it was made from, and never
 * fails because of the cache.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { parseSendArgv } from "../../src/cli/clientArgv.ts"
import { loadSendBundle, sendCacheFile, type SendBundleDeps } from "../../src/cli/sendBundle.ts"
import { tempDir } from "./support.ts"

/** A stand-in bundle: `runSendProcess` refuses the target "refuse"; `version` tells which text ran. */
const bundleText = (version: number): string =>
  [
    `const path = require("node:path")`,
    `exports.version = ${version}`,
    `exports.where = path.basename(__filename) + " in " + path.basename(__dirname)`,
    `exports.runSendProcess = (argv) => argv.to !== "refuse"`
  ].join("\n")

const sha256 = (text: string): Buffer => createHash("sha256").update(text, "utf8").digest()

/** A bundle file in `dir` and the loader's deps for it. */
const setUp = (dir: string, text: string, cacheDir: string | undefined): SendBundleDeps => {
  const file = path.join(dir, "bin", "client.cjs")
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, text)
  return { bundle: pathToFileURL(file), cacheDir, getBuiltinModule: process.getBuiltinModule }
}

const cacheFileOf = (deps: SendBundleDeps): string => {
  const file = sendCacheFile(fileURLToPath(deps.bundle), deps)
  if (file === undefined) throw new Error("no cache file without a cache dir")
  return file
}

const load = (deps: SendBundleDeps) => {
  const loaded = loadSendBundle(deps)
  if (loaded === undefined) throw new Error("the bundle was not loaded")
  const exports: Record<string, unknown> = { ...loaded.entry }
  return { loaded, exports }
}

describe("the send bundle's loader", () => {
  it.effect("runs the bundle as a CommonJS script and returns its exports", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("ei-sb-")
      const { loaded, exports } = load(setUp(dir, bundleText(1), undefined))
      assert.strictEqual(exports["version"], 1)
      assert.strictEqual(exports["where"], "client.cjs in bin")
      const argv = parseSendArgv(["send", "bob", "hi"])
      assert.isDefined(argv)
      if (argv === undefined) return
      assert.isTrue(loaded.entry.runSendProcess(argv))
      assert.isFalse(loaded.entry.runSendProcess({ ...argv, to: "refuse" }))
      assert.strictEqual(loaded.cache, "off")
      loaded.persist()
      assert.deepStrictEqual(fs.readdirSync(dir), ["bin"], "no cache written without a cache dir")
    }))

  it.effect("is absent where there is no bundle (the unbundled build), so that main.ts imports the module", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("ei-sb-")
      const deps = { bundle: pathToFileURL(path.join(dir, "client.cjs")), cacheDir: dir, getBuiltinModule: process.getBuiltinModule }
      assert.isUndefined(loadSendBundle(deps))
      assert.isUndefined(loadSendBundle({ ...setUp(dir, bundleText(1), dir), getBuiltinModule: undefined }))
    }))

  it.effect("writes the cache after the run, then uses it and leaves it as it is", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("ei-sb-")
      const cacheDir = path.join(dir, "cache")
      fs.mkdirSync(cacheDir)
      const deps = setUp(dir, bundleText(1), cacheDir)
      const first = load(deps)
      assert.strictEqual(first.loaded.cache, "absent")
      first.loaded.persist()
      const file = cacheFileOf(deps)
      const written = fs.readFileSync(file)
      assert.isTrue(written.subarray(0, 32).equals(sha256(bundleText(1))), "the file opens with the SHA-256 of the text")
      assert.isAbove(written.length, 32)
      assert.strictEqual(fs.statSync(file).mode & 0o777, 0o600)
      assert.deepStrictEqual(fs.readdirSync(cacheDir), [path.basename(file)], "no temporary file left")
      assert.match(path.basename(file), new RegExp(`^send-${process.version}-${process.arch}-[0-9a-f]{16}\\.v8cache$`))

      const second = load(deps)
      assert.strictEqual(second.loaded.cache, "used")
      assert.strictEqual(second.exports["version"], 1)
      const before = fs.statSync(file)
      second.loaded.persist()
      const after = fs.statSync(file)
      assert.strictEqual(after.ino, before.ino)
      assert.strictEqual(after.mtimeMs, before.mtimeMs)
    }))

  it.effect("writes the cache at most once per run, however often persist is called", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("ei-sb-")
      const deps = setUp(dir, bundleText(1), dir)
      const loaded = load(deps).loaded
      loaded.persist()
      fs.rmSync(cacheFileOf(deps))
      loaded.persist() // the broker calls it from its timer and again as it stops
      assert.isFalse(fs.existsSync(cacheFileOf(deps)))
    }))

  it.effect("does not use a cache made from other text of the same length, and replaces it", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("ei-sb-")
      const deps = setUp(dir, bundleText(1), dir)
      load(deps).loaded.persist()
      // V8 itself checks only the source's length: this text has the same.
      assert.strictEqual(bundleText(2).length, bundleText(1).length)
      setUp(dir, bundleText(2), dir)
      const changed = load(deps)
      assert.strictEqual(changed.loaded.cache, "absent")
      assert.strictEqual(changed.exports["version"], 2, "the new text runs")
      changed.loaded.persist()
      assert.isTrue(fs.readFileSync(cacheFileOf(deps)).subarray(0, 32).equals(sha256(bundleText(2))))
      assert.strictEqual(load(deps).loaded.cache, "used")
    }))

  it.effect("runs from source when V8 refuses the cache, and writes a good one", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("ei-sb-")
      const deps = setUp(dir, bundleText(1), dir)
      fs.writeFileSync(cacheFileOf(deps), Buffer.concat([sha256(bundleText(1)), Buffer.from("not V8 data at all")]))
      const damaged = load(deps)
      assert.strictEqual(damaged.loaded.cache, "rejected")
      assert.strictEqual(damaged.exports["version"], 1)
      damaged.loaded.persist()
      assert.strictEqual(load(deps).loaded.cache, "used")
    }))

  it.effect("a cache directory it cannot write costs only the compile", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("ei-sb-")
      const deps = setUp(dir, bundleText(1), path.join(dir, "missing", "dir"))
      const loaded = load(deps)
      assert.strictEqual(loaded.loaded.cache, "absent")
      loaded.loaded.persist()
      assert.isFalse(fs.existsSync(path.join(dir, "missing")))
      assert.strictEqual(load(deps).loaded.cache, "absent")
    }))
})
