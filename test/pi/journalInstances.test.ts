/**
 * Which undelivered checkpoints a generation restores, decided per
 * checkpoint (generation.ts): a message is left out when a checkpoint of it
 * names an instance another live generation holds (instance.ts
 * `liveInstances`, journal.ts `undeliveredIn`), whichever instance the
 * latest checkpoint names. Both cases below went wrong when the decision
 * followed the latest checkpoint's instance alone:
 *
 * - P1 holds A and has m1; P2 took a fresh B and received m2, then ended or
 *   /reloaded: the next generation holds B and must still leave m1 to P1.
 * - P1 (A) crashed with m1 unshown while P2 (B) runs: the next resume finds
 *   B live, and must still restore m1, since nobody holds A.
 *
 * The generation's own path is exercised end to end in instance.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { claimInstance, instancesDir, liveInstances } from "../../src/pi/instance.ts"
import { checkpointEntry, inheritedInstance, undeliveredIn, undeliveredInstances } from "../../src/pi/journal.ts"
import type { SessionInfo } from "../../src/protocol/frames.ts"
import type { JournalRecord } from "../../src/session/Host.ts"
import { message } from "../support/broker.ts"

const A = "0b7c0e6e-3f7a-4a52-9d3c-6a1f1e2b9c40"
const B = "5d2f7a1c-8e4b-4c3d-9a6f-2b1e0c9d8f70"
const from: SessionInfo = { id: "sender-1", cwd: "/tmp", model: "m", pid: 1, startedAt: 1, lastActivity: 1 }
const record = (id: string, receivedAt: number): JournalRecord => ({ from, message: message(id, { id }), receivedAt })
const checkpoint = (id: string, receivedAt: number, instance: string) => ({
  type: "custom",
  customType: "intercom_received",
  data: checkpointEntry("me", record(id, receivedAt), instance)
})
/** The journal as both cases leave it: m1 received by instance A, then m2 by instance B. */
const entries = [checkpoint("m1", 1, A), checkpoint("m2", 2, B)]

const intercomDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "eipi-journal-instances-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/** What a generation starting on `entries` restores: its claim, then the instances other live generations hold. */
const restored = (dir: string) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const instance = yield* Scope.provide(claimInstance({ intercomDir: dir, inherited: inheritedInstance("me", entries) }), scope)
    const others = undeliveredInstances("me", entries).filter((id) => id !== instance.instanceId)
    const leftTo = yield* liveInstances(dir, others)
    const ids = undeliveredIn("me", entries, leftTo).map((r) => r.message.id)
    yield* Scope.close(scope, Exit.void)
    return ids
  })

/** A live generation holding `id` (claimInstance with it inherited), until the returned effect closes it. */
const liveHolder = (dir: string, id: string) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const held = yield* Scope.provide(claimInstance({ intercomDir: dir, inherited: id }), scope)
    assert.strictEqual(held.instanceId, id)
    return Scope.close(scope, Exit.void)
  })

describe("pi journal restore: per checkpoint's instance", () => {
  it.effect("a message whose instance a live generation holds is left to it, though the latest checkpoint names another", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* intercomDir
      const closeP1 = yield* liveHolder(dir, A) // P1 runs, holding A, and has m1
      const ids = yield* restored(dir) // B's holder ended (quit or /reload): the next generation takes B
      yield* closeP1
      assert.deepStrictEqual(ids, ["m2"], "m1 is live P1's; m2 is B's, which this generation holds")
    })))

  it.effect("a message whose instance nobody holds (its holder crashed, leaving its lock file) is restored, though the latest names a live one", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* intercomDir
      fs.mkdirSync(instancesDir(dir), { recursive: true })
      fs.writeFileSync(path.join(instancesDir(dir), `${A}.lock`), "") // what a holder that died leaves
      const closeP2 = yield* liveHolder(dir, B) // P2 runs, holding B
      const ids = yield* restored(dir)
      yield* closeP2
      assert.deepStrictEqual(ids, ["m1"], "nobody holds A: m1 is restored here; m2 is live P2's")
    })))

  it.effect("liveInstances looks without creating: an instance never held, or not one of our ids, is not live and gets no file", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* intercomDir
      const live = yield* liveInstances(dir, [A, "../escape"])
      assert.strictEqual(live.size, 0)
      assert.isFalse(fs.existsSync(instancesDir(dir)), "no lock directory, nor file, was made")
      const closeB = yield* liveHolder(dir, B)
      assert.deepStrictEqual([...(yield* liveInstances(dir, [A, B]))], [B])
      yield* closeB
      assert.strictEqual((yield* liveInstances(dir, [B])).size, 0, "let go")
    })))
})
