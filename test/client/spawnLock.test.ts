/**
 * The spawn lock's rules (P93, C-BRK-17/18), with time from a TestClock:
 * who holds a lock, when it is stale, and the "empty lock under 1 s old is
 * held" rule that keeps two racing clients from both spawning, and the
 * takeover lock that lets only one of two clients replace a stale lock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Scheduler } from "effect"
import { TestClock } from "effect/testing"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { holdFileLock } from "../../src/config/FileLock.ts"
import { acquireSpawnLock, parseSpawnLock, releaseSpawnLock } from "../../src/client/spawnLock.ts"

/** A whole second, so that every file system stores it exactly as an mtime. */
const T = 1_700_000_000_000

const lockIn = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "intercom-lock-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
).pipe(Effect.map((dir) => path.join(dir, "broker.spawn.lock")))

/** Writes `content` to the lock with its mtime at `mtimeMs`. */
const existingLock = (file: string, content: string, mtimeMs: number) => {
  fs.writeFileSync(file, content)
  fs.utimesSync(file, mtimeMs / 1000, mtimeMs / 1000)
}

const ours = (now: number) => `${process.pid}\n${now}\n`
const exitedPid = (): number => spawnSync(process.execPath, ["-e", ""]).pid ?? 0

/**
 * A lock with `content`, modified at T: at `heldAt` it is held (and left
 * alone), at `staleAt` it is stale (replaced by ours).
 */
const heldUntil = (lock: { readonly content: string; readonly heldAt: number; readonly staleAt: number }) =>
  Effect.gen(function*() {
    const file = yield* lockIn
    existingLock(file, lock.content, T)
    yield* TestClock.setTime(lock.heldAt)
    assert.strictEqual(yield* acquireSpawnLock(file), "held")
    assert.strictEqual(fs.readFileSync(file, "utf8"), lock.content, "left to its holder")
    yield* TestClock.setTime(lock.staleAt)
    assert.strictEqual(yield* acquireSpawnLock(file), "acquired")
    assert.strictEqual(fs.readFileSync(file, "utf8"), ours(lock.staleAt))
  })

describe("acquireSpawnLock", () => {
  it.effect("creates a missing lock with our pid and the Clock's time", () =>
    Effect.gen(function*() {
      const file = yield* lockIn
      yield* TestClock.setTime(T)
      assert.strictEqual(yield* acquireSpawnLock(file), "acquired")
      assert.strictEqual(fs.readFileSync(file, "utf8"), ours(T))
    }))

  it.effect("an empty lock is held while it is under 1 s old, and stale from 1 s", () =>
    heldUntil({ content: "", heldAt: T + 999, staleAt: T + 1000 }))

  it.effect("a live holder's lock is held for 10 s after its timestamp, and stale after", () =>
    heldUntil({ content: `${process.pid}\n${T}\n`, heldAt: T + 10_000, staleAt: T + 10_001 })) // this process is alive

  it.effect("a fresh lock whose pid has exited, or whose content is not canonical, is stale", () =>
    Effect.gen(function*() {
      const file = yield* lockIn
      yield* TestClock.setTime(T + 10)
      for (const content of [`${exitedPid()}\n${T}\n`, `${process.pid}a\n${T}\n`, `${process.pid}\n${T}x\n`, "garbage"]) {
        existingLock(file, content, T)
        assert.strictEqual(yield* acquireSpawnLock(file), "acquired", JSON.stringify(content))
        assert.strictEqual(fs.readFileSync(file, "utf8"), ours(T + 10))
        fs.rmSync(file)
      }
    }))
})

describe("two clients taking over one stale lock", () => {
  // Each budget and head start puts the second taker's yields at other points of the first one's takeover.
  // Without the takeover lock, a taker that judged the lock stale removed the lock the other had just
  // created in its place, and both spawned.
  it.effect.each([3, 4, 6, 7, 9])("exactly one of them acquires it, wherever they interleave (MaxOpsBeforeYield %i)", (budget) =>
    Effect.gen(function*() {
      const file = yield* lockIn
      yield* TestClock.setTime(T + 10)
      const outcomes: Array<string> = []
      for (let headStart = 0; headStart < 12; headStart++) {
        existingLock(file, "garbage\n", T) // stale: not the lock's shape
        const first = yield* Effect.forkChild(acquireSpawnLock(file))
        for (let i = 0; i < headStart; i++) yield* Effect.yieldNow
        const second = yield* Effect.forkChild(acquireSpawnLock(file))
        const got = [yield* Fiber.join(first), yield* Fiber.join(second)]
        outcomes.push(got.join("+"))
        assert.strictEqual(fs.readFileSync(file, "utf8"), ours(T + 10), "the winner's lock stays")
        fs.rmSync(file)
      }
      const both = outcomes.flatMap((got, headStart) => got === "acquired+acquired" ? [headStart] : [])
      assert.deepStrictEqual(both, [], "head starts at which both takers acquired the lock")
      assert.isTrue(outcomes.every((got) => got === "acquired+held" || got === "held+acquired"), outcomes.join(", "))
    }).pipe(Effect.provideService(Scheduler.MaxOpsBeforeYield, budget)))

  it.effect("a client that finds another taking over leaves the stale lock to it", () =>
    Effect.gen(function*() {
      const file = yield* lockIn
      existingLock(file, "garbage\n", T)
      yield* TestClock.setTime(T + 10)
      yield* Effect.scoped(Effect.gen(function*() {
        yield* holdFileLock(`${file}.takeover`, { probeGraceMs: 0 }) // the other taker, mid-takeover
        assert.strictEqual(yield* acquireSpawnLock(file), "held")
        assert.strictEqual(fs.readFileSync(file, "utf8"), "garbage\n", "left to the taker")
      }))
      assert.strictEqual(yield* acquireSpawnLock(file), "acquired", "once it let go, the stale lock is taken over")
      assert.strictEqual(fs.readFileSync(file, "utf8"), ours(T + 10))
    }))
})

describe("releaseSpawnLock", () => {
  it.effect("removes our lock and leaves someone else's", () =>
    Effect.gen(function*() {
      const file = yield* lockIn
      fs.writeFileSync(file, ours(T))
      yield* releaseSpawnLock(file)
      assert.isFalse(fs.existsSync(file))
      const theirs = `${process.pid + 1}\n${T}\n`
      fs.writeFileSync(file, theirs)
      yield* releaseSpawnLock(file)
      assert.strictEqual(fs.readFileSync(file, "utf8"), theirs)
    }))
})

describe("parseSpawnLock", () => {
  it("reads `<pid>\\n<ms>` with or without a final newline, and nothing else", () => {
    assert.deepStrictEqual(parseSpawnLock("41230\n1700000000000\n"), { pid: 41230, createdAt: 1_700_000_000_000 })
    assert.deepStrictEqual(parseSpawnLock("41230\n1700000000000"), { pid: 41230, createdAt: 1_700_000_000_000 })
    for (const text of ["", "\n", "41230", "41230\n", "12a\n1", "41230\n1.5\n", "41230\n-1\n", "0\n1\n", "41230\n1\n\n", "41230\n1\nx"]) {
      assert.isUndefined(parseSpawnLock(text), JSON.stringify(text))
    }
  })
})
