/**
 * The broker's lifetime lock (src/config/LifetimeLock.ts): one holder at a
 * time, in this process and across processes; a frozen holder keeps it, a
 * killed one loses it at once; the file is private and alone (no journal).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { holdLifetimeLock, isLifetimeLockHeld, lifetimeLockFile } from "../../src/config/LifetimeLock.ts"
import { tempDir } from "../support/broker.ts"
import { freeze } from "../support/freeze.ts"
import { spawnNode } from "../support/process.ts"

const HOLDER = fileURLToPath(new URL("./fixtures/hold-lock.ts", import.meta.url))

const mode = (file: string) => fs.statSync(file).mode & 0o777

/** The lock held in a Scope of its own, closed by the caller. */
const holdIn = (dir: string) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    yield* holdLifetimeLock(dir).pipe(Scope.provide(scope))
    return scope
  })

describe("the lifetime lock, in one process", () => {
  it.live("one holder at a time: a second try fails with LifetimeLockHeld until the first Scope closes", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      assert.isFalse(yield* isLifetimeLockHeld(dir), "nothing holds a lock that was never made")
      const first = yield* holdIn(dir)
      assert.isTrue(yield* isLifetimeLockHeld(dir))
      const second = yield* Effect.flip(Effect.scoped(holdLifetimeLock(dir)))
      assert.strictEqual(second._tag, "LifetimeLockHeld")
      assert.include(second.message, lifetimeLockFile(dir))
      assert.isTrue(yield* isLifetimeLockHeld(dir), "asking, and failing to take it, leave the holder alone")
      yield* Scope.close(first, Exit.void)
      assert.isFalse(yield* isLifetimeLockHeld(dir))
      yield* Effect.scoped(holdLifetimeLock(dir))
    }))

  it.live("the file is 0600 — also one left 0644 by an older run — and stands alone: no journal beside it", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      const file = lifetimeLockFile(dir)
      fs.writeFileSync(file, "")
      fs.chmodSync(file, 0o644)
      yield* holdIn(dir)
      assert.strictEqual(mode(file), 0o600)
      assert.deepStrictEqual(fs.readdirSync(dir), ["broker.lock"])
    }))

  it.live("asking creates nothing; a file that is not a lock fails with LifetimeLockFailed, saying what to do", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      assert.isFalse(yield* isLifetimeLockHeld(path.join(dir, "missing")))
      assert.deepStrictEqual(fs.readdirSync(dir), [])
      fs.writeFileSync(lifetimeLockFile(dir), "this is not an SQLite database, it is a text file")
      const error = yield* Effect.flip(Effect.scoped(holdLifetimeLock(dir)))
      assert.strictEqual(error._tag, "LifetimeLockFailed")
      assert.include(error.message, "remove the file")
      assert.isFalse(yield* isLifetimeLockHeld(dir))
    }))
})

describe("the lifetime lock, across processes", () => {
  it.live("a frozen holder keeps it; a holder killed with SIGKILL loses it at once", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      const holder = yield* spawnNode([HOLDER, dir], { stdin: "pipe" })
      yield* holder.waitStdout(/^held$/m)
      yield* freeze(holder.pid)
      assert.isTrue(yield* isLifetimeLockHeld(dir))
      assert.strictEqual((yield* Effect.flip(Effect.scoped(holdLifetimeLock(dir))))._tag, "LifetimeLockHeld")

      yield* holder.kill("SIGKILL")
      assert.strictEqual((yield* holder.waitExit()).signal, "SIGKILL")
      assert.isFalse(yield* isLifetimeLockHeld(dir))
      yield* holdIn(dir)
      assert.isTrue(yield* isLifetimeLockHeld(dir))
    }))
})
