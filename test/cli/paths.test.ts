/** Agent-dir precedence and the short socket-path fallback of the CLI (P90). */
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
  type ProcessInputs,
  prepareFallbackDir,
  resolveCliPaths,
  SocketPathError,
  socketPathLimit
} from "../../src/cli/paths.ts"

const base: ProcessInputs = {
  dir: undefined,
  env: {},
  cwd: "/work/project",
  homeDir: "/home/alice",
  runtimeDir: "/run/user/1000",
  uid: 1000,
  maxSocketBytes: 107
}

const resolve = (overrides: Partial<ProcessInputs>): IntercomPaths => {
  const result = resolveCliPaths({ ...base, ...overrides })
  if (result instanceof SocketPathError) throw new Error(`unexpected: ${result.message}`)
  return result
}

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "ei-cli-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

describe("agent dir precedence", () => {
  it("defaults to ~/.pi/agent", () => {
    const paths = resolve({})
    assert.strictEqual(paths.agentDir, "/home/alice/.pi/agent")
    assert.strictEqual(paths.intercomDir, "/home/alice/.pi/agent/intercom")
    assert.strictEqual(paths.socketPath, "/home/alice/.pi/agent/intercom/broker.sock")
    assert.strictEqual(paths.defaultSocketPath, paths.socketPath)
    assert.strictEqual(paths.pidFile, "/home/alice/.pi/agent/intercom/broker.pid")
    assert.isUndefined(paths.fallbackDir)
  })

  it("PI_CODING_AGENT_DIR beats the default", () => {
    assert.strictEqual(resolve({ env: { PI_CODING_AGENT_DIR: "/srv/pi" } }).agentDir, "/srv/pi")
  })

  it("ATOMIC_CODING_AGENT_DIR beats PI_CODING_AGENT_DIR", () => {
    const env = { ATOMIC_CODING_AGENT_DIR: "/srv/atomic", PI_CODING_AGENT_DIR: "/srv/pi" }
    assert.strictEqual(resolve({ env }).agentDir, "/srv/atomic")
  })

  it("--dir beats both variables", () => {
    const env = { ATOMIC_CODING_AGENT_DIR: "/srv/atomic", PI_CODING_AGENT_DIR: "/srv/pi" }
    assert.strictEqual(resolve({ env, dir: "/srv/flag" }).agentDir, "/srv/flag")
  })

  it("values are trimmed; empty and blank values are ignored", () => {
    assert.strictEqual(resolve({ env: { PI_CODING_AGENT_DIR: "  /srv/pi \n" } }).agentDir, "/srv/pi")
    const env = { ATOMIC_CODING_AGENT_DIR: "   ", PI_CODING_AGENT_DIR: "/srv/pi" }
    assert.strictEqual(resolve({ env }).agentDir, "/srv/pi")
    assert.strictEqual(resolve({ env: { ATOMIC_CODING_AGENT_DIR: "" } }).agentDir, "/home/alice/.pi/agent")
    assert.strictEqual(resolve({ dir: " ", env: { PI_CODING_AGENT_DIR: "/srv/pi" } }).agentDir, "/srv/pi")
  })

  it("relative values are resolved against the cwd and normalised", () => {
    assert.strictEqual(resolve({ env: { PI_CODING_AGENT_DIR: "agents/pi/" } }).agentDir, "/work/project/agents/pi")
    assert.strictEqual(resolve({ dir: "../other" }).agentDir, "/work/other")
  })
})

describe("socket path length", () => {
  it("uses the intercom dir while the path fits", () => {
    const paths = resolve({ dir: "/a" })
    assert.strictEqual(paths.socketPath, "/a/intercom/broker.sock")
    assert.isUndefined(paths.fallbackDir)
  })

  it("the limit is inclusive and counted in UTF-8 bytes", () => {
    const suffix = "/intercom/broker.sock"
    const exact = "/" + "x".repeat(107 - suffix.length - 1)
    assert.strictEqual(Buffer.byteLength(exact + suffix), 107)
    assert.isUndefined(resolve({ dir: exact }).fallbackDir)
    assert.isDefined(resolve({ dir: exact + "y" }).fallbackDir)
    // "é" is two bytes: same character count as `exact`, one byte too many
    const accented = "/é" + "x".repeat(107 - suffix.length - 2)
    assert.isDefined(resolve({ dir: accented }).fallbackDir)
  })

  it("falls back to <runtimeDir>/intercom-<uid>/<hash>.sock for a long agent dir", () => {
    const agentDir = "/very/" + "long/".repeat(25) + "agent"
    const paths = resolve({ dir: agentDir })
    assert.strictEqual(paths.agentDir, agentDir)
    assert.strictEqual(paths.fallbackDir, "/run/user/1000/intercom-1000")
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
    // the same dir spelled differently resolves to the same socket
    assert.strictEqual(resolve({ dir: a }).socketPath, resolve({ dir: `${a}/./` }).socketPath)
  })

  it("fails with a clear message when even the fallback is too long", () => {
    const result = resolveCliPaths({ ...base, dir: "/" + "x".repeat(120), runtimeDir: "/" + "r".repeat(100) })
    assert.instanceOf(result, SocketPathError)
    if (result instanceof SocketPathError) {
      assert.strictEqual(result.reason, "TooLong")
      assert.include(result.message, "too long for a Unix socket")
      assert.include(result.message, "--dir")
    }
  })

  it("platform limits: 107 bytes on Linux, 103 elsewhere", () => {
    assert.strictEqual(socketPathLimit("linux"), 107)
    assert.strictEqual(socketPathLimit("darwin"), 103)
  })
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
