/**
 * A Unix listener's socket file is its own only while it is the socket it
 * made (same device and inode): `serveUnix` removes it at close only then,
 * keeps a socket that replaced it (libuv would unlink it) — even one that
 * comes the instant after the close looked — reports it through
 * `stillOurs`, and refuses a path that exists (EADDRINUSE).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import * as fs from "node:fs"
import fsExports from "node:fs"
import { syncBuiltinESMExports } from "node:module"
import * as net from "node:net"
import * as path from "node:path"
import { socketPathLimit } from "../../src/config/socketPath.ts"
import { privateSocketPath } from "../../src/transport/privateName.ts"
import { dialUnix, serveUnix } from "../../src/transport/UnixSocket.ts"
import { tempDir } from "../support/broker.ts"

const ignore = () => Effect.void

const dials = (socketPath: string) => Effect.scoped(Effect.isSuccess(dialUnix(socketPath)))

/** `serveUnix` in a Scope of its own, closed by the caller. */
const serveIn = (socketPath: string) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const listener = yield* serveUnix(socketPath, ignore).pipe(Scope.provide(scope))
    return { scope, listener }
  })

/**
 * Runs `inject` once, right after the first `stat` or `lstat` of `file` (in
 * this process) returns or throws, while `effect` runs: another process acting in the
 * instant after a check. It swaps the functions on node:fs's exports, which
 * `syncBuiltinESMExports` copies to the namespace the source imported.
 */
const afterFirstLookAt = <A, E, R>(file: string, inject: () => void, effect: Effect.Effect<A, E, R>) => {
  const stat = fsExports.statSync
  const lstat = fsExports.lstatSync
  let looked = false
  const watching = (real: typeof stat | typeof lstat) => (...args: Array<unknown>) => {
    try {
      return Reflect.apply(real, fsExports, args)
    } finally {
      if (!looked && args[0] === file) {
        looked = true
        inject()
      }
    }
  }
  return Effect.acquireUseRelease(
    Effect.sync(() => {
      Object.defineProperty(fsExports, "statSync", { value: watching(stat) })
      Object.defineProperty(fsExports, "lstatSync", { value: watching(lstat) })
      syncBuiltinESMExports()
    }),
    () => effect,
    () =>
      Effect.sync(() => {
        Object.defineProperty(fsExports, "statSync", { value: stat })
        Object.defineProperty(fsExports, "lstatSync", { value: lstat })
        syncBuiltinESMExports()
      })
  ).pipe(Effect.tap(() => Effect.sync(() => assert.isTrue(looked, `${file} was looked at`))))
}

/** A plain listener of this process standing in for another process's socket at `socketPath`; bound at once. */
const foreignListener = (socketPath: string) =>
  Effect.acquireRelease(
    Effect.sync(() => net.createServer().listen(socketPath)),
    (server) => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
  )

describe("serveUnix: the socket file is the listener's own", () => {
  it.live("it serves the path, with nothing else in the directory, and closing removes the file", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      const socketPath = path.join(dir, "broker.sock")
      const { scope, listener } = yield* serveIn(socketPath)
      assert.deepStrictEqual(fs.readdirSync(dir), ["broker.sock"])
      assert.isTrue(yield* dials(socketPath))
      assert.isTrue(yield* listener.stillOurs)
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(fs.readdirSync(dir), [])
    }))

  it.live("a socket that replaced its file is left alone at close, and stillOurs says so", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      const socketPath = path.join(dir, "broker.sock")
      const first = yield* serveIn(socketPath)
      fs.renameSync(socketPath, path.join(dir, "moved.sock"))
      const second = yield* serveIn(socketPath)
      const replacement = fs.statSync(socketPath).ino
      assert.isFalse(yield* first.listener.stillOurs)
      assert.isTrue(yield* second.listener.stillOurs)
      yield* Scope.close(first.scope, Exit.void)
      assert.strictEqual(fs.statSync(socketPath).ino, replacement)
      assert.deepStrictEqual(fs.readdirSync(dir), ["broker.sock", "moved.sock"], "nothing else left behind")
      assert.isTrue(yield* dials(socketPath), "the replacement still serves")
      yield* Scope.close(second.scope, Exit.void)
      assert.isFalse(fs.existsSync(socketPath))
    }))

  it.live("a deleted file is not its own any more", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      const socketPath = path.join(dir, "broker.sock")
      const { listener } = yield* serveIn(socketPath)
      fs.rmSync(socketPath)
      assert.isFalse(yield* listener.stillOurs)
    }))

  it.live("a path that exists fails with EADDRINUSE and is left as it was", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      const socketPath = path.join(dir, "broker.sock")
      fs.writeFileSync(socketPath, "someone else's")
      const error = yield* Effect.flip(Effect.scoped(serveUnix(socketPath, ignore)))
      assert.strictEqual(error.code, "EADDRINUSE")
      assert.strictEqual(error.message, `Cannot listen on ${socketPath}: EADDRINUSE, a file is already there`)
      assert.strictEqual(fs.readFileSync(socketPath, "utf8"), "someone else's")
      assert.deepStrictEqual(fs.readdirSync(dir), ["broker.sock"])
    }))

  // libuv turns the bind's ENOENT into EACCES.
  it.live("a path in a missing directory fails with EACCES, saying why and naming only the path", () =>
    Effect.gen(function*() {
      const socketPath = path.join(yield* tempDir(), "missing", "broker.sock")
      const error = yield* Effect.flip(Effect.scoped(serveUnix(socketPath, ignore)))
      assert.strictEqual(error.message, `Cannot listen on ${socketPath}: EACCES, its directory does not exist or is not writable by this user`)
    }))

  // The window libuv's unlink-by-name left: the close looked at the path, then another process put
  // its socket there, then the server closed — and unlinked that socket (seen on a loaded CI machine).
  for (const before of ["its own file", "no file (moved away)"] as const) {
    it.live(`a socket put at the path the instant after the close looked is left alone (${before} at the look)`, () =>
      Effect.gen(function*() {
        const dir = yield* tempDir()
        const socketPath = path.join(dir, "broker.sock")
        const { scope } = yield* serveIn(socketPath)
        const moved = path.join(dir, "moved.sock")
        if (before === "no file (moved away)") fs.renameSync(socketPath, moved)
        let replacement: net.Server | undefined
        yield* afterFirstLookAt(socketPath, () => {
          if (fs.existsSync(socketPath)) fs.renameSync(socketPath, moved)
          replacement = net.createServer().listen(socketPath) // bound now, synchronously
        }, Scope.close(scope, Exit.void))
        yield* Effect.addFinalizer(() =>
          Effect.callback<void>((resume) => void replacement?.close(() => resume(Effect.void)))
        )
        assert.isTrue(fs.existsSync(socketPath), "the replacement socket is still there")
        assert.isTrue(yield* dials(socketPath), "and it serves")
        assert.deepStrictEqual(fs.readdirSync(dir).sort(), ["broker.sock", "moved.sock"], "nothing else left behind")
      }))
  }

  it.live("it binds a private name, links the path to it and removes the private name at once", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      const socketPath = path.join(dir, "broker.sock")
      const bound = privateSocketPath(socketPath, process.pid)
      fs.writeFileSync(bound, "left by a killed process that had this pid")
      const { scope } = yield* serveIn(socketPath)
      assert.deepStrictEqual(fs.readdirSync(dir), ["broker.sock"], "the leftover is gone, and so is the private name")
      assert.strictEqual(fs.statSync(socketPath).mode & 0o777, 0o600)
      assert.isTrue(yield* dials(socketPath), "a dial through the link reaches the socket")
      if (process.platform === "linux") {
        assert.include(fs.readFileSync("/proc/net/unix", "utf8"), ` ${bound}\n`, "the kernel reports the private name")
      }
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(fs.readdirSync(dir), [])
    }))

  it.live("a socket of another process at the path: EADDRINUSE, and both are left as they were", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      const socketPath = path.join(dir, "broker.sock")
      yield* foreignListener(socketPath)
      const other = fs.statSync(socketPath).ino
      const error = yield* Effect.flip(Effect.scoped(serveUnix(socketPath, ignore)))
      assert.strictEqual(error.code, "EADDRINUSE")
      assert.strictEqual(fs.statSync(socketPath).ino, other)
      assert.isTrue(yield* dials(socketPath))
      assert.deepStrictEqual(fs.readdirSync(dir), ["broker.sock"])
    }))

  it.live("a path whose private name would not fit in a socket address fails with ENAMETOOLONG", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      const limit = socketPathLimit(process.platform)
      // A one-letter file name that just fits: its 11-byte private name does not.
      const deep = path.join(dir, "d".repeat(limit - Buffer.byteLength(dir, "utf8") - 3))
      fs.mkdirSync(deep)
      const socketPath = path.join(deep, "s")
      assert.strictEqual(Buffer.byteLength(socketPath, "utf8"), limit)
      const error = yield* Effect.flip(Effect.scoped(serveUnix(socketPath, ignore)))
      assert.strictEqual(error.code, "ENAMETOOLONG")
      assert.include(error.message, "give the socket a longer file name")
      assert.deepStrictEqual(fs.readdirSync(deep), [])
    }))
})
