/** The idle-queue actor: FIFO batches for a busy parent, the 500 ms recheck, rollback of a refused batch (C-DLV-10). */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Ref, Scope } from "effect"
import { TestClock } from "effect/testing"
import { DispatchError } from "../../src/workflow/orderingErrors.ts"
import { makeIdleQueue } from "../../src/workflow/IdleQueue.ts"
import type { InboundEntry } from "../../src/workflow/InboundEntry.ts"
import { entry, ids } from "./orderingSupport.ts"

const setup = Effect.gen(function*() {
  const idle = yield* Ref.make(false)
  const batches: Array<ReadonlyArray<string>> = []
  const refuse = yield* Ref.make<number | undefined>(undefined)
  const queue = yield* makeIdleQueue<string>({
    isIdle: Ref.get(idle),
    deliverBatch: (batch: ReadonlyArray<InboundEntry<string>>) =>
      Effect.flatMap(Ref.getAndSet(refuse, undefined), (delivered) => {
        if (delivered === undefined) {
          batches.push(ids(batch))
          return Effect.void
        }
        batches.push(ids(batch.slice(0, delivered)))
        return Effect.fail(new DispatchError({ delivered, reason: "host refused" }))
      })
  })
  return { idle, batches, refuse, queue }
})

describe("IdleQueue", () => {
  it.effect("after the queue's Scope closed, enqueue and deliverIdle take nothing and fail with IdleQueueClosed", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const { batches, idle, queue } = yield* Scope.provide(setup, scope)
      yield* Scope.close(scope, Exit.void)
      const late = yield* Effect.flip(queue.enqueue(entry("a", "s1")))
      assert.strictEqual(late._tag, "IdleQueueClosed")
      assert.strictEqual(late.message, "The idle queue's session generation has closed, so it did not take message a from s1; hand it to the session's next generation")
      yield* Ref.set(idle, true)
      assert.strictEqual((yield* Effect.flip(queue.deliverIdle(entry("b", "s1"))))._tag, "IdleQueueClosed")
      assert.deepStrictEqual(yield* queue.entries, [], "nothing stranded in a queue nobody flushes")
      assert.deepStrictEqual(batches, [], "nor handed to the host of a closed generation")
    }))

  it.effect("a busy parent's messages wait, then go as one FIFO batch at the first 500 ms recheck after it is idle (C-DLV-10)", () =>
    Effect.gen(function*() {
      const { batches, idle, queue } = yield* setup
      yield* queue.enqueue(entry("a", "s1"))
      yield* queue.enqueue(entry("b", "s2"))
      yield* queue.enqueue(entry("c", "s1"))
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual(batches, []) // still busy
      yield* Ref.set(idle, true)
      yield* TestClock.adjust("499 millis")
      assert.deepStrictEqual(batches, [])
      yield* TestClock.adjust("1 millis")
      assert.deepStrictEqual(batches, [["a", "b", "c"]])
      assert.deepStrictEqual(yield* queue.entries, [])
    }))

  it.effect("wake flushes at once, without waiting for the recheck", () =>
    Effect.gen(function*() {
      const { batches, idle, queue } = yield* setup
      yield* queue.enqueue(entry("a", "s1"))
      yield* Ref.set(idle, true)
      yield* queue.wake
      yield* Effect.yieldNow
      yield* Effect.yieldNow
      assert.deepStrictEqual(batches, [["a"]])
    }))

  it.effect("a batch the host partly refuses goes back from the first undelivered entry, ahead of later arrivals", () =>
    Effect.gen(function*() {
      const { batches, idle, queue, refuse } = yield* setup
      for (const id of ["a", "b", "c"]) yield* queue.enqueue(entry(id, "s1"))
      yield* Ref.set(refuse, 1)
      yield* Ref.set(idle, true)
      yield* TestClock.adjust("500 millis")
      assert.deepStrictEqual(batches, [["a"]])
      yield* queue.enqueue(entry("d", "s2"))
      assert.deepStrictEqual(ids(yield* queue.entries), ["b", "c", "d"])
      yield* TestClock.adjust("500 millis")
      assert.deepStrictEqual(batches, [["a"], ["b", "c", "d"]])
    }))

  it.effect("a claim its dispatch took is not put back by an interruption that came meanwhile; one cut inside an interruptible wait is", () =>
    Effect.gen(function*() {
      const { queue } = yield* setup
      yield* queue.enqueue(entry("a", "s1"))
      yield* queue.enqueue(entry("b", "s1"))
      const gate = yield* Deferred.make<void>()
      const took: Array<string> = []
      // A port that must not be cut in half (as a ParentJournal's is) takes its claim once the gate opens;
      // the interruption waits for it, then lands.
      const taking = yield* Effect.forkChild(
        queue.claimAndDispatch(
          () => (queued) => queued.messageId === "a",
          (claimed) =>
            Effect.uninterruptible(Effect.andThen(Deferred.await(gate), Effect.sync(() => void took.push(...ids(claimed)))))
        ),
        { startImmediately: true }
      )
      const interrupting = yield* Effect.forkChild(Fiber.interrupt(taking), { startImmediately: true })
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(interrupting)
      assert.deepStrictEqual(took, ["a"])
      assert.deepStrictEqual(ids(yield* queue.entries), ["b"])

      // A dispatch whose wait is interruptible and is cut there took nothing: its claim goes back.
      const waiting = yield* Effect.forkChild(
        queue.claimAndDispatch(
          () => (queued) => queued.messageId === "b",
          () => Effect.interruptible(Effect.never)
        ),
        { startImmediately: true }
      )
      assert.deepStrictEqual(yield* queue.entries, [])
      yield* Fiber.interrupt(waiting)
      assert.deepStrictEqual(ids(yield* queue.entries), ["b"])
    }))

  it.effect("closing the generation's Scope stops the flusher: an idle parent gets nothing after it", () =>
    Effect.gen(function*() {
      const batches: Array<ReadonlyArray<string>> = []
      const fiber = yield* Effect.forkChild(Effect.scoped(Effect.gen(function*() {
        const queue = yield* makeIdleQueue<string>({
          isIdle: Effect.succeed(true),
          deliverBatch: (batch) => Effect.sync(() => void batches.push(ids(batch)))
        })
        yield* queue.enqueue(entry("a", "s1"))
      })))
      yield* Fiber.join(fiber)
      yield* TestClock.adjust("5 seconds")
      assert.deepStrictEqual(batches, [])
    }))
  it.effect("a defect of the host's isIdle is logged and the flusher goes on: the next recheck delivers", () =>
    Effect.gen(function*() {
      const batches: Array<ReadonlyArray<string>> = []
      let calls = 0
      const queue = yield* makeIdleQueue<string>({
        isIdle: Effect.suspend(() => ++calls === 1 ? Effect.die(new Error("engine bug")) : Effect.succeed(true)),
        deliverBatch: (batch) => Effect.sync(() => void batches.push(ids(batch)))
      })
      yield* queue.enqueue(entry("a", "s1"))
      yield* TestClock.adjust("500 millis")
      assert.deepStrictEqual([calls, batches], [1, []], "test setup: the first recheck met the defect")
      yield* TestClock.adjust("500 millis")
      assert.deepStrictEqual(batches, [["a"]])
    }))

  it.effect("an idle parent's new entry goes in one batch behind what waited, never ahead of it (deliverIdle)", () =>
    Effect.gen(function*() {
      const batches: Array<ReadonlyArray<string>> = []
      const idle = yield* Ref.make(false)
      const queue = yield* makeIdleQueue<string>({
        isIdle: Ref.get(idle),
        deliverBatch: (batch) => Effect.sync(() => void batches.push(ids(batch)))
      })
      yield* queue.enqueue(entry("a", "s1"))
      yield* Ref.set(idle, true)
      assert.isTrue(yield* queue.deliverIdle(entry("b", "s1")))
      assert.deepStrictEqual(batches, [["a", "b"]])
      assert.deepStrictEqual(yield* queue.entries, [])
    }))
})
