/**
 * Stale-socket recovery (the broker's and the watch control socket's): a
 * path held by a dead process's file is taken over, one that something
 * answers on is not, and other listen failures pass through untouched.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Ref } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { listenReplacingStale } from "../../src/transport/staleSocket.ts"
import { dialUnix, serveUnix } from "../../src/transport/UnixSocket.ts"
import { staleSocketAt } from "../support/staleSocket.ts"

const tempDir = () =>
  Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "intercom-stale-"))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )

const ignore = () => Effect.void

/** An `answers` probe that counts how often it was asked. */
const probe = (answer: boolean) =>
  Effect.map(Ref.make(0), (asked) => ({ asked, answers: Effect.as(Ref.update(asked, (n) => n + 1), answer) }))

const dials = (socketPath: string) => Effect.scoped(Effect.isSuccess(dialUnix(socketPath)))

describe("listenReplacingStale", () => {
  it.live("listens on a free path without asking whether anything answers", () =>
    Effect.gen(function*() {
      const socketPath = path.join(yield* tempDir(), "free.sock")
      const { asked, answers } = yield* probe(true)
      yield* listenReplacingStale(socketPath, serveUnix(socketPath, ignore), answers)
      assert.isTrue(yield* dials(socketPath))
      assert.strictEqual(yield* Ref.get(asked), 0)
    }))

  it.live("replaces a socket file that nothing answers on, and listens", () =>
    Effect.gen(function*() {
      const socketPath = path.join(yield* tempDir(), "stale.sock")
      yield* staleSocketAt(socketPath) // left by a crash
      const { asked, answers } = yield* probe(false)
      yield* listenReplacingStale(socketPath, serveUnix(socketPath, ignore), answers)
      assert.isTrue(yield* dials(socketPath))
      assert.isTrue(fs.statSync(socketPath).isSocket())
      assert.strictEqual(yield* Ref.get(asked), 1)
    }))

  it.live("leaves a regular file that nothing answers on alone: ListenError NOT_A_SOCKET", () =>
    Effect.gen(function*() {
      const socketPath = path.join(yield* tempDir(), "file.sock")
      fs.writeFileSync(socketPath, "not a socket")
      const { answers } = yield* probe(false)
      const error = yield* Effect.flip(listenReplacingStale(socketPath, serveUnix(socketPath, ignore), answers))
      assert.strictEqual(error._tag === "ListenError" ? error.code : error._tag, "NOT_A_SOCKET")
      assert.strictEqual(fs.readFileSync(socketPath, "utf8"), "not a socket")
    }))

  it.live("fails with SocketInUse and leaves the path alone when something answers", () =>
    Effect.gen(function*() {
      const socketPath = path.join(yield* tempDir(), "live.sock")
      yield* serveUnix(socketPath, ignore) // the live owner, for the rest of the test
      const { answers } = yield* probe(true)
      const error = yield* Effect.flip(
        Effect.scoped(listenReplacingStale(socketPath, serveUnix(socketPath, ignore), answers))
      )
      assert.strictEqual(error._tag, "SocketInUse")
      assert.isTrue(yield* dials(socketPath), "the first listener still serves")
    }))

  it.live("passes any other listen failure through without asking", () =>
    Effect.gen(function*() {
      const socketPath = path.join(yield* tempDir(), "no-such-dir", "x.sock")
      const { asked, answers } = yield* probe(false)
      const error = yield* Effect.flip(Effect.scoped(listenReplacingStale(socketPath, serveUnix(socketPath, ignore), answers)))
      assert.strictEqual(error._tag, "ListenError")
      // (Node reports a bind into a missing directory as EACCES or ENOENT, by platform.)
      assert.notInclude(["EADDRINUSE", "UNKNOWN"], error._tag === "ListenError" ? error.code : "EADDRINUSE")
      assert.strictEqual(yield* Ref.get(asked), 0)
    }))
})
