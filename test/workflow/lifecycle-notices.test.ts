/**
 * `LifecycleNotices` (C-WFD-14): once per occurrence, marked only after the
 * send was acknowledged; `awaiting_input` tracked and never waking.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import fc from "fast-check"
import { DeliveryMarks, DeliveryMarksMemoryState } from "../../src/store/DeliveryMarks.ts"
import { type LifecycleOccurrence, makeLifecycleNotices } from "../../src/workflow/LifecycleNotices.ts"
import { DeliveryRefused } from "../../src/workflow/ResultDelivery.ts"

const occurrence = (event: LifecycleOccurrence["event"], occurrence = "1", run = "run-3"): LifecycleOccurrence => ({
  run,
  event,
  occurrence,
  text: `${run} ${event} #${occurrence}`
})

const recorder = () => {
  const sent: Array<{ text: string; wake: boolean }> = []
  let failNext = 0
  return {
    sent,
    failNext: (n: number) => void (failNext = n),
    send: (text: string, options: { readonly wake: boolean }) =>
      Effect.suspend(() => {
        if (failNext > 0) {
          failNext--
          return Effect.fail(new DeliveryRefused({ reason: "Session not found" }))
        }
        sent.push({ text, wake: options.wake })
        return Effect.void
      })
  }
}

describe("LifecycleNotices", () => {
  it.effect("C-WFD-14: one notice per occurrence; a new occurrence of the same event is a new notice", () =>
    Effect.gen(function*() {
      const r = recorder()
      const notices = yield* makeLifecycleNotices(r.send)
      assert.strictEqual(yield* notices.notify(occurrence("blocked")), "sent")
      assert.strictEqual(yield* notices.notify(occurrence("blocked")), "duplicate")
      assert.strictEqual(yield* notices.notify(occurrence("blocked", "2")), "sent")
      assert.strictEqual(yield* notices.notify(occurrence("completed")), "sent")
      assert.deepStrictEqual(r.sent.map((s) => s.text), ["run-3 blocked #1", "run-3 blocked #2", "run-3 completed #1"])
    }))

  it.effect("C-WFD-14: the mark is committed only after the send is acknowledged: a failed notice is sent on the next raise", () =>
    Effect.gen(function*() {
      const r = recorder()
      const notices = yield* makeLifecycleNotices(r.send)
      r.failNext(1)
      const failed = yield* Effect.flip(notices.notify(occurrence("failed")))
      assert.strictEqual(failed.message, "Not delivered: Session not found")
      assert.strictEqual(yield* notices.notify(occurrence("failed")), "sent")
      assert.strictEqual(yield* notices.notify(occurrence("failed")), "duplicate")
      assert.deepStrictEqual(r.sent.map((s) => s.text), ["run-3 failed #1"])
    }))

  it.effect("C-WFD-14: with shared DeliveryMarks a new notices service (after a restart) does not send a delivered notice again", () =>
    Effect.gen(function*() {
      const r = recorder()
      const state = new DeliveryMarksMemoryState()
      const before = yield* makeLifecycleNotices(r.send, [], DeliveryMarks.makeMemory(state))
      yield* before.notify(occurrence("completed"))
      const after = yield* makeLifecycleNotices(r.send, [], DeliveryMarks.makeMemory(state))
      assert.strictEqual(yield* after.notify(occurrence("completed")), "duplicate")
      assert.strictEqual(r.sent.length, 1)
    }))

  it.effect("C-WFD-14: a raise interrupted right after its send was acknowledged has marked it, so the next raise does not send it again", () =>
    Effect.gen(function*() {
      const r = recorder()
      const state = new DeliveryMarksMemoryState()
      const memory = DeliveryMarks.makeMemory(state)
      // Marks whose write takes a step of its own, as the store's SQL marks do.
      const marks = { has: memory.has, add: (mark: string) => Effect.andThen(Effect.yieldNow, memory.add(mark)) }
      const acknowledged = yield* Deferred.make<void>()
      const send = (text: string, options: { readonly wake: boolean }) =>
        Effect.andThen(r.send(text, options), Deferred.succeed(acknowledged, undefined))
      const notices = yield* makeLifecycleNotices(send, [], marks)
      const raising = yield* Effect.forkChild(notices.notify(occurrence("completed")), { startImmediately: true })
      yield* Deferred.await(acknowledged)
      yield* Fiber.interrupt(raising)
      assert.strictEqual(yield* notices.notify(occurrence("completed")), "duplicate")
      assert.strictEqual(r.sent.length, 1)
    }))

  it.effect("C-WFD-14: concurrent raises of one occurrence send it once", () =>
    Effect.gen(function*() {
      const r = recorder()
      const notices = yield* makeLifecycleNotices(r.send)
      const fibers = yield* Effect.forEach([1, 2, 3], () => Effect.forkChild(notices.notify(occurrence("completed"))))
      const outcomes = yield* Effect.forEach(fibers, Fiber.join)
      assert.deepStrictEqual([...outcomes].sort(), ["duplicate", "duplicate", "sent"])
      assert.strictEqual(r.sent.length, 1)
    }))

  it.effect("C-WFD-14: awaiting_input is tracked and never wakes the main agent", () =>
    Effect.gen(function*() {
      const r = recorder()
      const notices = yield* makeLifecycleNotices(r.send)
      yield* notices.notify(occurrence("awaiting_input", "q-1"))
      yield* notices.notify(occurrence("awaiting_input", "q-7", "run-4"))
      assert.deepStrictEqual(r.sent, [{ text: "run-3 awaiting_input #q-1", wake: false }, { text: "run-4 awaiting_input #q-7", wake: false }])
      assert.deepStrictEqual((yield* notices.awaitingInput).map((o) => o.run), ["run-3", "run-4"])
      yield* notices.notify(occurrence("completed"))
      assert.deepStrictEqual((yield* notices.awaitingInput).map((o) => o.run), ["run-4"], "a later event ends the wait")
      assert.isTrue(r.sent[2]!.wake)
    }))

  it.effect("C-WFD-14: events not in notifyOn are not sent, but awaiting_input is still tracked", () =>
    Effect.gen(function*() {
      const r = recorder()
      const notices = yield* makeLifecycleNotices(r.send, [["failed"]])
      assert.strictEqual(yield* notices.notify(occurrence("completed")), "not-listed")
      assert.strictEqual(yield* notices.notify(occurrence("awaiting_input", "q", "run-9")), "not-listed")
      assert.strictEqual(yield* notices.notify(occurrence("failed")), "sent")
      assert.deepStrictEqual((yield* notices.awaitingInput).map((o) => o.run), ["run-9"])
      assert.deepStrictEqual(r.sent.map((s) => s.text), ["run-3 failed #1"])
    }))

  it("C-WFD-14 (property): over any raises and send failures, each occurrence is delivered at most once, and raised again after a failure it is delivered", () => {
    const raise = fc.record({
      event: fc.constantFrom("completed" as const, "failed" as const, "blocked" as const, "awaiting_input" as const),
      occurrence: fc.constantFrom("1", "2"),
      fails: fc.boolean()
    })
    fc.assert(fc.property(fc.array(raise, { maxLength: 40 }), (raises) => {
      const delivered: Array<string> = []
      let failNext = false
      const program = Effect.gen(function*() {
        const notices = yield* makeLifecycleNotices((text) =>
          Effect.suspend(() => {
            if (failNext) return Effect.fail(new DeliveryRefused({ reason: "down" }))
            delivered.push(text)
            return Effect.void
          })
        )
        const everDelivered = new Set<string>()
        for (const r of raises) {
          failNext = r.fails
          const o = occurrence(r.event, r.occurrence)
          const outcome = yield* Effect.result(notices.notify(o))
          const was = everDelivered.has(o.text)
          if (outcome._tag === "Success" && outcome.success === "sent") {
            if (was) return false
            everDelivered.add(o.text)
          }
          // Never delivered before and the send works: it must go out now.
          if (!was && !r.fails && !(outcome._tag === "Success" && outcome.success === "sent")) return false
        }
        return new Set(delivered).size === delivered.length
      })
      return Effect.runSync(program)
    }))
  })
})
