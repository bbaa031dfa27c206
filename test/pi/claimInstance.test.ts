/**
 * The pi generation's client instance (src/pi/instance.ts): the instance a
 * session file's journal names is continued unless a live generation holds
 * it — in this process too — and then a fresh one is taken (saying so:
 * `inheritedLive`); a fresh one is
 * held from the first checkpoint that names it; a clean end removes the lock
 * file; a name that is not one of ours is never inherited.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { claimInstance, instancesDir, isInstanceId } from "../../src/pi/instance.ts"

const INHERITED = "0b7c0e6e-3f7a-4a52-9d3c-6a1f1e2b9c40"

/** A fresh intercom dir for the test, removed when its Scope closes. */
const intercomDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "eipi-instance-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/** Claims in a Scope of its own, closed by the caller. */
const claimIn = (dir: string, inherited: string | undefined) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const instance = yield* Scope.provide(claimInstance({ intercomDir: dir, inherited }), scope)
    return { instance, close: Scope.close(scope, Exit.void) }
  })

describe("pi client instance", () => {
  it.effect("the inherited instance while nobody holds it; a fresh one, saying the inherited is live, while a live generation (here, this process) does; the inherited again once it let go", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* intercomDir
      const first = yield* claimIn(dir, INHERITED)
      assert.strictEqual(first.instance.instanceId, INHERITED)
      assert.strictEqual(yield* first.instance.forCheckpoint, INHERITED)
      const second = yield* claimIn(dir, INHERITED)
      assert.notStrictEqual(second.instance.instanceId, INHERITED)
      assert.isTrue(isInstanceId(second.instance.instanceId))
      assert.isFalse(first.instance.inheritedLive)
      assert.isTrue(second.instance.inheritedLive, "a live generation holds the journal's instance")
      yield* first.close
      const third = yield* claimIn(dir, INHERITED)
      assert.strictEqual(third.instance.instanceId, INHERITED)
      assert.isFalse(third.instance.inheritedLive)
      yield* third.close
      yield* second.close
    })))

  it.effect("a fresh instance is locked at its first checkpoint (not before: no lock file for a session without mail), and held until its Scope closes", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* intercomDir
      const fresh = yield* claimIn(dir, undefined)
      const id = fresh.instance.instanceId
      assert.isFalse(fs.existsSync(path.join(instancesDir(dir), `${id}.lock`)))
      assert.strictEqual(yield* fresh.instance.forCheckpoint, id)
      assert.strictEqual(yield* fresh.instance.forCheckpoint, id, "once held, it stays held")
      const resumedMeanwhile = yield* claimIn(dir, id)
      assert.notStrictEqual(resumedMeanwhile.instance.instanceId, id)
      yield* resumedMeanwhile.close
      yield* fresh.close
      const resumedAfter = yield* claimIn(dir, id)
      assert.strictEqual(resumedAfter.instance.instanceId, id)
      yield* resumedAfter.close
    })))

  it.effect("a generation that ends cleanly removes its instance's lock file, inherited or fresh; the next claim of it makes one again", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* intercomDir
      const lockOf = (id: string) => path.join(instancesDir(dir), `${id}.lock`)
      const inherited = yield* claimIn(dir, INHERITED)
      assert.isTrue(fs.existsSync(lockOf(INHERITED)))
      yield* inherited.close
      assert.isFalse(fs.existsSync(lockOf(INHERITED)), "the inherited instance's file")
      const fresh = yield* claimIn(dir, undefined)
      const id = fresh.instance.instanceId
      assert.strictEqual(yield* fresh.instance.forCheckpoint, id)
      assert.isTrue(fs.existsSync(lockOf(id)))
      yield* fresh.close
      assert.isFalse(fs.existsSync(lockOf(id)), "the fresh instance's file")
      const resumed = yield* claimIn(dir, id)
      assert.strictEqual(resumed.instance.instanceId, id)
      assert.isTrue(fs.existsSync(lockOf(id)))
      yield* resumed.close
      assert.deepStrictEqual(fs.readdirSync(instancesDir(dir)), [])
    })))

  it.effect("a checkpoint naming something that is not one of our UUIDs is not inherited (nor made a path)", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* intercomDir
      for (const name of ["../../etc/passwd", "", "NOT-A-UUID", INHERITED.toUpperCase()]) {
        const claimed = yield* claimIn(dir, name)
        assert.notStrictEqual(claimed.instance.instanceId, name)
        assert.isTrue(isInstanceId(claimed.instance.instanceId))
        yield* claimed.close
      }
      assert.isFalse(fs.existsSync(instancesDir(dir)), "nothing was locked")
    })))

  it.effect("a lock directory that cannot be made: a fresh instance, and checkpoints name none (nobody could tell it is live)", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* intercomDir
      fs.writeFileSync(instancesDir(dir), "not a directory")
      const claimed = yield* claimIn(dir, INHERITED)
      assert.notStrictEqual(claimed.instance.instanceId, INHERITED)
      assert.strictEqual(yield* claimed.instance.forCheckpoint, undefined)
      assert.isFalse(claimed.instance.inheritedLive, "not known to be live: its journal is restored, as before")
      yield* claimed.close
    })))
})
