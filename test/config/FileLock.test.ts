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
import { fileLockHolders, holdFileLock } from "../../src/config/FileLock.ts"

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
