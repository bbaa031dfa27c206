/**
 * `fileLockHolders`: who holds a lock, as the kernel says (Linux's
 * `/proc/locks`), so that a pid read from `broker.pid` is named as the
 * lifetime lock's holder only when it is one.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileLockHolders, holdFileLock, holdRemovableFileLock } from "../../src/config/FileLock.ts"

const lockFile = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "eic-lock-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
).pipe(Effect.map((dir) => path.join(dir, "some.lock")))

describe("fileLockHolders", () => {
  it.live.skipIf(!fs.existsSync("/proc/locks"))("lists this process while it holds the lock, nobody once it let go or with no file", () =>
    Effect.gen(function*() {
      const file = yield* lockFile
      assert.deepStrictEqual(yield* fileLockHolders(file), [], "no file")
      const scope = yield* Scope.make()
      yield* holdFileLock(file, { probeGraceMs: 0 }).pipe(Scope.provide(scope))
      assert.deepStrictEqual(yield* fileLockHolders(file), [process.pid])
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(yield* fileLockHolders(file), [])
    }))
})

describe("holdRemovableFileLock", () => {
  it.live.skipIf(!fs.existsSync("/proc/locks"))("removes its file as it lets go; a file nobody removed is taken again", () =>
    Effect.gen(function*() {
      const file = yield* lockFile
      const scope = yield* Scope.make()
      yield* holdRemovableFileLock(file, { probeGraceMs: 0 }).pipe(Scope.provide(scope))
      assert.isTrue(fs.existsSync(file))
      yield* Scope.close(scope, Exit.void)
      assert.isFalse(fs.existsSync(file), "removed on release")
      fs.writeFileSync(file, "") // one a holder that died left
      const again = yield* Scope.make()
      yield* holdRemovableFileLock(file, { probeGraceMs: 0 }).pipe(Scope.provide(again))
      assert.deepStrictEqual(yield* fileLockHolders(file), [process.pid])
      yield* Scope.close(again, Exit.void)
      assert.isFalse(fs.existsSync(file))
    }))

  for (
    const { meanwhile, recreate } of [
      { meanwhile: "the path names no file", recreate: false },
      { meanwhile: "a newcomer created a new file at the path", recreate: true }
    ]
  ) {
    it.live.skipIf(!fs.existsSync("/proc/locks"))(`a holder that removes the file between another locker's open and its lock (${meanwhile}): that locker starts again and holds the file the path names, so a third is refused`, () =>
    Effect.gen(function*() {
      const file = yield* lockFile
      const first = yield* Scope.make()
      yield* holdRemovableFileLock(file, { probeGraceMs: 0 }).pipe(Scope.provide(first))
      let opens = 0
      const second = yield* Scope.make()
      yield* holdRemovableFileLock(file, {
        probeGraceMs: 0,
        // The first holder ends (removing the file) after the second opened it, before the second locks it.
        betweenOpenAndLock: () => {
          opens++
          if (opens !== 1) return
          Effect.runSync(Scope.close(first, Exit.void))
          if (recreate) fs.writeFileSync(file, "", { mode: 0o600 }) // as a newcomer's open does, before its lock
        }
      }).pipe(Scope.provide(second))
      assert.strictEqual(opens, 2, "it locked the removed file, saw the path name another or none, and started again")
      assert.isTrue(fs.existsSync(file), "the second holds a file the path names")
      const third = yield* Scope.make()
      const exit = yield* holdRemovableFileLock(file, { probeGraceMs: 0 }).pipe(Scope.provide(third), Effect.exit)
      assert.isTrue(Exit.isFailure(exit) && exit.cause.toString().includes("FileLockHeld"), String(exit))
      yield* Scope.close(third, Exit.void)
      yield* Scope.close(second, Exit.void)
      assert.isFalse(fs.existsSync(file))
    }))
  }
})
