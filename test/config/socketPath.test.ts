/** The broker socket's path and its short fallback (P90): one rule for the broker and its clients. */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import {
  agentDirHash,
  chooseRuntimeDir,
  currentUid,
  type IntercomPaths,
  intercomPaths,
  loadIntercomSettings,
  prepareFallbackDir,
  resolveIntercomPaths,
  resolveIntercomSettings,
  SocketPathError,
  socketPathLimit,
  type SocketPlacement
} from "../../src/config/index.ts"
import { filesReader } from "./support.ts"

const placement: SocketPlacement = { runtimeDir: "/run/user/1000", uid: 1000, maxSocketBytes: 107 }

const resolve = (overrides: { readonly dir: string; readonly placement?: SocketPlacement }): IntercomPaths => {
  const result = resolveIntercomPaths(overrides.dir, overrides.placement ?? placement)
  if (result instanceof SocketPathError) throw new Error(`unexpected: ${result.message}`)
  return result
}

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "ei-cfg-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

describe("socket path length", () => {
  it("uses the intercom dir while the path fits", () => {
    const paths = resolve({ dir: "/a" })
    assert.strictEqual(paths.socketPath, "/a/intercom/broker.sock")
    assert.isUndefined(paths.socketFallbackDir)
  })

  it("the limit is inclusive and counted in UTF-8 bytes", () => {
    const suffix = "/intercom/broker.sock"
    const exact = "/" + "x".repeat(107 - suffix.length - 1)
    assert.strictEqual(Buffer.byteLength(exact + suffix), 107)
    assert.isUndefined(resolve({ dir: exact }).socketFallbackDir)
    assert.isDefined(resolve({ dir: exact + "y" }).socketFallbackDir)
    // "é" is two bytes: same character count as `exact`, one byte too many
    const accented = "/é" + "x".repeat(107 - suffix.length - 2)
    assert.isDefined(resolve({ dir: accented }).socketFallbackDir)
  })

  it("falls back to <runtimeDir>/intercom-<uid>/<hash>.sock for a long agent dir", () => {
    const agentDir = "/very/" + "long/".repeat(25) + "agent"
    const paths = resolve({ dir: agentDir })
    assert.strictEqual(paths.agentDir, agentDir)
    assert.strictEqual(paths.socketFallbackDir, "/run/user/1000/intercom-1000")
    assert.strictEqual(paths.socketPath, `/run/user/1000/intercom-1000/${agentDirHash(agentDir)}.sock`)
    assert.match(path.basename(paths.socketPath), /^[0-9a-f]{16}\.sock$/)
    assert.isAtMost(Buffer.byteLength(paths.socketPath), 107)
    // everything else stays in the agent dir
    assert.strictEqual(paths.defaultSocketPath, path.join(agentDir, "intercom", "broker.sock"))
    assert.strictEqual(paths.pidFile, path.join(agentDir, "intercom", "broker.pid"))
  })

  it("the short name is stable per agent dir and differs between agent dirs", () => {
    const a = "/x/" + "a".repeat(120)
    const b = "/x/" + "b".repeat(120)
    assert.strictEqual(resolve({ dir: a }).socketPath, resolve({ dir: a }).socketPath)
    assert.notStrictEqual(resolve({ dir: a }).socketPath, resolve({ dir: b }).socketPath)
  })

  it("fails with a clear message when even the fallback is too long", () => {
    const result = resolveIntercomPaths("/" + "x".repeat(120), { ...placement, runtimeDir: "/" + "r".repeat(100) })
    assert.instanceOf(result, SocketPathError)
    if (result instanceof SocketPathError) {
      assert.strictEqual(result.kind, "TooLong")
      assert.include(result.message, "too long for a Unix socket")
      assert.include(result.message, "--dir")
    }
  })

  it("platform limits: 107 bytes on Linux, 103 elsewhere", () => {
    assert.strictEqual(socketPathLimit("linux"), 107)
    assert.strictEqual(socketPathLimit("darwin"), 103)
  })

  it("intercomPaths without a placement never falls back; with one, as resolveIntercomPaths", () => {
    const agentDir = "/x/" + "a".repeat(120)
    assert.strictEqual(intercomPaths(agentDir).socketPath, path.join(agentDir, "intercom", "broker.sock"))
    assert.deepStrictEqual(intercomPaths(agentDir, placement), resolve({ dir: agentDir }))
  })
})

describe("settings carry the effective socket path", () => {
  const long = "/x/" + "a".repeat(120)
  const settingsFor = (dir: string, socketPlacement: SocketPlacement) =>
    resolveIntercomSettings({ dir, env: {}, cwd: "/", homeDir: "/h", readFile: filesReader({}), socketPlacement })

  it("resolveIntercomSettings: the same path as the broker's rule, relative dirs normalised first", () => {
    const { errors, settings } = settingsFor(long, placement)
    assert.deepStrictEqual(errors, [])
    assert.deepStrictEqual(settings.paths, resolve({ dir: long }))
    // the same dir spelled differently resolves to the same socket
    assert.strictEqual(settingsFor(`${long}/./`, placement).settings.paths.socketPath, settings.paths.socketPath)
  })

  it("resolveIntercomSettings: no usable path is a startup error; the paths stay the default ones", () => {
    const { errors, settings } = settingsFor(long, { ...placement, runtimeDir: "/" + "r".repeat(100) })
    assert.strictEqual(errors.length, 1)
    assert.instanceOf(errors[0], SocketPathError)
    assert.deepStrictEqual(settings.paths, intercomPaths(long))
  })

  it.effect("loadIntercomSettings uses this process's placement, or the one it is given", () =>
    Effect.gen(function*() {
      const runtimeDir = yield* tempDir
      const settings = yield* loadIntercomSettings({ dir: long, env: { XDG_RUNTIME_DIR: runtimeDir }, cwd: "/", homeDir: "/h" })
      assert.strictEqual(settings.paths.socketFallbackDir, path.join(runtimeDir, `intercom-${currentUid()}`))
      const given = yield* loadIntercomSettings({ dir: long, env: {}, cwd: "/", homeDir: "/h", socketPlacement: placement })
      assert.deepStrictEqual(given.paths, resolve({ dir: long }))
      const error = yield* Effect.flip(
        loadIntercomSettings({
          dir: long,
          env: {},
          cwd: "/",
          homeDir: "/h",
          socketPlacement: { ...placement, runtimeDir: "/" + "r".repeat(100) }
        })
      )
      assert.strictEqual(error._tag, "SocketPathError")
    }).pipe(Effect.provide(NodeFileSystem.layer)))
})

describe("runtime dir", () => {
  it.effect("uses XDG_RUNTIME_DIR when it is an absolute, writable directory", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      assert.strictEqual(yield* chooseRuntimeDir({ XDG_RUNTIME_DIR: dir }), dir)
      assert.strictEqual(yield* chooseRuntimeDir({ XDG_RUNTIME_DIR: ` ${dir} ` }), dir)
    }))

  it.effect("otherwise falls back to the OS tmp dir", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const file = path.join(dir, "file")
      fs.writeFileSync(file, "")
      assert.strictEqual(yield* chooseRuntimeDir({}), os.tmpdir())
      assert.strictEqual(yield* chooseRuntimeDir({ XDG_RUNTIME_DIR: "" }), os.tmpdir())
      assert.strictEqual(yield* chooseRuntimeDir({ XDG_RUNTIME_DIR: "relative/dir" }), os.tmpdir())
      assert.strictEqual(yield* chooseRuntimeDir({ XDG_RUNTIME_DIR: path.join(dir, "missing") }), os.tmpdir())
      assert.strictEqual(yield* chooseRuntimeDir({ XDG_RUNTIME_DIR: file }), os.tmpdir())
    }))
})

describe("prepareFallbackDir", () => {
  const mode = (file: string) => fs.statSync(file).mode & 0o777

  it.effect("creates the private dir with mode 0700", () =>
    Effect.gen(function*() {
      const dir = path.join(yield* tempDir, "intercom-x")
      yield* prepareFallbackDir(dir, currentUid())
      assert.isTrue(fs.statSync(dir).isDirectory())
      assert.strictEqual(mode(dir), 0o700)
      yield* prepareFallbackDir(dir, currentUid()) // idempotent
    }))

  it.effect("tightens a loose mode on our own dir", () =>
    Effect.gen(function*() {
      const dir = path.join(yield* tempDir, "intercom-x")
      fs.mkdirSync(dir)
      fs.chmodSync(dir, 0o777)
      yield* prepareFallbackDir(dir, currentUid())
      assert.strictEqual(mode(dir), 0o700)
    }))

  it.effect("refuses a symlink, a regular file and a dir owned by someone else", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      const target = path.join(root, "target")
      fs.mkdirSync(target, { mode: 0o700 })
      const link = path.join(root, "link")
      fs.symlinkSync(target, link)
      const file = path.join(root, "file")
      fs.writeFileSync(file, "")

      const failure = (dir: string, uid: number) =>
        Effect.flip(prepareFallbackDir(dir, uid)).pipe(Effect.map((error) => error.message))
      assert.include(yield* failure(link, currentUid()), "symbolic link")
      assert.include(yield* failure(file, currentUid()), "not a directory")
      assert.include(yield* failure(target, currentUid() + 4242), "owned by uid")
      const exit = yield* Effect.exit(prepareFallbackDir(path.join(root, "missing", "deeper"), currentUid()))
      assert.isTrue(Exit.isFailure(exit))
    }))
})
