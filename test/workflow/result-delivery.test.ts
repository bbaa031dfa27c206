/**
 * `ResultDelivery` (C-WFD-11, C-WFD-12): phases confirmed one by one and
 * recorded in a ledger that outlives the watcher; capped exponential retry
 * on a TestClock; a payload whose retries run out is kept in the
 * undelivered area and its location logged, never retried or deleted.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Deferred, Effect, Fiber, Layer, Logger } from "effect"
import * as TestClock from "effect/testing/TestClock"
import * as Database from "../../src/store/Database.ts"
import { DeliveryMarks } from "../../src/store/DeliveryMarks.ts"
import { UndeliveredMemoryState, UndeliveredStore } from "../../src/store/UndeliveredStore.ts"
import {
  DEFAULT_DELIVERY_SETTINGS,
  deliver,
  type DeliveryJob,
  DeliveryRefused,
  marksPhaseLedger,
  memoryPhaseLedger,
  type PhaseLedger,
  PhaseLedgerState
} from "../../src/workflow/ResultDelivery.ts"

/** A phase that fails its first `failures` attempts, recording the time of each attempt. */
const phase = (name: string, failures: number, log: Array<readonly [string, number]>) => {
  let left = failures
  return {
    name,
    run: Effect.gen(function*() {
      log.push([name, yield* Clock.currentTimeMillis])
      if (left-- > 0) return yield* new DeliveryRefused({ reason: "Session not found" })
    })
  }
}

const job = (phases: DeliveryJob["phases"]): DeliveryJob => ({
  key: "run-3:result",
  run: "run-3",
  target: "planner",
  kind: "result",
  body: "the result",
  phases
})

describe("ResultDelivery", () => {
  it.effect("C-WFD-12: retries with capped exponential backoff (1, 2, 4, 8, 16, then 30 s)", () =>
    Effect.gen(function*() {
      const log: Array<readonly [string, number]> = []
      const fiber = yield* deliver(job([phase("message", 6, log)]), memoryPhaseLedger(), { maxAttempts: 7 }).pipe(
        Effect.provide(UndeliveredStore.layerMemory()),
        Effect.forkChild
      )
      yield* TestClock.adjust("5 minutes")
      const outcome = yield* Fiber.join(fiber)
      assert.strictEqual(outcome._tag, "Delivered")
      assert.deepStrictEqual(log.map(([, at]) => at), [0, 1_000, 3_000, 7_000, 15_000, 31_000, 61_000])
      assert.deepStrictEqual(DEFAULT_DELIVERY_SETTINGS, { baseDelayMs: 1_000, maxDelayMs: 30_000, factor: 2, maxAttempts: 6 })
    }))

  it.effect("C-WFD-12: after its attempts run out the payload is kept with its location logged, and nothing retries it", () => {
    const warnings: Array<string> = []
    const capture = Logger.make(({ logLevel, message }) => {
      if (logLevel !== "Warn") return
      const parts: ReadonlyArray<unknown> = Array.isArray(message) ? message : [message]
      warnings.push(parts.filter((part) => typeof part === "string").join(" "))
    })
    return Effect.gen(function*() {
      const state = new UndeliveredMemoryState()
      const log: Array<readonly [string, number]> = []
      const fiber = yield* deliver(job([phase("message", 1_000, log)]), memoryPhaseLedger()).pipe(
        Effect.provide(UndeliveredStore.layerMemory(state)),
        Effect.forkChild
      )
      yield* TestClock.adjust("10 minutes")
      const outcome = yield* Fiber.join(fiber)
      assert.strictEqual(outcome._tag, "Kept")
      if (outcome._tag !== "Kept") return
      assert.strictEqual(outcome.attempts, 6)
      assert.strictEqual(log.length, 6)
      assert.deepStrictEqual(state.entries.map((e) => [e.run, e.target, e.body, e.reason, e.attempts]), [[
        "run-3",
        "planner",
        "the result",
        "Session not found",
        6
      ]])
      assert.deepStrictEqual(warnings, [
        `The result of workflow run run-3 for planner was not delivered after 6 attempts (Session not found); it is kept at ${outcome.entry.location} and will not be retried`
      ])
      yield* TestClock.adjust("1 hour")
      assert.strictEqual(log.length, 6, "never retried forever")
      assert.strictEqual(state.entries.length, 1, "kept, not deleted")
    }).pipe(Effect.provide(Logger.layer([capture])))
  })

  it.effect("C-WFD-11: a phase confirmed before the watcher was replaced is not replayed; the next watcher retries only what is missing", () =>
    Effect.gen(function*() {
      const ledgerState = new PhaseLedgerState()
      const log: Array<readonly [string, number]> = []
      const message = phase("message", 0, log)
      // The first watcher: the parent message is confirmed, the confirmation phase never succeeds.
      const first = yield* deliver(job([message, phase("confirm", 1_000, log)]), memoryPhaseLedger(ledgerState), { maxAttempts: 2 })
        .pipe(Effect.provide(UndeliveredStore.layerMemory()), Effect.forkChild)
      yield* TestClock.adjust("1 minute")
      assert.strictEqual((yield* Fiber.join(first))._tag, "Kept")
      // A replaced watcher over the same ledger: only the confirmation runs.
      const second = yield* deliver(job([message, phase("confirm", 0, log)]), memoryPhaseLedger(ledgerState))
        .pipe(Effect.provide(UndeliveredStore.layerMemory()))
      assert.deepStrictEqual(second, { _tag: "Delivered", confirmed: ["confirm"], skipped: ["message"] })
      assert.deepStrictEqual(log.filter(([name]) => name === "message").length, 1, "the parent message was sent once")
    }))

  it.effect("C-WFD-11: a watcher interrupted right after the parent message was confirmed still records it, so its replacement does not send it again", () =>
    Effect.gen(function*() {
      const state = new PhaseLedgerState()
      const memory = memoryPhaseLedger(state)
      // A ledger whose write takes a step of its own, as the store's SQL marks do.
      const ledger: PhaseLedger = { isDone: memory.isDone, markDone: (key, name) => Effect.andThen(Effect.yieldNow, memory.markDone(key, name)) }
      const log: Array<readonly [string, number]> = []
      const confirmed = yield* Deferred.make<void>()
      const message = { name: "message", run: Effect.andThen(phase("message", 0, log).run, Deferred.succeed(confirmed, undefined)) }
      const watcher = yield* deliver(job([message]), ledger).pipe(
        Effect.provide(UndeliveredStore.layerMemory()),
        Effect.forkChild({ startImmediately: true })
      )
      // The watcher is replaced the moment the bus confirmed the message.
      yield* Deferred.await(confirmed)
      yield* Fiber.interrupt(watcher)
      const replacement = yield* deliver(job([message]), ledger).pipe(Effect.provide(UndeliveredStore.layerMemory()))
      assert.deepStrictEqual(replacement, { _tag: "Delivered", confirmed: [], skipped: ["message"] })
      assert.strictEqual(log.length, 1, "the parent message was sent once")
    }))

  it.effect("C-WFD-11: a watcher interrupted while its phase still waits stops at once and records nothing", () =>
    Effect.gen(function*() {
      const state = new PhaseLedgerState()
      const started = yield* Deferred.make<void>()
      const hanging = { name: "message", run: Effect.andThen(Deferred.succeed(started, undefined), Effect.never) }
      const watcher = yield* deliver(job([hanging]), memoryPhaseLedger(state)).pipe(
        Effect.provide(UndeliveredStore.layerMemory()),
        Effect.forkChild({ startImmediately: true })
      )
      yield* Deferred.await(started)
      yield* Fiber.interrupt(watcher)
      assert.strictEqual(state.done.size, 0)
    }))

  it.effect("C-WFD-12: a confirmed phase is progress: the next phase gets a full budget of its own", () =>
    Effect.gen(function*() {
      const log: Array<readonly [string, number]> = []
      const fiber = yield* deliver(job([phase("message", 2, log), phase("confirm", 2, log)]), memoryPhaseLedger(), { maxAttempts: 3 })
        .pipe(Effect.provide(UndeliveredStore.layerMemory()), Effect.forkChild)
      yield* TestClock.adjust("1 minute")
      assert.deepStrictEqual(yield* Fiber.join(fiber), { _tag: "Delivered", confirmed: ["message", "confirm"], skipped: [] })
      assert.strictEqual(log.length, 6)
    }))

  it.effect("unusable retry settings are a defect naming the setting", () =>
    Effect.gen(function*() {
      const exit = yield* deliver(job([]), memoryPhaseLedger(), { maxDelayMs: 10 }).pipe(
        Effect.provide(UndeliveredStore.layerMemory()),
        Effect.exit
      )
      assert.include(String(exit), "maxDelayMs")
    }))

  it.effect("C-WFD-11: with the store's DeliveryMarks a watcher over the same database (a new process) skips the confirmed phase", () =>
    Effect.scoped(Effect.gen(function*() {
      const database = yield* Layer.build(Database.layerMemory).pipe(Effect.orDie)
      const log: Array<readonly [string, number]> = []
      const message = phase("message", 0, log)
      const oldWatcher = marksPhaseLedger(yield* DeliveryMarks.makeSql.pipe(Effect.provideContext(database)))
      const first = yield* deliver(job([message, phase("confirm", 1_000, log)]), oldWatcher, { maxAttempts: 1 }).pipe(
        Effect.provide(UndeliveredStore.layerMemory())
      )
      assert.strictEqual(first._tag, "Kept")
      const newWatcher = marksPhaseLedger(yield* DeliveryMarks.makeSql.pipe(Effect.provideContext(database)))
      const second = yield* deliver(job([message, phase("confirm", 0, log)]), newWatcher).pipe(
        Effect.provide(UndeliveredStore.layerMemory())
      )
      assert.deepStrictEqual(second, { _tag: "Delivered", confirmed: ["confirm"], skipped: ["message"] })
      assert.strictEqual(log.filter(([name]) => name === "message").length, 1)
    })))
})
