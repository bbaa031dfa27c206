/** Where the executable's compile cache lives, who may own it, and that a start never fails because of it. */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import {
  compileCacheDir,
  type CompileCacheDeps,
  enableCompileCache,
  type EnableCompileCache,
  preparePrivateDir,
  privateCacheDir
} from "../../src/cli/compileCache.ts"
import { tempDir } from "./support.ts"

const uid = process.getuid?.() ?? -1
const modeOf = (file: string): number => fs.statSync(file).mode & 0o777

/** An `enable` that records the directories it was given and answers `status` (1: ENABLED, 0: FAILED). */
const recording = (status = 1) => {
  const calls: Array<string> = []
  const enable: EnableCompileCache = (directory) => {
    calls.push(directory)
    return status === 0 ? { status, message: "Cannot create cache directory: not a directory" } : { status }
  }
  return { calls, enable }
}

const depsIn = (tmpdir: string, enable: EnableCompileCache | undefined, env: CompileCacheDeps["env"] = {}) => ({
  enable,
  env,
  tmpdir,
  uid
})

describe("compile cache directory", () => {
  it("is one per uid under the temp dir, or $NODE_COMPILE_CACHE when set", () => {
    assert.strictEqual(privateCacheDir("/tmp", 1000), "/tmp/intercom-compile-cache-1000")
    assert.strictEqual(privateCacheDir("C:\\Temp", -1), path.join("C:\\Temp", "intercom-compile-cache"))
    assert.strictEqual(compileCacheDir({}, "/tmp", 1000), "/tmp/intercom-compile-cache-1000")
    assert.strictEqual(compileCacheDir({ NODE_COMPILE_CACHE: "/var/cache/x" }, "/tmp", 1000), "/var/cache/x")
    assert.strictEqual(compileCacheDir({ NODE_COMPILE_CACHE: " " }, "/tmp", 1000), "/tmp/intercom-compile-cache-1000")
  })

  it.effect("is created 0700 and handed to Node", () =>
    Effect.gen(function*() {
      const tmp = yield* tempDir("ei-cc-")
      const { calls, enable } = recording()
      const outcome = enableCompileCache(depsIn(tmp, enable))
      const dir = privateCacheDir(tmp, uid)
      assert.deepStrictEqual(outcome, { _tag: "Enabled", directory: dir })
      assert.deepStrictEqual(calls, [dir])
      assert.strictEqual(modeOf(dir), 0o700)
    }))

  it.effect("an existing directory readable by others is tightened to 0700", () =>
    Effect.gen(function*() {
      const tmp = yield* tempDir("ei-cc-")
      const dir = privateCacheDir(tmp, uid)
      fs.mkdirSync(dir, { mode: 0o777 })
      fs.chmodSync(dir, 0o777)
      assert.isUndefined(preparePrivateDir(dir, uid))
      assert.strictEqual(modeOf(dir), 0o700)
    }))

  it.effect("a symbolic link in its place is not used, and the start goes on uncached", () =>
    Effect.gen(function*() {
      const tmp = yield* tempDir("ei-cc-")
      const target = path.join(tmp, "elsewhere")
      fs.mkdirSync(target)
      fs.symlinkSync(target, privateCacheDir(tmp, uid))
      const { calls, enable } = recording()
      const outcome = enableCompileCache(depsIn(tmp, enable))
      assert.strictEqual(outcome._tag, "Unavailable")
      assert.include(outcome._tag === "Unavailable" ? outcome.reason : "", "symbolic link")
      assert.deepStrictEqual(calls, [], "Node was not given the directory")
    }))

  it.effect("a file in its place, or a temp dir that is not a directory, leaves the cache off without throwing", () =>
    Effect.gen(function*() {
      const tmp = yield* tempDir("ei-cc-")
      fs.writeFileSync(privateCacheDir(tmp, uid), "")
      const { calls, enable } = recording()
      assert.strictEqual(enableCompileCache(depsIn(tmp, enable))._tag, "Unavailable")
      const notADir = path.join(tmp, "file")
      fs.writeFileSync(notADir, "")
      const outcome = enableCompileCache(depsIn(notADir, enable))
      assert.deepStrictEqual(outcome, {
        _tag: "Unavailable",
        directory: privateCacheDir(notADir, uid),
        reason: "ENOTDIR"
      })
      assert.deepStrictEqual(calls, [])
    }))

  it.effect("a directory owned by another uid is not used", () =>
    Effect.sync(() => {
      // The temp dir's root is owned by root (0), or by whoever runs the test: either way not uid 4242.
      assert.include(preparePrivateDir(path.resolve("/"), 4242) ?? "", "owned by uid")
    }))

  it.effect("Node's refusal (FAILED) or a throw leaves the cache off without throwing", () =>
    Effect.gen(function*() {
      const tmp = yield* tempDir("ei-cc-")
      const failed = enableCompileCache(depsIn(tmp, recording(0).enable))
      assert.strictEqual(failed._tag, "Unavailable")
      const throwing = enableCompileCache(depsIn(tmp, () => {
        throw new Error("boom")
      }))
      assert.deepStrictEqual(throwing, { _tag: "Unavailable", directory: privateCacheDir(tmp, uid), reason: "boom" })
    }))

  it.effect("a Node without enableCompileCache (before 22.1) or NODE_DISABLE_COMPILE_CACHE: nothing is created", () =>
    Effect.gen(function*() {
      const tmp = yield* tempDir("ei-cc-")
      assert.deepStrictEqual(enableCompileCache(depsIn(tmp, undefined)), { _tag: "Unsupported" })
      const { calls, enable } = recording()
      assert.deepStrictEqual(enableCompileCache(depsIn(tmp, enable, { NODE_DISABLE_COMPILE_CACHE: "1" })), {
        _tag: "Disabled"
      })
      assert.deepStrictEqual(calls, [])
      assert.isFalse(fs.existsSync(privateCacheDir(tmp, uid)))
    }))

  it.effect("$NODE_COMPILE_CACHE is given to Node as it is", () =>
    Effect.gen(function*() {
      const tmp = yield* tempDir("ei-cc-")
      const chosen = path.join(tmp, "chosen")
      const { calls, enable } = recording()
      assert.deepStrictEqual(enableCompileCache(depsIn(tmp, enable, { NODE_COMPILE_CACHE: chosen })), {
        _tag: "Enabled",
        directory: chosen
      })
      assert.deepStrictEqual(calls, [chosen])
      assert.isFalse(fs.existsSync(privateCacheDir(tmp, uid)), "the private default was not made")
    }))
})
