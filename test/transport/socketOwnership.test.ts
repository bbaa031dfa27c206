/**
 * A Unix listener's socket file is its own only while it is the socket it
 * made (same device and inode): `serveUnix` removes it at close only then,
 * keeps a socket that replaced it (libuv would unlink it), reports it
 * through `stillOurs`, and refuses a path that exists (EADDRINUSE).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
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

describe("serveUnix: the socket file is the listener's own", () => {
  it.live("it listens on the path itself, and closing removes the file", () =>
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
      assert.strictEqual(fs.readFileSync(socketPath, "utf8"), "someone else's")
      assert.deepStrictEqual(fs.readdirSync(dir), ["broker.sock"])
    }))
})
